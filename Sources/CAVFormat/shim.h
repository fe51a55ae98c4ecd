#ifndef CALLROOM_CAVFORMAT_SHIM_H
#define CALLROOM_CAVFORMAT_SHIM_H
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/mathematics.h>
/* Function-like macros Swift does not import: one wrapper each. */
static inline int callroom_averror_eof(void) { return AVERROR_EOF; }
static inline int callroom_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline AVRational callroom_rational(int num, int den) { AVRational r = { num, den }; return r; }
static inline int callroom_av_strerror(int e, char *buf, size_t size) { return av_strerror(e, buf, size); }
#endif
