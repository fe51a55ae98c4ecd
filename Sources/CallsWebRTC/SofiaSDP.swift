import CSofiaSDP
import Glibc

/// sofia-sip's SDP parser, opened on first use with `RTLD_LOCAL`.
///
/// Why not linked: libsofia-sip-ua exports a `stun_message_length` of its own STUN code, and so
/// does libnice. Linked side by side, the dynamic linker binds libnice's calls to whichever
/// library comes first in the executable's list — sofia-sip's, in this package's link order —
/// and libnice then writes zero-length STUN messages (seen: every reply to a browser's check
/// was empty). Opened locally, sofia-sip's symbols never join the global scope. Immutable; any thread.
struct SofiaSDP: Sendable {
    let homeNew: @convention(c) (isize_t) -> UnsafeMutableRawPointer?
    let homeUnref: @convention(c) (UnsafeMutablePointer<su_home_t>?) -> Int32
    let parse: @convention(c) (UnsafeMutablePointer<su_home_t>?, UnsafePointer<CChar>?, issize_t, Int32) -> OpaquePointer?
    let parsingError: @convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?
    let session: @convention(c) (OpaquePointer?) -> UnsafeMutablePointer<sdp_session_t>?
    let parserFree: @convention(c) (OpaquePointer?) -> Void

    /// The library's soname (Debian's libsofia-sip-ua0).
    static let soname = "libsofia-sip-ua.so.0"

    /// The parser, or why it cannot be opened (the library is not installed).
    static let shared: Result<SofiaSDP, SDPError> = {
        guard let handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL) else {
            return .failure(.parserUnavailable(dlerror().map { String(cString: $0) } ?? soname))
        }
        func symbol<F>(_ name: String, as: F.Type) -> F? { dlsym(handle, name).map { unsafeBitCast($0, to: F.self) } }
        guard let homeNew = symbol("su_home_new", as: (@convention(c) (isize_t) -> UnsafeMutableRawPointer?).self),
              let homeUnref = symbol("su_home_unref", as: (@convention(c) (UnsafeMutablePointer<su_home_t>?) -> Int32).self),
              let parse = symbol("sdp_parse", as: (@convention(c) (UnsafeMutablePointer<su_home_t>?, UnsafePointer<CChar>?, issize_t, Int32) -> OpaquePointer?).self),
              let parsingError = symbol("sdp_parsing_error", as: (@convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?).self),
              let session = symbol("sdp_session", as: (@convention(c) (OpaquePointer?) -> UnsafeMutablePointer<sdp_session_t>?).self),
              let parserFree = symbol("sdp_parser_free", as: (@convention(c) (OpaquePointer?) -> Void).self) else {
            return .failure(.parserUnavailable("\(soname) lacks the SDP parser's functions"))
        }
        return .success(SofiaSDP(homeNew: homeNew, homeUnref: homeUnref, parse: parse, parsingError: parsingError,
                                 session: session, parserFree: parserFree))
    }()
}
