import CallsCore
import CallsSecurity
import CallsTransport

/// One browser's media leg through the server: it is the browser's participant on the relay
/// (a tunnelled member, as a client whose UDP is blocked is), and translates between the two
/// kinds of SRTP at that seam.
///
/// ```
///  browser ──SRTP (DTLS keys)──▶ receive: unprotect ─▶ RTPRewrite (SSRC, PT, level) ─▶ protect (its native key, MKI) ─▶ relay
///  relay ───SRTP (senders' keys)─▶ fromRoom: unprotect ─▶ RTPRewrite (PT, level id) ─▶ protect (DTLS keys) ─────────▶ browser
/// ```
///
/// So on a browser's leg the server sees media in the clear, as every WebRTC SFU does; native
/// clients' media between themselves is never decrypted (they do not go through here).
///
/// Thread rules: `receive` runs on the gateway's reader thread; `fromRoom` on the relay's
/// workers (several at once); `setKeys`, `setForwarding`, `configure` on the rooms' queue. The
/// browser-facing side (`Ingress`) and the room-facing side (`Egress`) each have their own lock;
/// `receive` may take the egress lock inside the ingress lock, never the other way round.
public final class WebRTCPeer: Sendable {
    /// What `receive` asks the gateway to do.
    public enum Event: Equatable, Sendable {
        /// Send these datagrams back to the address the datagram came from (DTLS flights).
        case reply([[UInt8]])
        /// The handshake finished: media can flow (the profile both chose).
        case connected(DTLSSRTPKeys.Profile)
        /// The handshake failed (a certificate not the offer's, a protocol error): close the peer.
        case failed(String)
        /// A packet for the room, in CallRoom's form (the relay's tunnelled input).
        case toRoom([UInt8])
        /// The browser asked for a keyframe (PLI, FIR, or a NACK it cannot get answered) of this native video SSRC.
        case keyframe(ssrc: UInt32)
        /// Not passed on (counted).
        case dropped(Drop)
    }

    /// Counted refusals (the gateway adds them up for /metrics).
    public enum Drop: String, Sendable, CaseIterable {
        case beforeHandshake, badSRTP, notRTP, unknownPayload, notForwarded, noKey
        /// The address its media went to stopped answering consent checks (`withdraw`).
        case noConsent
    }

    /// The signalling connection this leg belongs to (the relay's tunnel id).
    public let connection: UInt64
    /// This side's ICE credentials (`a=ice-ufrag`, `a=ice-pwd`) for this browser.
    public let localUfrag: String
    public let localPassword: String
    /// The participant's native SSRCs (what the room knows it by).
    public let audioSSRC: UInt32
    public let videoSSRC: UInt32

    /// The negotiated details of the browser's side.
    public struct Negotiated: Sendable, Equatable {
        public var opus: UInt8?
        public var vp8: UInt8?
        /// The browser's id for the RFC 6464 level extension (nil: not negotiated).
        public var levelID: UInt8?
        /// Redundant audio (RFC 2198), when negotiated (only with Opus at 111, CallRoom's own,
        /// so the blocks inside need no rewriting).
        public var red: UInt8?
        public init(opus: UInt8?, vp8: UInt8?, levelID: UInt8?, red: UInt8? = nil) {
            self.opus = opus; self.vp8 = vp8; self.levelID = levelID; self.red = red
        }
    }

    private struct Ingress {
        var dtls: DTLSEndpoint
        var srtp: PeerSRTPSession?
        var audio: SRTPSender
        var video: SRTPSender
        var negotiated: Negotiated
        var browserSSRCs: Set<UInt32> = []
    }

    private struct Egress {
        var srtp: PeerSRTPSession?
        var negotiated: Negotiated
        /// The native SSRCs assigned to the browser's receiving sections.
        var forwarding: Set<UInt32> = []
        /// The address ICE nominated (nil: none yet, or its consent ran out: nothing is sent).
        var address: SocketAddress?
        /// Media stopped because `address` withdrew its consent (until the next nomination).
        var withdrawn = false
        var browserVideo: Set<UInt32> = []
    }

    private let ingress: LockedState<Ingress>
    private let egress: LockedState<Egress>
    /// Every other sender's native key (its own lock).
    private let receiver: SRTPReceiver

