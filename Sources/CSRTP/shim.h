#ifndef CALLROOM_CSRTP_SHIM_H
#define CALLROOM_CSRTP_SHIM_H
#include <srtp2/srtp.h>
/* The trailer room a protected RTP packet may need (tag and MKI), as a constant Swift sees. */
static const int callroom_srtp_max_trailer = SRTP_MAX_TRAILER_LEN;
#endif
