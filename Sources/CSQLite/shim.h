#ifndef LISTSTORE_CSQLITE_SHIM_H
#define LISTSTORE_CSQLITE_SHIM_H
#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro that casts -1 to a destructor pointer, which Swift
// cannot import; this constant carries it across.
static const sqlite3_destructor_type csqlite_transient = (sqlite3_destructor_type)-1;
#endif
