#ifndef LISTSTORE_CLIBCURL_SHIM_H
#define LISTSTORE_CLIBCURL_SHIM_H
// The few libcurl functions CurlKit calls, declared here rather than taken from curl's
// headers (libcurl4-openssl-dev is not on every machine, while the library, libcurl4, is:
// the Swift toolchain's FoundationNetworking needs it), and never linked: CurlKit loads
// libcurl.so.4 with dlopen when a program first speaks HTTP (LibCurl.swift), so programs
// that never do neither load it nor pay for it at start-up. The declarations and
// constants follow libcurl 7.x's <curl/curl.h>, whose ABI is stable.
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

typedef void CURL;
struct curl_slist;
typedef int CURLcode;
typedef int CURLoption;
typedef int CURLINFO;
typedef int64_t curl_off_t;

typedef size_t (*liststore_curl_write_callback)(char *_Nonnull, size_t, size_t, void *_Nullable);
typedef int (*liststore_curl_xferinfo_callback)(void *_Nullable, curl_off_t, curl_off_t,
                                                curl_off_t, curl_off_t);

// Options (CURLOPTTYPE_LONG + n, OBJECTPOINT 10000 + n, FUNCTIONPOINT 20000 + n,
// OFF_T 30000 + n).
#define LISTSTORE_CURLOPT_WRITEDATA 10001
#define LISTSTORE_CURLOPT_URL 10002
#define LISTSTORE_CURLOPT_ERRORBUFFER 10010
#define LISTSTORE_CURLOPT_POSTFIELDS 10015
#define LISTSTORE_CURLOPT_LOW_SPEED_LIMIT 19
#define LISTSTORE_CURLOPT_LOW_SPEED_TIME 20
#define LISTSTORE_CURLOPT_HTTPHEADER 10023
#define LISTSTORE_CURLOPT_HEADERDATA 10029
#define LISTSTORE_CURLOPT_CUSTOMREQUEST 10036
#define LISTSTORE_CURLOPT_NOPROGRESS 43
#define LISTSTORE_CURLOPT_NOBODY 44
#define LISTSTORE_CURLOPT_POST 47
#define LISTSTORE_CURLOPT_XFERINFODATA 10057
#define LISTSTORE_CURLOPT_SSL_VERIFYPEER 64
#define LISTSTORE_CURLOPT_CAINFO 10065
#define LISTSTORE_CURLOPT_CAPATH 10097
#define LISTSTORE_CURLOPT_HTTPGET 80
#define LISTSTORE_CURLOPT_SSL_VERIFYHOST 81
#define LISTSTORE_CURLOPT_NOSIGNAL 99
#define LISTSTORE_CURLOPT_TCP_NODELAY 121
#define LISTSTORE_CURLOPT_TIMEOUT_MS 155
#define LISTSTORE_CURLOPT_CONNECTTIMEOUT_MS 156
#define LISTSTORE_CURLOPT_WRITEFUNCTION 20011
#define LISTSTORE_CURLOPT_HEADERFUNCTION 20079
#define LISTSTORE_CURLOPT_XFERINFOFUNCTION 20219
#define LISTSTORE_CURLOPT_POSTFIELDSIZE_LARGE 30120
#define LISTSTORE_CURLINFO_RESPONSE_CODE 0x200002
#define LISTSTORE_CURL_GLOBAL_ALL 3
#define LISTSTORE_CURL_ERROR_SIZE 256
// Result codes CurlKit tells apart.
#define LISTSTORE_CURLE_OK 0
#define LISTSTORE_CURLE_COULDNT_RESOLVE_HOST 6
#define LISTSTORE_CURLE_COULDNT_CONNECT 7
#define LISTSTORE_CURLE_PARTIAL_FILE 18
#define LISTSTORE_CURLE_WRITE_ERROR 23
#define LISTSTORE_CURLE_OPERATION_TIMEDOUT 28
#define LISTSTORE_CURLE_ABORTED_BY_CALLBACK 42
#define LISTSTORE_CURLE_GOT_NOTHING 52
#define LISTSTORE_CURLE_SEND_ERROR 55
#define LISTSTORE_CURLE_RECV_ERROR 56
#define LISTSTORE_CURLE_SSL_CONNECT_ERROR 35
#define LISTSTORE_CURLE_SSL_CERTPROBLEM 58
#define LISTSTORE_CURLE_PEER_FAILED_VERIFICATION 60
#define LISTSTORE_CURLE_SSL_CACERT_BADFILE 77

