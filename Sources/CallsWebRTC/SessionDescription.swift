import CSofiaSDP

/// A session description (SDP, RFC 8866) as a WebRTC peer sends it (JSEP, RFC 8829): one section
/// per media, usually bundled on one ICE/DTLS transport. Parsed by sofia-sip's SDP parser; this
/// value keeps what a gateway answering a browser needs. Immutable; any thread.
public struct SessionDescription: Sendable, Equatable {
    /// One payload type a section offers.
    public struct Codec: Sendable, Equatable {
        public var payloadType: UInt8
        /// As written (`opus`, `VP8`, `red`, `rtx` …).
        public var name: String
        public var clockRate: Int
        /// Audio channels (1 when not given).
        public var channels: Int
        /// The `a=fmtp` parameters, as written (nil: none).
        public var parameters: String?
        /// The `a=rtcp-fb` values for this payload type (`nack`, `nack pli`, `transport-cc` …).
        public var feedback: [String]
    }

    /// A certificate fingerprint (`a=fingerprint:sha-256 AB:CD:…`).
    public struct Fingerprint: Sendable, Equatable {
        public var algorithm: String
        public var value: String
    }

    public enum Kind: String, Sendable, Equatable { case audio, video, application, other }

    /// Which way media flows in a section, from the writer's side.
    public enum Direction: String, Sendable, Equatable, CaseIterable {
        case sendrecv, sendonly, recvonly, inactive

        /// The direction an answer gives to a section offered this way (RFC 3264 §6.1).
        public var answered: Direction {
            switch self {
            case .sendrecv: return .sendrecv
            case .sendonly: return .recvonly
            case .recvonly: return .sendonly
            case .inactive: return .inactive
            }
        }
    }

    /// One `m=` section.
    public struct Media: Sendable, Equatable {
        public var kind: Kind
        public var port: Int
        /// The transport protocol (`UDP/TLS/RTP/SAVPF` for WebRTC media).
        public var proto: String
        public var mid: String?
        public var direction: Direction
        public var codecs: [Codec]
        /// Header extensions: id → URI (`urn:ietf:params:rtp-hdrext:ssrc-audio-level` …).
        public var extensions: [Int: String]
        /// ICE credentials and DTLS fingerprint and role (the section's, else the session's).
        public var iceUfrag: String?
        public var icePwd: String?
        public var fingerprint: Fingerprint?
        public var setup: String?
        public var rtcpMux: Bool
        /// The SSRCs the writer will send from (`a=ssrc:`), in order, each once.
        public var ssrcs: [UInt32]
        /// `a=bundle-only` (RFC 8843 §6): port 0 yet live, carried on the bundle's transport —
        /// how Firefox offers every section after the first under `max-bundle`.
        public var bundleOnly: Bool = false
        /// A section with port 0 and not bundle-only: rejected, or stopped.
        public var isRejected: Bool { port == 0 && !bundleOnly }
    }

    public var media: [Media]
    /// The mids of `a=group:BUNDLE` (empty: not bundled).
    public var bundle: [String]
    public var iceLite: Bool

    /// Parses `text` with sofia-sip's SDP parser, after `SDPPrecheck` (which keeps the parser
    /// from the malformed `m=` lines it never returns from).
    /// - Throws: `SDPError.malformed` with the parser's reason.
    public static func parse(_ text: String) throws(SDPError) -> SessionDescription {
        guard text.utf8.count <= SDPError.maxBytes else { throw .tooLarge(bytes: text.utf8.count) }
        try SDPPrecheck.check(text)
        let sofia = try SofiaSDP.shared.get()
        guard let home = sofia.homeNew(isize_t(MemoryLayout<su_home_t>.size)) else { throw .malformed("no memory for the parser") }
        let h = home.assumingMemoryBound(to: su_home_t.self)
        defer { _ = sofia.homeUnref(h) }
        // sdp_f_mode_manual: the direction attributes stay attributes, read below — sofia's own
        // reading calls every port-0 section inactive, bundle-only ones too.
        let parser = text.withCString { sofia.parse(h, $0, issize_t(text.utf8.count), Int32(callroom_sdp_mode_manual)) }
        defer { sofia.parserFree(parser) }
        guard let session = sofia.session(parser) else {
            throw .malformed(sofia.parsingError(parser).map { String(cString: $0) } ?? "not a session description")
        }
        return SessionDescription(session.pointee)
    }

    private init(_ s: sdp_session_t) {
        let session = Self.attributes(s.sdp_attributes)
        bundle = session.first { $0.name == "group" && $0.value.hasPrefix("BUNDLE") }
            .map { $0.value.split(separator: " ").dropFirst().map(String.init) } ?? []
        iceLite = session.contains { $0.name == "ice-lite" }
        var sections: [Media] = []
        var m = s.sdp_media
        while let section = m {
            sections.append(Self.media(section.pointee, session: session))
            m = section.pointee.m_next
        }
        media = sections
    }

    private struct Attribute { var name: String; var value: String }

    private static func attributes(_ first: UnsafeMutablePointer<sdp_attribute_t>?) -> [Attribute] {
        var out: [Attribute] = []
        var a = first
        while let attr = a {
            let name = attr.pointee.a_name.map { String(cString: $0) } ?? ""
            let value = attr.pointee.a_value.map { String(cString: $0) } ?? ""
            out.append(Attribute(name: name, value: value))
            a = attr.pointee.a_next
        }
        return out
    }

