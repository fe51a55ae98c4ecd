import CallsTUI
import Foundation

/// How `callroom` ends once a command is done: the terminal restored, stdio flushed, then
/// `_exit` — never `exit`'s atexit teardown. That teardown frees OpenSSL's and libwebsockets'
/// global state while library threads (a media thread's SRTP, a WebSocket's TLS, a reconnect
/// attempt) may still be inside them: the crashes on leave seen in CI (SIGABRT, and SIGSEGV in
/// libcrypto on the playback thread). Everything `callroom` writes goes out unbuffered or is
/// flushed here, and files it must remove are removed by their owners before (the demo's
/// data directory).
///
/// Thread rules: any thread (a forced exit may come from the signal thread).
package enum ProcessExit {
    package static func now(_ code: Int32) -> Never {
        NcursesTerminal.restoreForExit()
        fflush(nil)
        _exit(code)
    }
}
