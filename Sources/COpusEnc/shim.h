#ifndef CALLROOM_COPUSENC_SHIM_H
#define CALLROOM_COPUSENC_SHIM_H
#include <opusenc.h>
/* ope_encoder_ctl is variadic and its requests are function-like macros: one wrapper per use. */
static inline int callroom_ope_set_muxing_delay(OggOpusEnc *e, opus_int32 samples) { return ope_encoder_ctl(e, OPE_SET_MUXING_DELAY(samples)); }
static inline int callroom_ope_set_decision_delay(OggOpusEnc *e, opus_int32 samples) { return ope_encoder_ctl(e, OPE_SET_DECISION_DELAY(samples)); }
static inline int callroom_ope_set_bitrate(OggOpusEnc *e, opus_int32 v) { return ope_encoder_ctl(e, OPUS_SET_BITRATE(v)); }
static inline int callroom_ope_set_signal_voice(OggOpusEnc *e) { return ope_encoder_ctl(e, OPUS_SET_SIGNAL(OPUS_SIGNAL_VOICE)); }
#endif