    /// - Parameters:
    ///   - identity: the server's DTLS certificate (its fingerprint is in the answer).
    ///   - remoteFingerprint: the browser's, from its offer.
    ///   - ownKey: the participant's native key (`joined.mediaKeys[0]`); its SSRCs are the participant's.
    public init(connection: UInt64, localUfrag: String, localPassword: String, identity: TLSIdentity, remoteFingerprint: String,
                ownKey: WireMediaKey, negotiated: Negotiated) throws {
        guard let key = SRTPKey(ownKey), let videoSSRC = ownKey.videoSsrc else { throw WebRTCPeerError.badKey }
        let dtls = try DTLSEndpoint(role: .server, identity: identity, remoteFingerprint: remoteFingerprint)
        let audio = try SRTPSender(ssrc: ownKey.ssrc, key: key)
        let video = try SRTPSender(ssrc: videoSSRC, key: key)
        self.connection = connection
        self.localUfrag = localUfrag
        self.localPassword = localPassword
        audioSSRC = ownKey.ssrc
        self.videoSSRC = videoSSRC
        ingress = LockedState(Ingress(dtls: dtls, audio: audio, video: video, negotiated: negotiated))
        egress = LockedState(Egress(negotiated: negotiated))
        receiver = try SRTPReceiver()
    }

    /// A renegotiation's outcome: the browser's payload types and level id, and which native
    /// SSRCs it now receives (rooms' queue).
    public func configure(_ negotiated: Negotiated, forwarding: Set<UInt32>) {
        ingress.withLock { $0.negotiated = negotiated }
        egress.withLock { e in
            e.negotiated = negotiated
            e.forwarding = forwarding
        }
    }

    /// The room's keys changed (`joined`, `mediaKeys`): the participant's own (its new epoch)
    /// rekeys what goes to the room; the others' decrypt what comes from it.
    public func setKeys(_ keys: [WireMediaKey]) {
        for k in keys {
            guard let key = SRTPKey(k) else { continue }
            if k.ssrc == audioSSRC {
                ingress.withLock { i in
                    try? i.audio.rekey(key)
                    try? i.video.rekey(key)
                }
            } else {
                try? receiver.setKey(key, for: k.ssrc)
                if let v = k.videoSsrc { try? receiver.setKey(key, for: v) }
            }
        }
    }

    /// A sender left: its keys go.
    public func removeSender(ssrc: UInt32, videoSSRC: UInt32?) {
        receiver.remove(ssrc)
        if let videoSSRC { receiver.remove(videoSSRC) }
    }

    /// ICE nominated `address` for this browser's media (the gateway's reader thread).
    public func nominate(_ address: SocketAddress) {
        egress.withLock {
            $0.address = address
            $0.withdrawn = false
        }
    }

    /// `address` no longer consents (RFC 7675): nothing more is sent there until an address is
    /// nominated again. False when the leg's media go elsewhere already. The gateway's reader thread.
    public func withdraw(from address: SocketAddress) -> Bool {
        egress.withLock {
            guard $0.address == address else { return false }
            $0.address = nil
            $0.withdrawn = true
            return true
        }
    }

    public var address: SocketAddress? { egress.withLock { $0.address } }

    /// The handshake's last flight again when its retransmission timer ran out (100 ms, doubling),
    /// cut into datagrams, with where to send them (the nominated address); nil when nothing is
    /// due, the handshake is done, or no address is known yet. The gateway's reader thread.
    public func retransmitHandshake() -> (datagrams: [[UInt8]], to: SocketAddress)? {
        guard let address = egress.withLock({ $0.address }) else { return nil }
        let flight = ingress.withLock { i in (try? i.dtls.retransmitIfDue()) ?? [] }  // (nothing once connected)
        return flight.isEmpty ? nil : (Self.datagrams(of: flight), address)
    }

    /// Whether the DTLS handshake finished.
    public var isConnected: Bool { egress.withLock { $0.srtp != nil } }

    /// One DTLS, SRTP or SRTCP datagram from the browser (STUN is the gateway's). Returns what to do.
    public func receive(_ datagram: [UInt8]) -> [Event] {
        let kind = datagram.withUnsafeBytes { BundledPacket($0) }
        return ingress.withLock { i -> [Event] in
            switch kind {
            case .dtls: return Self.handshake(&i, datagram, egress: egress)
            case .rtp: return i.srtp == nil ? [.dropped(.beforeHandshake)] : Self.media(&i, datagram, egress: egress, audioSSRC: audioSSRC, videoSSRC: videoSSRC)
            case .rtcp: return i.srtp == nil ? [.dropped(.beforeHandshake)] : Self.control(&i, datagram)
            case .stun, .unknown: return [.dropped(.notRTP)]
            }
        }
    }

    private static func handshake(_ i: inout sending Ingress, _ datagram: [UInt8], egress: LockedState<Egress>) -> [Event] {
        let wasConnected = i.dtls.isConnected
        do {
            let out = try i.dtls.receive(datagram)
            var events: [Event] = out.isEmpty ? [] : [.reply(Self.datagrams(of: out))]
            if !wasConnected, i.dtls.isConnected {
                let keys = try i.dtls.srtpKeys()
                i.srtp = try PeerSRTPSession(keys: keys)
                // A session of its own for the relay's workers (libsrtp sessions are not shared across threads).
                try egress.withLock { e throws(SRTPError) in e.srtp = try PeerSRTPSession(keys: keys) }
                events.append(.connected(keys.profile))
            }
            return events
        } catch {
            return [.failed("\(error)")]
        }
    }

