#ifndef CALLROOM_CHIREDIS_SHIM_H
#define CALLROOM_CHIREDIS_SHIM_H
/* No pkgConfig: hiredis.pc adds -D_FILE_OFFSET_BITS=64, which SwiftPM prohibits. */
#include <hiredis/hiredis.h>
/* The context's error, as values Swift can read (errstr is a fixed array). */
static inline int callroom_redis_err(const redisContext *c) { return c ? c->err : -1; }
static inline const char *callroom_redis_errstr(const redisContext *c) { return c ? c->errstr : "out of memory"; }
#endif
