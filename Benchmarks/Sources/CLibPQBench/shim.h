#ifndef LISTSTORE_BENCH_CLIBPQ_SHIM_H
#define LISTSTORE_BENCH_CLIBPQ_SHIM_H
// Debian installs libpq's headers in /usr/include/postgresql; pkg-config's `libpq.pc`
// adds that folder to the include path, so the plain name resolves.
#include <libpq-fe.h>
#endif
