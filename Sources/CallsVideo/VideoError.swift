/// Why a video component could not be set up or could not go on.
public enum VideoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// libvpx refused: the call and its message.
    case codec(String)
    /// A frame of another size than the encoder was made for.
    case wrongSize(expected: String, got: String)
    /// A video device could not be opened or set up (path, why).
    case device(String, String)
    /// A file could not be read or written, or is not what it should be (path, why).
    case file(String, String)
    /// The source ended (a closed device, an encoder that stopped).
    case closed

    public var description: String {
        switch self {
        case .codec(let m): return "VP8: \(m)"
        case .wrongSize(let e, let g): return "frame is \(g), the encoder takes \(e)"
        case .device(let p, let m): return "\(p): \(m)"
        case .file(let p, let m): return "\(p): \(m)"
        case .closed: return "video source closed"
        }
    }
}
