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

// Reads up to `count` bytes from the start of the file at `path` through SQLite's
// default VFS, as a main database file. Unlike open() and close() of one's own, the
// VFS shares file descriptors with connections this process has open on the same
// file and defers closing while they hold locks: closing a descriptor would drop
// every POSIX lock the process holds on the file. Sets `*read` to the bytes read.
static inline int csqlite_read_file_start(const char *path, unsigned char *buffer, int count, int *read) {
  sqlite3_vfs *vfs = sqlite3_vfs_find(0);
  if (vfs == 0) return SQLITE_ERROR;
  int size = vfs->mxPathname + 1;
  // Database file names are double-zero terminated (no URI parameters).
  char *name = (char *)sqlite3_malloc(size + 2);
  sqlite3_file *file = (sqlite3_file *)sqlite3_malloc(vfs->szOsFile);
  if (name == 0 || file == 0) {
    sqlite3_free(name);
    sqlite3_free(file);
    return SQLITE_NOMEM;
  }
  for (int i = 0; i < size + 2; i++) name[i] = 0;
  for (int i = 0; i < vfs->szOsFile; i++) ((char *)file)[i] = 0;
  *read = 0;
  int rc = vfs->xFullPathname(vfs, path, size, name);
  if (rc == SQLITE_OK) {
    int flags = 0;
    rc = vfs->xOpen(vfs, name, file, SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_READONLY, &flags);
    if (rc == SQLITE_OK) {
      sqlite3_int64 length = 0;
      rc = file->pMethods->xFileSize(file, &length);
      int wanted = length < count ? (int)length : count;
      if (rc == SQLITE_OK && wanted > 0) rc = file->pMethods->xRead(file, buffer, wanted, 0);
      if (rc == SQLITE_OK) *read = wanted;
    }
    if (file->pMethods != 0) file->pMethods->xClose(file);
  }
  sqlite3_free(file);
  sqlite3_free(name);
  return rc;
}
#endif
