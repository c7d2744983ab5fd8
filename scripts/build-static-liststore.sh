#!/bin/sh
# Builds the self-contained `liststore`: the Swift runtime (--static-swift-stdlib) and
# SQLite (Debian's libsqlite3-dev archive, libsqlite3.a) linked in, the schema embedded.
# The binary then needs what every glibc system has — libc, libm, libstdc++ and
# libgcc_s (check with `ldd .build/release/liststore`). libpq is not linked: it is loaded
# (dlopen) when a PostgreSQL location is first used, so only that needs libpq5.
#
# How: the CSQLite module links `-lsqlite3`, found through pkg-config. This script gives
# pkg-config a sqlite3.pc whose library folder holds only the archive, so the linker
# finds libsqlite3.a before the system's libsqlite3.so. Arguments are passed on to
# `swift build`.
set -eu
cd "$(dirname "$0")/.."

libdir=$(pkg-config --variable=libdir sqlite3)
if [ ! -f "$libdir/libsqlite3.a" ]; then
  echo "error: $libdir/libsqlite3.a is missing; install libsqlite3-dev" >&2
  exit 1
fi
static=$PWD/.build/sqlite-static
mkdir -p "$static"
ln -sf "$libdir/libsqlite3.a" "$static/libsqlite3.a"
cat > "$static/sqlite3.pc" <<PC
libdir=$static
Name: SQLite
Description: SQLite from its static archive
Version: $(pkg-config --modversion sqlite3)
Libs: -L\${libdir} -lsqlite3 -lm
Cflags: $(pkg-config --cflags sqlite3)
PC

PKG_CONFIG_PATH=$static swift build -c release --static-swift-stdlib --product liststore "$@"
if ldd .build/release/liststore | grep -q libsqlite3; then
  echo "error: .build/release/liststore still loads libsqlite3.so" >&2
  exit 1
fi
if ldd .build/release/liststore | grep -q libpq; then
  echo "error: .build/release/liststore links libpq; it should load it only for PostgreSQL" >&2
  exit 1
fi
