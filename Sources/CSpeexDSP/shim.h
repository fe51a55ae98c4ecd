#ifndef CALLROOM_CSPEEXDSP_SHIM_H
#define CALLROOM_CSPEEXDSP_SHIM_H
#include <speex/speex_resampler.h>
#endif