    /// A flight OpenSSL wrote in one go, cut into datagrams at record boundaries (DTLS record:
    /// 13-byte header, its length in bytes 11–12), each under `DTLSEndpoint.mtu` where the records allow.
    static func datagrams(of flight: [UInt8]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var current: [UInt8] = []
        var at = 0
        while at + 13 <= flight.count {
            let length = 13 + (Int(flight[at + 11]) << 8 | Int(flight[at + 12]))
            let end = min(at + length, flight.count)
            if !current.isEmpty, current.count + (end - at) > DTLSEndpoint.mtu {
                out.append(current)
                current = []
            }
            current += flight[at..<end]
            at = end
        }
        if at < flight.count { current += flight[at...] }
        if !current.isEmpty { out.append(current) }
        return out
    }

    private static func media(_ i: inout sending Ingress, _ datagram: [UInt8], egress: LockedState<Egress>,
                              audioSSRC: UInt32, videoSSRC: UInt32) -> [Event] {
        guard let srtp = i.srtp else { return [] }
        var buffer = [UInt8](repeating: 0, count: datagram.count + RTPRewrite.maxHeader + SRTPProfile.aeadAES128GCM.overhead + 16)
        let n: Int
        do {
            n = try buffer.withUnsafeMutableBytes { b throws(SRTPError) -> Int in
                datagram.withUnsafeBytes { b.copyMemory(from: $0) }
                return try srtp.unprotect(b, length: datagram.count)
            }
        } catch {
            return [.dropped(.badSRTP)]
        }
        let negotiated = i.negotiated
        guard let header = buffer.withUnsafeBytes({ RTPRewrite.read(UnsafeRawBufferPointer(rebasing: $0[0..<n]), levelID: negotiated.levelID) }) else {
            return [.dropped(.notRTP)]
        }
        let audio: Bool, nativeType: UInt8
        switch header.payloadType {
        case negotiated.opus: (audio, nativeType) = (true, RTPRewrite.nativeOpus)
        case negotiated.red where negotiated.red != nil: (audio, nativeType) = (true, RTPRewrite.nativeRED)
        case negotiated.vp8: (audio, nativeType) = (false, RTPRewrite.nativeVP8)
        default: return [.dropped(.unknownPayload)]
        }
        // (Padding-only packets, a browser's bandwidth probes: nothing to forward.)
        guard header.payloadLength > 0 else { return [] }
        if !audio, !i.browserSSRCs.contains(header.ssrc) {
            i.browserSSRCs.insert(header.ssrc)
            let known = i.browserSSRCs
            egress.withLock { $0.browserVideo = known }
        }
        let sender = audio ? i.audio : i.video
        do {
            let out = try buffer.withUnsafeMutableBytes { b throws(SRTPError) -> Int in
                let length = RTPRewrite.write(b, header: header, payloadType: nativeType,
                                              ssrc: audio ? audioSSRC : videoSSRC, marker: audio ? false : header.marker,
                                              levelID: audio ? RTPRewrite.nativeLevelID : nil)
                return try sender.protect(b, length: length)
            }
            buffer.removeSubrange(out...)  // (in place: the packet keeps this buffer, no copy)
            return [.toRoom(buffer)]
        } catch {
            return [.dropped(.noKey)]
        }
    }

