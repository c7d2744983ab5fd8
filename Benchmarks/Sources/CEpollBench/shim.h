#ifndef LISTSTORE_BENCH_CEPOLL_SHIM_H
#define LISTSTORE_BENCH_CEPOLL_SHIM_H
// Linux's epoll, which Glibc's Swift module leaves out: B17 reads its 1,000 streams on
// one thread with it.
#include <sys/epoll.h>
#endif
