#ifndef CALLROOM_CNICE_SHIM_H
#define CALLROOM_CNICE_SHIM_H
/* sofia-sip's headers (CSofiaSDP, imported beside this module) define _GNU_SOURCE; the system
   types both modules include must be declared alike. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
/* libnice's STUN library (RFC 5389 messages, the ICE connectivity-check usage). Its headers need
   no GLib; the symbols are in libnice.so. (No pkg-config: nice.pc adds -pthread, which SwiftPM
   refuses; this modulemap links the library.) */
#include <stun/stunagent.h>
#include <stun/stunmessage.h>
#include <stun/usages/ice.h>
#endif
