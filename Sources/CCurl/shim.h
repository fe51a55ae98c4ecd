#ifndef CALLROOM_CCURL_SHIM_H
#define CALLROOM_CCURL_SHIM_H
#include <curl/curl.h>
#include <stddef.h>
/* curl_easy_setopt and curl_easy_getinfo are variadic: typed wrappers Swift can call. */
static inline CURLcode callroom_curl_set_long(CURL *c, CURLoption o, long v) { return curl_easy_setopt(c, o, v); }
static inline CURLcode callroom_curl_set_string(CURL *c, CURLoption o, const char *v) { return curl_easy_setopt(c, o, v); }
static inline CURLcode callroom_curl_set_pointer(CURL *c, CURLoption o, void *v) { return curl_easy_setopt(c, o, v); }
static inline CURLcode callroom_curl_set_slist(CURL *c, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(c, o, v); }
typedef size_t (*callroom_curl_write_fn)(char *, size_t, size_t, void *);
static inline CURLcode callroom_curl_set_write(CURL *c, callroom_curl_write_fn f) { return curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, f); }
static inline CURLcode callroom_curl_set_header(CURL *c, callroom_curl_write_fn f) { return curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, f); }
/* Called once connected, before the request is sent (libcurl 7.80+): CURL_PREREQFUNC_ABORT ends it. */
typedef int (*callroom_curl_prereq_fn)(void *, char *, char *, int, int);
static inline CURLcode callroom_curl_set_prereq(CURL *c, callroom_curl_prereq_fn f) { return curl_easy_setopt(c, CURLOPT_PREREQFUNCTION, f); }
static inline long callroom_curl_response_code(CURL *c) { long code = 0; curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code); return code; }
static inline long callroom_curl_http_version(CURL *c) { long v = 0; curl_easy_getinfo(c, CURLINFO_HTTP_VERSION, &v); return v; }
#endif
