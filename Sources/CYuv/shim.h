#ifndef CALLROOM_CYUV_SHIM_H
#define CALLROOM_CYUV_SHIM_H
/* libyuv (Debian libyuv-dev, no pkg-config file): I420 scaling and colour conversion. */
#include <libyuv/convert_argb.h>
#include <libyuv/convert_from_argb.h>
#include <libyuv/scale.h>
#include <libyuv/planar_functions.h>
#endif
