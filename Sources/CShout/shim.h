#ifndef CALLROOM_CSHOUT_SHIM_H
#define CALLROOM_CSHOUT_SHIM_H
#include <shout/shout.h>
#endif