    private static func media(_ m: sdp_media_t, session: [Attribute]) -> Media {
        let attrs = attributes(m.m_attributes)
        func value(_ name: String) -> String? { attrs.first { $0.name == name }?.value ?? session.first { $0.name == name }?.value }
        let kind: Kind
        switch m.m_type {
        case sdp_media_audio: kind = .audio
        case sdp_media_video: kind = .video
        case sdp_media_application: kind = .application
        default: kind = .other
        }
        var feedback: [Int: [String]] = [:]
        var extensions: [Int: String] = [:]
        var ssrcs: [UInt32] = []
        for a in attrs {
            let parts = a.value.split(separator: " ", maxSplits: 1).map(String.init)
            switch a.name {
            case "rtcp-fb" where parts.count == 2:
                if let pt = Int(parts[0]) { feedback[pt, default: []].append(parts[1]) }
            case "extmap" where parts.count == 2:
                // `id[/direction] uri [attributes]`
                if let id = Int(parts[0].split(separator: "/").first ?? "") {
                    extensions[id] = String(parts[1].split(separator: " ").first ?? "")
                }
            case "ssrc":
                if let ssrc = UInt32(parts.first ?? ""), !ssrcs.contains(ssrc) { ssrcs.append(ssrc) }
            default:
                break
            }
        }
        var codecs: [Codec] = []
        var r = m.m_rtpmaps
        while let map = r {
            let pt = Int(map.pointee.rm_pt)
            codecs.append(Codec(payloadType: UInt8(pt), name: map.pointee.rm_encoding.map { String(cString: $0) } ?? "",
                                clockRate: Int(map.pointee.rm_rate),
                                channels: map.pointee.rm_params.flatMap { Int(String(cString: $0)) } ?? 1,
                                parameters: map.pointee.rm_fmtp.map { String(cString: $0) },
                                feedback: feedback[pt] ?? []))
            r = map.pointee.rm_next
        }
        // sofia-sip reads `a=rtpmap`/`a=fmtp` into `m_rtpmaps` only for the RTP profiles it knows
        // (RTP/AVP, RTP/SAVP); WebRTC's UDP/TLS/RTP/SAVPF leaves them attributes, read here.
        if codecs.isEmpty {
            let fmtp = Dictionary(attrs.filter { $0.name == "fmtp" }.compactMap { a -> (Int, String)? in
                let p = a.value.split(separator: " ", maxSplits: 1).map(String.init)
                guard p.count == 2, let pt = Int(p[0]) else { return nil }
                return (pt, p[1])
            }, uniquingKeysWith: { first, _ in first })
            for a in attrs where a.name == "rtpmap" {
                let p = a.value.split(separator: " ", maxSplits: 1).map(String.init)
                guard p.count == 2, let pt = UInt8(p[0]), pt < 128 else { continue }
                let enc = p[1].split(separator: "/").map(String.init)
                guard enc.count >= 2, let rate = Int(enc[1]) else { continue }
                codecs.append(Codec(payloadType: pt, name: enc[0], clockRate: rate, channels: enc.count > 2 ? Int(enc[2]) ?? 1 : 1,
                                    parameters: fmtp[Int(pt)], feedback: feedback[Int(pt)] ?? []))
            }
        }
        // The section's direction attribute, else the session's, else sendrecv (RFC 4566 §6).
        let directions = Set(Direction.allCases.map(\.rawValue))
        let direction = (attrs.last { directions.contains($0.name) } ?? session.last { directions.contains($0.name) })
            .flatMap { Direction(rawValue: $0.name) } ?? .sendrecv
        let fingerprint = value("fingerprint").flatMap { f -> Fingerprint? in
            let p = f.split(separator: " ")
            return p.count == 2 ? Fingerprint(algorithm: p[0].lowercased(), value: String(p[1])) : nil
        }
        return Media(kind: kind, port: Int(m.m_port), proto: m.m_proto_name.map { String(cString: $0) } ?? "",
                     mid: attrs.first { $0.name == "mid" }?.value, direction: direction, codecs: codecs, extensions: extensions,
                     iceUfrag: value("ice-ufrag"), icePwd: value("ice-pwd"), fingerprint: fingerprint, setup: value("setup"),
                     rtcpMux: attrs.contains { $0.name == "rtcp-mux" }, ssrcs: ssrcs, bundleOnly: attrs.contains { $0.name == "bundle-only" })
    }
}

/// Why a session description could not be read or answered.
public enum SDPError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not SDP, as the parser says.
    case malformed(String)
    /// Longer than any offer needs (`maxBytes`).
    case tooLarge(bytes: Int)
    /// No ICE credentials or no DTLS fingerprint for a section to be answered.
    case missingTransport(mid: String)
    /// Sections that are not bundled on one transport (one transport per peer is all we serve).
    case notBundled
    /// Nothing in the offer this server sends or receives (no Opus, no VP8).
    case noCommonCodec
    /// sofia-sip's library could not be opened (not installed: `scripts/install-deps.sh`).
    case parserUnavailable(String)

    /// The longest description read (a browser's offer with audio, video and data is 3–6 KiB).
    public static let maxBytes = 64 * 1024

    public var description: String {
        switch self {
        case .malformed(let why): return "not a session description: \(why)"
        case .tooLarge(let n): return "the session description is \(n) bytes (at most \(Self.maxBytes))"
        case .missingTransport(let mid): return "section \(mid) has no ICE credentials or DTLS fingerprint"
        case .notBundled: return "the sections are not bundled (a=group:BUNDLE): one transport per peer is served"
        case .noCommonCodec: return "nothing offered that this server speaks (Opus audio, VP8 video)"
        case .parserUnavailable(let why): return "the SDP parser (sofia-sip) is not available: \(why)"
        }
    }
}
