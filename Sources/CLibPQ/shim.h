#ifndef LISTSTORE_CLIBPQ_SHIM_H
#define LISTSTORE_CLIBPQ_SHIM_H
// libpq's declarations, and no link to it: PostgreSQLKit loads libpq.so.5 with dlopen
// when a PostgreSQL location is first used (LibPQ.swift), so programs that use SQLite
// alone neither load libpq nor need it installed.
//
// Debian installs the headers in /usr/include/postgresql, Fedora in /usr/include.
#if __has_include(<libpq-fe.h>)
#include <libpq-fe.h>
#else
#include <postgresql/libpq-fe.h>
#endif
#include <dlfcn.h>

// The libpq functions PostgreSQLKit calls, each named once.
#define LISTSTORE_LIBPQ_FUNCTIONS(X)                                                   \
  X(PQbackendPID) X(PQclear) X(PQcmdStatus) X(PQcmdTuples) X(PQconnectdbParams)        \
  X(PQconninfo) X(PQconninfoFree) X(PQconninfoParse) X(PQconsumeInput)                 \
  X(PQerrorMessage) X(PQexec) X(PQexecParams) X(PQexecPrepared) X(PQfinish) X(PQfname) \
  X(PQfnumber) X(PQfreemem) X(PQgetCopyData) X(PQgetResult) X(PQgetisnull)             \
  X(PQgetlength) X(PQgetvalue) X(PQnfields) X(PQnotifies) X(PQntuples) X(PQprepare)    \
  X(PQputCopyData) X(PQputCopyEnd) X(PQresStatus) X(PQreset) X(PQresultErrorField)     \
  X(PQresultErrorMessage) X(PQresultStatus) X(PQserverVersion) X(PQsetNoticeReceiver)  \
  X(PQsocket) X(PQstatus) X(PQtransactionStatus)

// The functions of libpq's pipeline mode (libpq 14 and later), which PostgreSQLKit uses
// when the library loaded has them: an older libpq.so.5 loads all the same, and each
// statement then waits for the one before it. Building needs libpq-fe.h of version 14 or
// later (Debian 12 has 15), which declares them.
#ifndef LIBPQ_HAS_PIPELINING
#error "PostgreSQLKit needs libpq-fe.h of libpq 14 or later (libpq-dev)"
#endif
#define LISTSTORE_LIBPQ_PIPELINE_FUNCTIONS(X)                                          \
  X(PQenterPipelineMode) X(PQexitPipelineMode) X(PQpipelineSync) X(PQsendPrepare)      \
  X(PQsendQueryParams) X(PQsendQueryPrepared)

#define LISTSTORE_LIBPQ_FIELD(name) __typeof__(name) *_Nonnull name;
#define LISTSTORE_LIBPQ_OPTIONAL_FIELD(name) __typeof__(name) *_Nullable name;
/// Pointers to the libpq functions PostgreSQLKit calls, typed from their declarations
/// and named as they are, filled by `liststore_libpq_resolve` (the pipeline functions are
/// NULL when the library has not got them).
typedef struct LibPQFunctions {
  LISTSTORE_LIBPQ_FUNCTIONS(LISTSTORE_LIBPQ_FIELD)
  LISTSTORE_LIBPQ_PIPELINE_FUNCTIONS(LISTSTORE_LIBPQ_OPTIONAL_FIELD)
} LibPQFunctions;
#undef LISTSTORE_LIBPQ_FIELD
#undef LISTSTORE_LIBPQ_OPTIONAL_FIELD

/// Fills `table` with the functions of `library` (a dlopen handle).
/// Returns NULL when all were found, else the name of the first one missing (`table`
/// is then partly filled).
static inline const char *_Nullable liststore_libpq_resolve(
    void *_Nonnull library, LibPQFunctions *_Nonnull table) {
#define LISTSTORE_LIBPQ_RESOLVE(name)                           \
  {                                                             \
    void *symbol = dlsym(library, #name);                       \
    if (symbol == NULL) return #name;                           \
    table->name = (__typeof__(name) *)symbol;                   \
  }
  LISTSTORE_LIBPQ_FUNCTIONS(LISTSTORE_LIBPQ_RESOLVE)
#undef LISTSTORE_LIBPQ_RESOLVE
#define LISTSTORE_LIBPQ_RESOLVE_OPTIONAL(name) \
  table->name = (__typeof__(name) *)dlsym(library, #name);
  LISTSTORE_LIBPQ_PIPELINE_FUNCTIONS(LISTSTORE_LIBPQ_RESOLVE_OPTIONAL)
#undef LISTSTORE_LIBPQ_RESOLVE_OPTIONAL
  return NULL;
}
#endif
