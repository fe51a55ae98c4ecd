#ifndef CALLROOM_CSNDFILE_SHIM_H
#define CALLROOM_CSNDFILE_SHIM_H
#include <sndfile.h>
static const int callroom_sf_format_wav_pcm16 = SF_FORMAT_WAV | SF_FORMAT_PCM_16;
#endif
