#ifndef CALLROOM_COGG_SHIM_H
#define CALLROOM_COGG_SHIM_H
#include <ogg/ogg.h>
#endif
