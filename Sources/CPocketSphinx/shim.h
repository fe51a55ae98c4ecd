#ifndef CALLROOM_CPOCKETSPHINX_SHIM_H
#define CALLROOM_CPOCKETSPHINX_SHIM_H
#include <pocketsphinx.h>
#include <sphinxbase/err.h>
#endif
