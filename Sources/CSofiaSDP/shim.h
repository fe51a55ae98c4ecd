#ifndef CALLROOM_CSOFIASDP_SHIM_H
#define CALLROOM_CSOFIASDP_SHIM_H
/* sofia-sip's SDP parser (RFC 4566), with the memory home its structures live in — the types
   only: SofiaSDP opens the library at run time.
   sofia-sip's su_configure.h defines _GNU_SOURCE, which changes how glibc declares some system
   types (fd_set's field); other modules (CCurl, CNice) declare them without it, and Clang
   refuses two definitions in one Swift module. So the system headers come first, as everyone
   else sees them; sofia-sip's then find them already included. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <sys/types.h>
#include <sys/time.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <sofia-sip/su_alloc.h>
#include <sofia-sip/sdp.h>
/* sdp_parse's flags, as constants Swift sees. */
static const int callroom_sdp_strict = sdp_f_strict;
static const int callroom_sdp_mode_manual = sdp_f_mode_manual;
#endif
