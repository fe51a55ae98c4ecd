#ifndef CALLROOM_CPOSTGRES_SHIM_H
#define CALLROOM_CPOSTGRES_SHIM_H
#include <libpq-fe.h>
#endif
