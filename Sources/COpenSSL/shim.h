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

/* X509V3_set_ctx_nodb is a macro; a v3 context for a self-signed certificate. */
static inline void callroom_x509v3_self_ctx(X509V3_CTX *ctx, X509 *cert) {
    X509V3_set_ctx(ctx, cert, cert, NULL, NULL, 0);
    X509V3_set_ctx_nodb(ctx);
}
#endif
