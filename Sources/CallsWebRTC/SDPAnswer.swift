/// The answer a gateway with an ICE-lite, DTLS-server transport gives a browser's offer: every
/// section on the one bundled transport, Opus (with in-band FEC and the RFC 6464 level
/// extension) and VP8 (with NACK, PLI, FIR and REMB) taken at the browser's payload types,
/// everything else refused (port 0). Written as text and read back with the same parser the
/// offer went through (`SessionDescription.parse`), so an answer that does not parse is never
/// sent. A value; any thread.
public struct SDPAnswer: Sendable, Equatable {
    /// This side of the transport.
    public struct Transport: Sendable, Equatable {
        public var iceUfrag: String
        public var icePwd: String
        /// SHA-256 of our DTLS certificate, as `AB:CD:…`.
        public var fingerprint: String
        /// Where browsers send media: the relay's address and port (one host candidate).
        public var address: String
        public var port: Int
        /// Our SSRCs per kind (what we send on that section; nil: we send nothing there).
        public var audioSSRC: UInt32?
        public var videoSSRC: UInt32?
        public var cname: String
        /// What we send on particular sections (by mid), over `audioSSRC`/`videoSSRC`: a room's
        /// other participants, each on a section the browser receives on.
        public var senders: [String: Sender]

        public init(iceUfrag: String, icePwd: String, fingerprint: String, address: String, port: Int,
                    audioSSRC: UInt32? = nil, videoSSRC: UInt32? = nil, cname: String, senders: [String: Sender] = [:]) {
            self.senders = senders
            self.iceUfrag = iceUfrag
            self.icePwd = icePwd
            self.fingerprint = fingerprint
            self.address = address
            self.port = port
            self.audioSSRC = audioSSRC
            self.videoSSRC = videoSSRC
            self.cname = cname
        }
    }

    /// One stream we send on a section: its SSRC and the media stream it belongs to (`a=msid`:
    /// a participant's audio and video share one, so the browser's `track` event names them).
    public struct Sender: Sendable, Equatable {
        public var ssrc: UInt32
        public var stream: String
        public init(ssrc: UInt32, stream: String) { self.ssrc = ssrc; self.stream = stream }
    }

    /// Header extensions taken when offered (the level for dominant speaker and mix-loudest;
    /// the mid, which bundling demultiplexes by).
    public static let extensions: Set<String> = ["urn:ietf:params:rtp-hdrext:ssrc-audio-level", "urn:ietf:params:rtp-hdrext:sdes:mid"]
    /// RTCP feedback taken for VP8 when offered.
    public static let videoFeedback: [String] = ["nack", "nack pli", "ccm fir", "goog-remb"]

    /// The answer's text (CRLF lines).
    public let text: String
    /// The answer as parsed back.
    public let description: SessionDescription
    /// The payload type taken for each accepted section (by mid): Opus or VP8.
    public let payloadTypes: [String: UInt8]
    /// Audio sections where redundant audio (RFC 2198, `red/48000/2` over Opus at 111) was taken too.
    public let redPayloadTypes: [String: UInt8]

