#ifndef CALLROOM_COPENSSL_SHIM_H
#define CALLROOM_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/crypto.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/obj_mac.h>
#include <openssl/ssl.h>
#include <openssl/srtp.h>

/* X509V3_set_ctx_nodb is a macro; a v3 context for a self-signed certificate. */
static inline void callroom_x509v3_self_ctx(X509V3_CTX *ctx, X509 *cert) {
    X509V3_set_ctx(ctx, cert, cert, NULL, NULL, 0);
    X509V3_set_ctx_nodb(ctx);
}

/* DTLS-SRTP (RFC 5764) for browsers' media: the peer's certificate is accepted during the
 * handshake and checked against the fingerprint its session description gave, after it. */
static int callroom_dtls_accept_any_certificate(int preverify_ok, X509_STORE_CTX *ctx) {
    (void)preverify_ok; (void)ctx;
    return 1;
}
static inline void callroom_dtls_require_peer_certificate(SSL_CTX *ctx) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, callroom_dtls_accept_any_certificate);
}
/* SSL_CTX_set_min_proto_version is a macro: DTLS 1.2 at least. */
static inline int callroom_dtls_require_1_2(SSL_CTX *ctx) {
    return (int)SSL_CTX_set_min_proto_version(ctx, DTLS1_2_VERSION);
}
/* DTLSv1_handle_timeout is a macro: resends the last flight when its timer ran out. */
static inline long callroom_dtls_handle_timeout(SSL *ssl) {
    return DTLSv1_handle_timeout(ssl);
}
/* A server's flight timer: 100 ms at first, doubling to 4 s (OpenSSL's own starts at 1 s, as
   long as a browser's; ours must fire first, or both sides resend at once). */
static unsigned int callroom_dtls_server_timer(SSL *ssl, unsigned int previous_us) {
    (void)ssl;
    if (previous_us == 0) return 100000;
    return previous_us >= 2000000 ? 4000000 : previous_us * 2;
}
static inline void callroom_dtls_use_server_timer(SSL *ssl) {
    DTLS_set_timer_cb(ssl, callroom_dtls_server_timer);
}
/* DTLS_set_link_mtu is a macro: records sized for `mtu`-byte datagrams. */
static inline long callroom_dtls_set_mtu(SSL *ssl, long mtu) {
    SSL_set_options(ssl, SSL_OP_NO_QUERY_MTU);
    return DTLS_set_link_mtu(ssl, mtu);
}
#endif
