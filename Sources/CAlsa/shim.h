#ifndef CALLROOM_CALSA_SHIM_H
#define CALLROOM_CALSA_SHIM_H
#include <alsa/asoundlib.h>

/* alsa-lib prints to stderr when a device is missing; the handler type is
   variadic, so it is defined here in C. */
static void callroom_alsa_silent_handler(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}
static inline void callroom_alsa_silence_errors(void) {
    snd_lib_error_set_handler(callroom_alsa_silent_handler);
}
#endif
