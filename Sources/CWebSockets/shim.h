#ifndef CALLROOM_CWEBSOCKETS_SHIM_H
#define CALLROOM_CWEBSOCKETS_SHIM_H
#include <libwebsockets.h>

/// LWS_PRE is a macro; Swift cannot import it.
static const int callroom_lws_pre = LWS_PRE;

/// Silences libwebsockets' own logging except errors, routed to stderr.
static inline void callroom_lws_quiet(int errorsOnly) {
    lws_set_log_level(errorsOnly ? LLL_ERR : (LLL_ERR | LLL_WARN), NULL);
}


static const unsigned long long callroom_lws_opt_validate_utf8 = LWS_SERVER_OPTION_VALIDATE_UTF8;
static const unsigned long long callroom_lws_opt_disable_ipv6 = LWS_SERVER_OPTION_DISABLE_IPV6;
static const unsigned long long callroom_lws_opt_ssl_global_init = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
static const int callroom_lccscf_use_ssl = LCCSCF_USE_SSL;
static const int callroom_lccscf_insecure = LCCSCF_ALLOW_SELFSIGNED | LCCSCF_SKIP_SERVER_CERT_HOSTNAME_CHECK | LCCSCF_ALLOW_EXPIRED | LCCSCF_ALLOW_INSECURE;
#endif
