#ifndef CALLROOM_CSOFIASDP_SHIM_H
#define CALLROOM_CSOFIASDP_SHIM_H
/* sofia-sip's SDP parser (RFC 4566), with the memory home its structures live in. */
#include <sofia-sip/su_alloc.h>
#include <sofia-sip/sdp.h>
/* sdp_parse's strictness flags, as constants Swift sees. */
static const int callroom_sdp_strict = sdp_f_strict;
static const int callroom_sdp_mode_sendonly = sdp_sendonly;
static const int callroom_sdp_mode_recvonly = sdp_recvonly;
#endif
