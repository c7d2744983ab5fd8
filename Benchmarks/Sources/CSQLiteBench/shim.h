#ifndef LISTSTORE_BENCH_CSQLITE_SHIM_H
#define LISTSTORE_BENCH_CSQLITE_SHIM_H
#include <sqlite3.h>

// SQLITE_STATIC and SQLITE_TRANSIENT are macros casting 0 and -1 to a destructor
// pointer, which Swift cannot import.
static inline sqlite3_destructor_type bench_sqlite_static(void) {
  return (sqlite3_destructor_type)0;
}
static inline sqlite3_destructor_type bench_sqlite_transient(void) {
  return (sqlite3_destructor_type)-1;
}
#endif
