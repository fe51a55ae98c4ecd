#ifndef CALLROOM_CSPEEXDSP_SHIM_H
#define CALLROOM_CSPEEXDSP_SHIM_H
#include <speex/speex_resampler.h>
#include <speex/speex_preprocess.h>
#include <speex/speex_echo.h>

/* speex_*_ctl take void*; typed wrappers keep Swift free of pointer juggling. */
static inline int callroom_preprocess_set_int(SpeexPreprocessState *st, int request, int value) {
    return speex_preprocess_ctl(st, request, &value);
}
static inline int callroom_preprocess_set_echo(SpeexPreprocessState *st, SpeexEchoState *echo) {
    return speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_ECHO_STATE, echo);
}
static inline int callroom_echo_set_rate(SpeexEchoState *st, int rate) {
    return speex_echo_ctl(st, SPEEX_ECHO_SET_SAMPLING_RATE, &rate);
}
static const int callroom_pp_denoise = SPEEX_PREPROCESS_SET_DENOISE;
static const int callroom_pp_agc = SPEEX_PREPROCESS_SET_AGC;
static const int callroom_pp_vad = SPEEX_PREPROCESS_SET_VAD;
static const int callroom_pp_agc_level = SPEEX_PREPROCESS_SET_AGC_LEVEL;
static const int callroom_pp_noise_suppress = SPEEX_PREPROCESS_SET_NOISE_SUPPRESS;
#endif
