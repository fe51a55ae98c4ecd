/// How a client checks the server's TLS certificate.
public struct TLSTrust: Sendable, Equatable {
    /// A PEM bundle of CAs to trust; nil: the system's store (`systemBundle`).
    public var caFile: String?
    /// No verification at all (`--insecure`, an explicit choice: anyone on the path can read and
    /// change everything).
    public var insecure: Bool

    public init(caFile: String? = nil, insecure: Bool = false) {
        self.caFile = caFile
        self.insecure = insecure
    }

    public static let system = TLSTrust()
    /// Debian's bundle of the system's trusted CAs (ca-certificates).
    public static let systemBundle = "/etc/ssl/certs/ca-certificates.crt"

    /// The file to load CAs from.
    public var bundle: String { caFile ?? Self.systemBundle }
}