    /// Answers `offer` for `transport`.
    /// - Throws: `SDPError.notBundled` when the offer's media are not one bundle,
    ///   `.missingTransport` when an accepted section has no ICE credentials or fingerprint,
    ///   `.noCommonCodec` when no section could be accepted.
    public init(offer: SessionDescription, transport t: Transport, sessionID: UInt64) throws(SDPError) {
        let live = offer.media.filter { !$0.isRejected }
        guard !live.isEmpty, !offer.bundle.isEmpty, live.allSatisfy({ $0.mid.map(offer.bundle.contains) == true }) else { throw .notBundled }
        // The session id under 2^63 (JSEP §5.2.1): Firefox refuses an answer whose id is larger.
        var lines = ["v=0", "o=- \(sessionID & (UInt64.max >> 1)) 2 IN IP4 \(t.address)", "s=-", "t=0 0", "a=ice-lite"]
        var sections: [String] = []
        var accepted: [String] = []
        var payloadTypes: [String: UInt8] = [:]
        var redPayloadTypes: [String: UInt8] = [:]
        for (index, m) in offer.media.enumerated() {
            let mid = m.mid ?? String(index)
            guard !m.isRejected, let codec = Self.codec(for: m) else {
                // Refused: the offer's kind and protocol with port 0, its mid kept (RFC 8843 §7.3.3).
                sections += ["m=\(m.kind == .other ? "audio" : m.kind.rawValue) 0 \(m.proto.isEmpty ? "UDP/TLS/RTP/SAVPF" : m.proto) \(m.codecs.first.map { String($0.payloadType) } ?? "0")",
                             "c=IN IP4 0.0.0.0"] + (m.mid.map { ["a=mid:\($0)"] } ?? [])
                continue
            }
            guard m.iceUfrag != nil, m.icePwd != nil, m.fingerprint != nil else { throw .missingTransport(mid: mid) }
            accepted.append(mid)
            payloadTypes[mid] = codec.payloadType
            let sender = t.senders[mid]
            let ours = sender?.ssrc ?? (m.kind == .audio ? t.audioSSRC : t.videoSSRC)
            var direction = m.direction.answered
            if ours == nil, direction == .sendrecv { direction = .recvonly }
            if ours == nil, direction == .sendonly { direction = .inactive }
            // RED where offered over Opus at 111 (CallRoom's own: the blocks inside pass unchanged).
            let red = m.kind == .audio && codec.payloadType == RTPRewrite.nativeOpus
                ? m.codecs.first { $0.name.lowercased() == "red" && $0.clockRate == 48000 }?.payloadType : nil
            if let red { redPayloadTypes[mid] = red }
            sections += ["m=\(m.kind.rawValue) \(t.port) UDP/TLS/RTP/SAVPF \(codec.payloadType)" + (red.map { " \($0)" } ?? ""),
                         "c=IN IP4 \(t.address)",
                         "a=mid:\(mid)",
                         "a=ice-ufrag:\(t.iceUfrag)", "a=ice-pwd:\(t.icePwd)",
                         "a=fingerprint:sha-256 \(t.fingerprint)", "a=setup:passive",
                         "a=\(direction.rawValue)", "a=rtcp-mux",
                         "a=rtpmap:\(codec.payloadType) \(codec.name)/\(codec.clockRate)" + (m.kind == .audio ? "/2" : "")]
            if m.kind == .audio {
                sections.append("a=fmtp:\(codec.payloadType) minptime=10;useinbandfec=1")
                if let red { sections += ["a=rtpmap:\(red) red/48000/2", "a=fmtp:\(red) \(codec.payloadType)/\(codec.payloadType)"] }
            } else {
                for f in Self.videoFeedback where codec.feedback.contains(f) { sections.append("a=rtcp-fb:\(codec.payloadType) \(f)") }
            }
            for (id, uri) in m.extensions.sorted(by: { $0.key < $1.key }) where Self.extensions.contains(uri) {
                sections.append("a=extmap:\(id) \(uri)")
            }
            if let ours, direction == .sendrecv || direction == .sendonly {
                if let sender {
                    let msid = "\(sender.stream) \(m.kind.rawValue)-\(ours)"
                    sections += ["a=msid:\(msid)", "a=ssrc:\(ours) cname:\(t.cname)", "a=ssrc:\(ours) msid:\(msid)"]
                } else {
                    sections.append("a=ssrc:\(ours) cname:\(t.cname)")
                }
            }
            sections += ["a=candidate:1 1 udp 2130706431 \(t.address) \(t.port) typ host", "a=end-of-candidates"]
        }
        guard !accepted.isEmpty else { throw .noCommonCodec }
        lines.append("a=group:BUNDLE " + accepted.joined(separator: " "))
        let text = (lines + sections).joined(separator: "\r\n") + "\r\n"
        self.text = text
        self.description = try SessionDescription.parse(text)
        self.payloadTypes = payloadTypes
        self.redPayloadTypes = redPayloadTypes
    }

    /// The payload type this gateway takes from a section: Opus at 48 kHz stereo-signalled (as
    /// RFC 7587 requires) for audio, VP8 at 90 kHz for video; nil for anything else.
    static func codec(for m: SessionDescription.Media) -> SessionDescription.Codec? {
        guard m.proto.uppercased().hasSuffix("RTP/SAVPF") else { return nil }
        switch m.kind {
        case .audio: return m.codecs.first { $0.name.lowercased() == "opus" && $0.clockRate == 48000 && $0.channels == 2 }
        case .video: return m.codecs.first { $0.name.uppercased() == "VP8" && $0.clockRate == 90000 }
        case .application, .other: return nil
        }
    }
}