    private static func control(_ i: inout sending Ingress, _ datagram: [UInt8]) -> [Event] {
        guard let srtp = i.srtp else { return [] }
        var buffer = datagram
        guard let n = try? buffer.withUnsafeMutableBytes({ b throws(SRTPError) in try srtp.unprotectRTCP(b, length: datagram.count) }) else {
            return [.dropped(.badSRTP)]
        }
        var events: [Event] = []
        for packet in buffer.withUnsafeBytes({ RTCPFeedback.parse(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }) {
            switch packet {
            case .keyframe(_, let media), .nack(_, let media, _):
                if !events.contains(.keyframe(ssrc: media)) { events.append(.keyframe(ssrc: media)) }
            case .reports, .remb: break
            }
        }
        return events
    }

    /// One packet the relay sends this participant (a native sender's SRTP, or another browser
    /// leg's, re-protected natively): what to send the browser, or why not (no section of its
    /// carries that SSRC, no key for the sender, a replay, no nominated address yet). Any relay worker.
    public func fromRoom(_ datagram: UnsafeRawBufferPointer) -> Forward {
        var buffer = [UInt8](repeating: 0, count: datagram.count + RTPRewrite.maxHeader + PeerSRTPSession.maxRTPOverhead)
        let n: Int
        do {
            n = try buffer.withUnsafeMutableBytes { b throws(SRTPError) -> Int in
                b.copyMemory(from: datagram)
                return try receiver.unprotect(b, length: datagram.count)
            }
        } catch {
            return .dropped(.badSRTP)  // no key for that sender, a replay, a forgery
        }
        guard let header = buffer.withUnsafeBytes({ RTPRewrite.read(UnsafeRawBufferPointer(rebasing: $0[0..<n]), levelID: RTPRewrite.nativeLevelID) }) else {
            return .dropped(.notRTP)
        }
        return egress.withLock { e -> Forward in
            guard let srtp = e.srtp, let address = e.address else { return .dropped(e.withdrawn ? .noConsent : .beforeHandshake) }
            guard e.forwarding.contains(header.ssrc) else { return .dropped(.notForwarded) }
            var header = header
            let audio = header.payloadType == RTPRewrite.nativeOpus || header.payloadType == RTPRewrite.nativeRED
            let pt: UInt8?
            switch header.payloadType {
            case RTPRewrite.nativeOpus: pt = e.negotiated.opus
            case RTPRewrite.nativeRED:
                if let red = e.negotiated.red {
                    pt = red
                } else {
                    // A browser that did not take RED gets the packet's own (primary) frame.
                    guard let primary = buffer.withUnsafeBytes({ RTPRewrite.redPrimary(UnsafeRawBufferPointer(rebasing: $0[0..<n]), header) }) else {
                        return .dropped(.unknownPayload)
                    }
                    header.payloadOffset = primary.offset
                    header.payloadLength = primary.length
                    pt = e.negotiated.opus
                }
            case RTPRewrite.nativeVP8: pt = e.negotiated.vp8
            default: pt = nil
            }
            guard let pt else { return .dropped(.unknownPayload) }
            let levelID = audio ? e.negotiated.levelID : nil
            do {
                let out = try buffer.withUnsafeMutableBytes { b throws(SRTPError) -> Int in
                    let length = RTPRewrite.write(b, header: header, payloadType: pt, ssrc: header.ssrc, marker: audio ? false : header.marker,
                                                  levelID: levelID)
                    return try srtp.protect(b, length: length)
                }
                buffer.removeSubrange(out...)  // (in place: the packet keeps this buffer, no copy)
                return .send(buffer, to: address)
            } catch {
                return .dropped(.badSRTP)
            }
        }
    }

    /// What becomes of a packet from the room.
    public enum Forward: Equatable, Sendable {
        case send([UInt8], to: SocketAddress)
        case dropped(Drop)
    }

    /// An SRTCP PLI asking the browser for a keyframe of its video (someone in the room lost
    /// frames of it, or began to show it), or nil before the handshake and its first video packet.
    public func keyframeRequest() -> (bytes: [UInt8], to: SocketAddress)? { sendControl(.keyframe) }

    /// An SRTCP REMB telling the browser what its video may use (and the address), or nil
    /// before the handshake and the browser's first video packet.
    public func remb(bitsPerSecond: UInt64) -> (bytes: [UInt8], to: SocketAddress)? { sendControl(.remb(bitsPerSecond)) }

    /// The RTCP this side sends the browser about its own video.
    private enum Control: Sendable { case keyframe, remb(UInt64) }

    /// One RTCP packet about the browser's video, protected under its DTLS keys, and where it
    /// goes; nil before the handshake, a nominated address and the browser's first video packet.
    private func sendControl(_ kind: Control) -> (bytes: [UInt8], to: SocketAddress)? {
        egress.withLock { e -> (bytes: [UInt8], to: SocketAddress)? in
            let video = e.browserVideo.sorted()
            guard let srtp = e.srtp, let address = e.address, let first = video.first else { return nil }
            let packet: RTCPFeedback
            switch kind {
            case .keyframe: packet = .keyframe(from: videoSSRC, media: first)
            case .remb(let bps): packet = .remb(from: videoSSRC, bitsPerSecond: bps, ssrcs: video)
            }
            var buffer = packet.bytes
            let length = buffer.count
            buffer += [UInt8](repeating: 0, count: PeerSRTPSession.maxRTCPOverhead)
            guard let n = try? buffer.withUnsafeMutableBytes({ b throws(SRTPError) in try srtp.protectRTCP(b, length: length) }) else { return nil }
            return (Array(buffer[0..<n]), address)
        }
    }
}

/// Why a browser's leg could not be set up.
public enum WebRTCPeerError: Error, Equatable, Sendable {
    /// The participant's native key is not one this server writes (28 bytes, with a video SSRC).
    case badKey
}
