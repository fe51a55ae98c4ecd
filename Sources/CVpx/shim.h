#ifndef CALLROOM_CVPX_SHIM_H
#define CALLROOM_CVPX_SHIM_H
#include <vpx/vpx_encoder.h>
#include <vpx/vpx_decoder.h>
#include <vpx/vp8cx.h>
#include <vpx/vp8dx.h>
/* vpx_codec_enc_init / _dec_init / vpx_codec_control are function-like macros: one wrapper each. */
static inline vpx_codec_err_t callroom_vp8_enc_init(vpx_codec_ctx_t *ctx, const vpx_codec_enc_cfg_t *cfg) {
    return vpx_codec_enc_init(ctx, vpx_codec_vp8_cx(), cfg, 0);
}
static inline vpx_codec_err_t callroom_vp8_enc_default(vpx_codec_enc_cfg_t *cfg) {
    return vpx_codec_enc_config_default(vpx_codec_vp8_cx(), cfg, 0);
}
static inline vpx_codec_err_t callroom_vp8_dec_init(vpx_codec_ctx_t *ctx) {
    vpx_codec_dec_cfg_t cfg = {1, 0, 0};
    return vpx_codec_dec_init(ctx, vpx_codec_vp8_dx(), &cfg, 0);
}
static inline vpx_codec_err_t callroom_vp8_set_cpuused(vpx_codec_ctx_t *ctx, int v) { return vpx_codec_control(ctx, VP8E_SET_CPUUSED, v); }
static inline vpx_codec_err_t callroom_vp8_set_static_threshold(vpx_codec_ctx_t *ctx, unsigned v) { return vpx_codec_control(ctx, VP8E_SET_STATIC_THRESHOLD, v); }
static inline vpx_codec_err_t callroom_vp8_set_max_intra(vpx_codec_ctx_t *ctx, unsigned v) { return vpx_codec_control(ctx, VP8E_SET_MAX_INTRA_BITRATE_PCT, v); }
static inline vpx_codec_err_t callroom_vp8_set_screen(vpx_codec_ctx_t *ctx, unsigned v) { return vpx_codec_control(ctx, VP8E_SET_SCREEN_CONTENT_MODE, v); }
/* Whether the last decoded frame used a corrupt reference (a lost packet): ask for a keyframe. */
static inline int callroom_vp8_frame_corrupted(vpx_codec_ctx_t *ctx) {
    int corrupted = 0;
    if (vpx_codec_control(ctx, VP8D_GET_FRAME_CORRUPTED, &corrupted) != VPX_CODEC_OK) return 0;
    return corrupted;
}
#endif
