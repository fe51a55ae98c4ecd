#ifndef CALLROOM_CCHAFA_SHIM_H
#define CALLROOM_CCHAFA_SHIM_H
#include <chafa.h>
#endif
