#ifndef CALLROOM_CSQLITE_SHIM_H
#define CALLROOM_CSQLITE_SHIM_H
#include <sqlite3.h>
/* SQLITE_TRANSIENT is a cast macro; re-export it as a value. */
static inline sqlite3_destructor_type callroom_sqlite_transient(void) { return SQLITE_TRANSIENT; }
#endif
