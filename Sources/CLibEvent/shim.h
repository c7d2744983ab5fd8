#ifndef LISTSTORE_CLIBEVENT_SHIM_H
#define LISTSTORE_CLIBEVENT_SHIM_H
// The few libevent functions ListStoreServer calls, declared here rather than taken
// from libevent's headers (libevent-dev is not on every machine, while the library,
// libevent-2.1-7, is), and never linked: the server loads libevent-2.1.so.7 with dlopen
// when `serve` starts (LibEvent.swift), so programs that do not serve neither load it
// nor need it installed. The declarations follow libevent 2.1's <event2/*.h>.
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

struct event_base;
struct event;
struct evbuffer;
struct bufferevent;
struct ssl_st;
struct ssl_ctx_st;

typedef int evutil_socket_t;
typedef void (*liststore_event_callback)(evutil_socket_t, short, void *_Nullable);
typedef void (*liststore_bufferevent_data_cb)(struct bufferevent *_Nonnull, void *_Nullable);
typedef void (*liststore_bufferevent_event_cb)(struct bufferevent *_Nonnull, short,
                                               void *_Nullable);

// bufferevent's event flags, and its option to close the socket when freed.
#define LISTSTORE_BEV_EVENT_READING 0x01
#define LISTSTORE_BEV_EVENT_WRITING 0x02
#define LISTSTORE_BEV_EVENT_EOF 0x10
#define LISTSTORE_BEV_EVENT_ERROR 0x20
#define LISTSTORE_BEV_EVENT_TIMEOUT 0x40

// event_new's flags.
#define LISTSTORE_EV_TIMEOUT 0x01
#define LISTSTORE_EV_READ 0x02
#define LISTSTORE_EV_WRITE 0x04
#define LISTSTORE_EV_PERSIST 0x10

struct event_base *_Nullable event_base_new(void);
void event_base_free(struct event_base *_Nonnull);
int event_base_dispatch(struct event_base *_Nonnull);
int event_base_loopbreak(struct event_base *_Nonnull);
struct event *_Nullable event_new(struct event_base *_Nonnull, evutil_socket_t, short,
                                  liststore_event_callback _Nonnull, void *_Nullable);
int event_add(struct event *_Nonnull, const struct timeval *_Nullable);
int event_del(struct event *_Nonnull);
void event_free(struct event *_Nonnull);

struct bufferevent *_Nullable bufferevent_socket_new(struct event_base *_Nonnull,
                                                     evutil_socket_t, int);
void bufferevent_setcb(struct bufferevent *_Nonnull, liststore_bufferevent_data_cb _Nullable,
                       liststore_bufferevent_data_cb _Nullable,
                       liststore_bufferevent_event_cb _Nullable, void *_Nullable);
void bufferevent_free(struct bufferevent *_Nonnull);
void bufferevent_setwatermark(struct bufferevent *_Nonnull, short, size_t, size_t);
struct evbuffer *_Nullable bufferevent_get_input(struct bufferevent *_Nonnull);
struct evbuffer *_Nullable bufferevent_get_output(struct bufferevent *_Nonnull);
int bufferevent_write(struct bufferevent *_Nonnull, const void *_Nonnull, size_t);
int bufferevent_enable(struct bufferevent *_Nonnull, short);
size_t evbuffer_get_length(const struct evbuffer *_Nonnull);
int evbuffer_remove(struct evbuffer *_Nonnull, void *_Nonnull, size_t);
int evbuffer_drain(struct evbuffer *_Nonnull, size_t);

// The functions ListStoreServer calls from libevent-2.1.so.7, each named once.
#define LISTSTORE_LIBEVENT_FUNCTIONS(X) \
  X(event_base_new) X(event_base_free) X(event_base_dispatch) X(event_base_loopbreak) \
  X(event_new) X(event_add) X(event_del) X(event_free) X(bufferevent_socket_new) \
  X(bufferevent_setcb) X(bufferevent_free) X(bufferevent_setwatermark) \
  X(bufferevent_get_input) X(bufferevent_get_output) X(bufferevent_write) \
  X(bufferevent_enable) X(evbuffer_get_length) X(evbuffer_remove) X(evbuffer_drain)

#define LISTSTORE_LIBEVENT_FIELD(name) __typeof__(name) *_Nonnull name;
/// Pointers to the libevent functions ListStoreServer calls, typed from the
/// declarations above and named as they are, filled by `liststore_libevent_resolve`.
typedef struct LibEventFunctions {
  LISTSTORE_LIBEVENT_FUNCTIONS(LISTSTORE_LIBEVENT_FIELD)
} LibEventFunctions;
#undef LISTSTORE_LIBEVENT_FIELD

