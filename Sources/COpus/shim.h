#ifndef CALLROOM_COPUS_SHIM_H
#define CALLROOM_COPUS_SHIM_H
#include <opus/opus.h>

/* opus_encoder_ctl is variadic and its requests are function-like macros:
   one non-variadic wrapper per use. */
static inline int callroom_opus_set_bitrate(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_BITRATE(v)); }
static inline int callroom_opus_set_complexity(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_COMPLEXITY(v)); }
static inline int callroom_opus_set_inband_fec(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_INBAND_FEC(v)); }
static inline int callroom_opus_set_packet_loss_perc(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_PACKET_LOSS_PERC(v)); }
static inline int callroom_opus_set_dtx(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_DTX(v)); }
static inline int callroom_opus_encoder_reset(OpusEncoder *e) { return opus_encoder_ctl(e, OPUS_RESET_STATE); }
static inline int callroom_opus_decoder_reset(OpusDecoder *d) { return opus_decoder_ctl(d, OPUS_RESET_STATE); }
static inline int callroom_opus_get_lookahead(OpusEncoder *e, opus_int32 *v) { return opus_encoder_ctl(e, OPUS_GET_LOOKAHEAD(v)); }
#endif
