#ifndef CALLROOM_CWEBSOCKETS_SHIM_H
#define CALLROOM_CWEBSOCKETS_SHIM_H
#include <libwebsockets.h>
#include <ev.h>

/// LWS_PRE is a macro; Swift cannot import it.
static const int callroom_lws_pre = LWS_PRE;

#include <stdio.h>
#include <time.h>

/// libwebsockets' lines go to stderr at most 10 a second (a storm of the same error, such as
/// failing accepts, would otherwise write thousands); the next line after a quiet second says
/// how many were dropped. Any thread.
static inline void callroom_lws_emit(int level, const char *line) {
    static long second;
    static int lines;
    static long dropped;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long s = __atomic_load_n(&second, __ATOMIC_RELAXED);
    if (now.tv_sec != s && __atomic_compare_exchange_n(&second, &s, now.tv_sec, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        __atomic_store_n(&lines, 0, __ATOMIC_RELAXED);
        long d = __atomic_exchange_n(&dropped, 0, __ATOMIC_RELAXED);
        if (d > 0) fprintf(stderr, "libwebsockets: %ld more lines like these dropped\n", d);
    }
    if (__atomic_add_fetch(&lines, 1, __ATOMIC_RELAXED) > 10) {
        __atomic_add_fetch(&dropped, 1, __ATOMIC_RELAXED);
        return;
    }
    (void)level;
    fputs(line, stderr);
}

/// Silences libwebsockets' own logging except errors, routed to stderr (rate-limited).
static inline void callroom_lws_quiet(int errorsOnly) {
    lws_set_log_level(errorsOnly ? LLL_ERR : (LLL_ERR | LLL_WARN), callroom_lws_emit);
}

/// The descriptor a just-accepted connection got (LWS_CALLBACK_FILTER_NETWORK_CONNECTION).
static inline int callroom_lws_filter_fd(const void *args) {
    return (int)((const struct lws_filter_network_conn_args *)args)->accept_fd;
}

#include <arpa/inet.h>
/// Its peer's address as text (IPv4 or IPv6) into `out`; 0, or -1 for another family.
static inline int callroom_lws_filter_address(const void *args, char *out, int len) {
    const struct lws_filter_network_conn_args *a = (const struct lws_filter_network_conn_args *)args;
    if (a->cli_addr.ss_family == AF_INET)
        return inet_ntop(AF_INET, &((const struct sockaddr_in *)&a->cli_addr)->sin_addr, out, (socklen_t)len) ? 0 : -1;
    if (a->cli_addr.ss_family == AF_INET6)
        return inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)&a->cli_addr)->sin6_addr, out, (socklen_t)len) ? 0 : -1;
    return -1;
}


/// The server's event loop (libev on epoll), handed to libwebsockets as a foreign loop: waiting
/// costs the same with 10 connections or 10,000 (poll(2) walks every descriptor each time).
static const unsigned long long callroom_lws_opt_libev = LWS_SERVER_OPTION_LIBEV;
static inline void *callroom_ev_loop_new(void) { return ev_loop_new(EVBACKEND_EPOLL | EVFLAG_NOENV); }
/// One pass: waits for at least one event (or a wake) and handles what is ready.
static inline void callroom_ev_run_once(void *loop) { ev_run((struct ev_loop *)loop, EVRUN_ONCE); }
/// Lets watchers closed by a context's destruction finish, without waiting.
static inline void callroom_ev_run_nowait(void *loop) { ev_run((struct ev_loop *)loop, EVRUN_NOWAIT); }
static inline void callroom_ev_loop_destroy(void *loop) { ev_loop_destroy((struct ev_loop *)loop); }

static const unsigned long long callroom_lws_opt_validate_utf8 = LWS_SERVER_OPTION_VALIDATE_UTF8;
static const unsigned long long callroom_lws_opt_disable_ipv6 = LWS_SERVER_OPTION_DISABLE_IPV6;
static const unsigned long long callroom_lws_opt_ssl_global_init = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
static const int callroom_lccscf_use_ssl = LCCSCF_USE_SSL;
static const int callroom_lccscf_insecure = LCCSCF_ALLOW_SELFSIGNED | LCCSCF_SKIP_SERVER_CERT_HOSTNAME_CHECK | LCCSCF_ALLOW_EXPIRED | LCCSCF_ALLOW_INSECURE;
#endif
