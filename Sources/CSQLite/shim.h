#ifndef LISTSTORE_CSQLITE_SHIM_H
#define LISTSTORE_CSQLITE_SHIM_H
#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro that casts -1 to a destructor pointer, which Swift
// cannot import; this function carries it across.
static inline sqlite3_destructor_type csqlite_transient(void) {
  return (sqlite3_destructor_type)-1;
}

// SQLITE_STATIC: SQLite uses the bound memory until the statement is reset or
// rebound, without copying it.
static inline sqlite3_destructor_type csqlite_static(void) {
  return (sqlite3_destructor_type)0;
}
#endif
