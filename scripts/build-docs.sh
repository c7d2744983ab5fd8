#!/usr/bin/env bash
# Builds the DocC documentation of ListStore and ListStoreTesting into
# .build/docs/<Module>.doccarchive with the toolchain's own tools, no plugin or outside
# package: `swift package dump-symbol-graph` (built into SwiftPM) extracts the symbol
# graphs of the debug build, and `docc convert` turns each module's graphs and its .docc
# catalog into an archive, with warnings as errors. Fails on any warning.
set -euo pipefail
cd "$(dirname "$0")/.."

log=$(mktemp)
trap 'rm -f "$log"' EXIT
swift package dump-symbol-graph --skip-synthesized-members --emit-extension-block-symbols \
  >"$log" 2>&1 || { cat "$log"; exit 1; }
graphs=$(sed -n 's/^Files written to //p' "$log" | tail -1)
if [ ! -d "$graphs" ]; then
  cat "$log"
  echo "no symbol graphs were written" >&2
  exit 1
fi

for module in ListStore ListStoreTesting; do
  # A module's own graph and the graphs of its extensions to other modules' types.
  input=.build/docs/symbol-graphs/$module
  rm -rf "$input" ".build/docs/$module.doccarchive"
  mkdir -p "$input"
  cp "$graphs/$module.symbols.json" "$input/"
  for extension in "$graphs/$module@"*.symbols.json; do
    [ -e "$extension" ] && cp "$extension" "$input/"
  done
  docc convert "Sources/$module/$module.docc" \
    --additional-symbol-graph-dir "$input" \
    --fallback-display-name "$module" \
    --fallback-bundle-identifier "org.liststore.$module" \
    --output-path ".build/docs/$module.doccarchive" \
    --warnings-as-errors
  echo "documentation: .build/docs/$module.doccarchive"
done
