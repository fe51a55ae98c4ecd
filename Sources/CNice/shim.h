#ifndef CALLROOM_CNICE_SHIM_H
#define CALLROOM_CNICE_SHIM_H
/* libnice's STUN library (RFC 5389 messages, the ICE connectivity-check usage). Its headers need
   no GLib; the symbols are in libnice.so. (No pkg-config: nice.pc adds -pthread, which SwiftPM
   refuses; this modulemap links the library.) */
#include <stun/stunagent.h>
#include <stun/stunmessage.h>
#include <stun/usages/ice.h>
#endif