CURLcode curl_global_init(long);
CURL *_Nullable curl_easy_init(void);
void curl_easy_cleanup(CURL *_Nonnull);
void curl_easy_reset(CURL *_Nonnull);
CURLcode curl_easy_setopt(CURL *_Nonnull, CURLoption, ...);
CURLcode curl_easy_perform(CURL *_Nonnull);
CURLcode curl_easy_getinfo(CURL *_Nonnull, CURLINFO, ...);
const char *_Nonnull curl_easy_strerror(CURLcode);
struct curl_slist *_Nullable curl_slist_append(struct curl_slist *_Nullable, const char *_Nonnull);
void curl_slist_free_all(struct curl_slist *_Nullable);

// The functions CurlKit calls from libcurl.so.4, each named once.
#define LISTSTORE_LIBCURL_FUNCTIONS(X)                                                   \
  X(curl_global_init) X(curl_easy_init) X(curl_easy_cleanup) X(curl_easy_reset)          \
  X(curl_easy_setopt) X(curl_easy_perform) X(curl_easy_getinfo) X(curl_easy_strerror)    \
  X(curl_slist_append) X(curl_slist_free_all)

#define LISTSTORE_LIBCURL_FIELD(name) __typeof__(name) *_Nonnull name;
/// Pointers to the libcurl functions CurlKit calls, typed from the declarations above and
/// named as they are, filled by `liststore_libcurl_resolve`.
typedef struct LibCurlFunctions {
  LISTSTORE_LIBCURL_FUNCTIONS(LISTSTORE_LIBCURL_FIELD)
} LibCurlFunctions;
#undef LISTSTORE_LIBCURL_FIELD

/// Fills `table` with the functions of `library` (a dlopen handle).
/// Returns NULL when all were found, else the name of the first one missing.
static inline const char *_Nullable liststore_libcurl_resolve(void *_Nonnull library,
                                                              LibCurlFunctions *_Nonnull table) {
#define LISTSTORE_LIBCURL_RESOLVE(name)                        \
  {                                                            \
    void *symbol = dlsym(library, #name);                      \
    if (symbol == NULL) return #name;                          \
    table->name = (__typeof__(name) *)symbol;                  \
  }
  LISTSTORE_LIBCURL_FUNCTIONS(LISTSTORE_LIBCURL_RESOLVE)
#undef LISTSTORE_LIBCURL_RESOLVE
  return NULL;
}

// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: these
// call them from C, one per argument type.
static inline CURLcode liststore_curl_setopt_long(const LibCurlFunctions *_Nonnull table,
                                                  CURL *_Nonnull handle, CURLoption option,
                                                  long value) {
  return table->curl_easy_setopt(handle, option, value);
}
static inline CURLcode liststore_curl_setopt_pointer(const LibCurlFunctions *_Nonnull table,
                                                     CURL *_Nonnull handle, CURLoption option,
                                                     const void *_Nullable value) {
  return table->curl_easy_setopt(handle, option, value);
}
static inline CURLcode liststore_curl_setopt_off_t(const LibCurlFunctions *_Nonnull table,
                                                   CURL *_Nonnull handle, CURLoption option,
                                                   curl_off_t value) {
  return table->curl_easy_setopt(handle, option, value);
}
static inline CURLcode liststore_curl_setopt_write_function(
    const LibCurlFunctions *_Nonnull table, CURL *_Nonnull handle, CURLoption option,
    liststore_curl_write_callback _Nonnull function) {
  return table->curl_easy_setopt(handle, option, function);
}
static inline CURLcode liststore_curl_setopt_xferinfo_function(
    const LibCurlFunctions *_Nonnull table, CURL *_Nonnull handle,
    liststore_curl_xferinfo_callback _Nonnull function) {
  return table->curl_easy_setopt(handle, LISTSTORE_CURLOPT_XFERINFOFUNCTION, function);
}
static inline CURLcode liststore_curl_response_code(const LibCurlFunctions *_Nonnull table,
                                                    CURL *_Nonnull handle,
                                                    long *_Nonnull code) {
  return table->curl_easy_getinfo(handle, LISTSTORE_CURLINFO_RESPONSE_CODE, code);
}
#endif
