#ifndef CALLROOM_CZLIB_SHIM_H
#define CALLROOM_CZLIB_SHIM_H
/* zlib: the kitty graphics protocol's compressed payloads (o=z). */
#include <zlib.h>
#endif