/// Fills `table` with the functions of `library` (a dlopen handle).
/// Returns NULL when all were found, else the name of the first one missing.
static inline const char *_Nullable liststore_libevent_resolve(
    void *_Nonnull library, LibEventFunctions *_Nonnull table) {
#define LISTSTORE_LIBEVENT_RESOLVE(name)                        \
  {                                                             \
    void *symbol = dlsym(library, #name);                       \
    if (symbol == NULL) return #name;                           \
    table->name = (__typeof__(name) *)symbol;                   \
  }
  LISTSTORE_LIBEVENT_FUNCTIONS(LISTSTORE_LIBEVENT_RESOLVE)
#undef LISTSTORE_LIBEVENT_RESOLVE
  return NULL;
}
// TLS: libevent's OpenSSL part (libevent_openssl-2.1.so.7, Debian's
// libevent-openssl-2.1-7) and the few OpenSSL calls that make a server context
// (libssl.so.3), both loaded only when a certificate is given.
struct ssl_method_st;
#define LISTSTORE_BUFFEREVENT_SSL_ACCEPTING 2
#define LISTSTORE_BEV_OPT_CLOSE_ON_FREE 0x01
#define LISTSTORE_SSL_FILETYPE_PEM 1

struct bufferevent *_Nullable bufferevent_openssl_socket_new(struct event_base *_Nonnull,
                                                              evutil_socket_t,
                                                              struct ssl_st *_Nonnull, int, int);
const struct ssl_method_st *_Nullable TLS_server_method(void);
struct ssl_ctx_st *_Nullable SSL_CTX_new(const struct ssl_method_st *_Nonnull);
void SSL_CTX_free(struct ssl_ctx_st *_Nonnull);
int SSL_CTX_use_certificate_chain_file(struct ssl_ctx_st *_Nonnull, const char *_Nonnull);
int SSL_CTX_use_PrivateKey_file(struct ssl_ctx_st *_Nonnull, const char *_Nonnull, int);
int SSL_CTX_check_private_key(const struct ssl_ctx_st *_Nonnull);
struct ssl_st *_Nullable SSL_new(struct ssl_ctx_st *_Nonnull);
unsigned long ERR_get_error(void);
void ERR_error_string_n(unsigned long, char *_Nonnull, size_t);

#define LISTSTORE_LIBEVENT_TLS_FUNCTIONS(X) X(bufferevent_openssl_socket_new)
#define LISTSTORE_OPENSSL_FUNCTIONS(X)                                                      \
  X(TLS_server_method) X(SSL_CTX_new) X(SSL_CTX_free) X(SSL_CTX_use_certificate_chain_file) \
  X(SSL_CTX_use_PrivateKey_file) X(SSL_CTX_check_private_key) X(SSL_new) X(ERR_get_error)  \
  X(ERR_error_string_n)

#define LISTSTORE_TLS_FIELD(name) __typeof__(name) *_Nonnull name;
/// The TLS functions the server calls, from libevent's OpenSSL part and from OpenSSL.
typedef struct TLSFunctions {
  LISTSTORE_LIBEVENT_TLS_FUNCTIONS(LISTSTORE_TLS_FIELD)
  LISTSTORE_OPENSSL_FUNCTIONS(LISTSTORE_TLS_FIELD)
} TLSFunctions;
#undef LISTSTORE_TLS_FIELD

/// Fills `table` from `libevent_openssl` and `ssl` (dlopen handles). Returns NULL when
/// all were found, else the name of the first one missing.
static inline const char *_Nullable liststore_tls_resolve(void *_Nonnull libevent_openssl,
                                                          void *_Nonnull ssl,
                                                          TLSFunctions *_Nonnull table) {
#define LISTSTORE_TLS_RESOLVE_FROM(library, name)             \
  {                                                           \
    void *symbol = dlsym(library, #name);                     \
    if (symbol == NULL) return #name;                         \
    table->name = (__typeof__(name) *)symbol;                 \
  }
#define LISTSTORE_TLS_FROM_LIBEVENT(name) LISTSTORE_TLS_RESOLVE_FROM(libevent_openssl, name)
#define LISTSTORE_TLS_FROM_SSL(name) LISTSTORE_TLS_RESOLVE_FROM(ssl, name)
  LISTSTORE_LIBEVENT_TLS_FUNCTIONS(LISTSTORE_TLS_FROM_LIBEVENT)
  LISTSTORE_OPENSSL_FUNCTIONS(LISTSTORE_TLS_FROM_SSL)
#undef LISTSTORE_TLS_FROM_SSL
#undef LISTSTORE_TLS_FROM_LIBEVENT
#undef LISTSTORE_TLS_RESOLVE_FROM
  return NULL;
}

// Sets the calling thread's nice value (on Linux a thread's is its own), so that it runs
// below the event loop: a snapshot's thread. 0, or -1 when refused.
static inline int liststore_set_thread_nice(int nice) {
#ifdef __linux__
  return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice);
#else
  return 0;
#endif
}

#endif
