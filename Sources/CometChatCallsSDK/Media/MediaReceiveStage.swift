import CallsCore
import CallsSecurity
import CallsVideo

/// The receive path between a transport and the players, one for every transport (the relay's
/// UDP socket, the signalling tunnel; a WebRTC leg next): SRTP checked in place, the RTP header
/// read, our own packets dropped, the simulated impairment applied (benchmarks and tests), and
/// what remains handed to `deliver` with its arrival time — the engine passes audio to the
/// jitter buffers and VP8 to the video engine.
///
/// Thread rules: one caller at a time (the engine keeps it under its receive lock).
struct MediaReceiveStage: Sendable {
    /// What became of one packet.
    enum Outcome: Equatable, Sendable {
        /// Handed on now.
        case delivered
        /// Held by the impairment until its release time (`release(now:deliver:)`).
        case held
        /// Dropped by the impairment (a simulated loss).
        case impairedDrop
        /// Failed SRTP: a sender whose key we lack, replayed or tampered with.
        case rejected
        /// Verified, but no RTP header could be read, or it was our own.
        case ignored

        /// Whether it counts as received (it verified and was someone else's).
        var received: Bool { self == .delivered || self == .held || self == .impairedDrop }
    }

    /// What to do about a control datagram from the relay (`MediaBinding.isControl`).
    enum Control: Equatable, Sendable {
        /// The relay acknowledged our binding: media flows both ways.
        case acknowledged
        /// A consent challenge, with our answer to send back.
        case answer([UInt8])
        /// Someone else's acknowledgement, or a challenge we cannot answer.
        case ignored
    }

    let srtp: SRTPReceiver
    private let impairment: NetworkImpairment?
    // Audio's draws, then video's own: video packets do not shift which audio packets a seed drops.
    private var rngs: [SplitMix64]
    private var losses: [NetworkImpairment.LossProcess]
    /// Impaired packets waiting for their release time, earliest first.
    private var held: [(release: UInt64, datagram: [UInt8])] = []

    init(srtp: SRTPReceiver, impairment: NetworkImpairment?) {
        self.srtp = srtp
        self.impairment = impairment
        rngs = [SplitMix64(seed: impairment?.seed ?? 1), SplitMix64(seed: (impairment?.seed ?? 1) &+ 0x9E37_79B9_7F4A_7C15)]
        losses = impairment.map { [NetworkImpairment.LossProcess($0), NetworkImpairment.LossProcess($0)] } ?? []
    }

    /// When the next held packet is due (monotonic ns), if any.
    var nextRelease: UInt64? { held.first?.release }

    /// A control datagram from the relay: an acknowledgement of `ownSSRC`'s binding, or a
    /// consent challenge answered with `consent`.
    static func control(_ raw: UnsafeRawBufferPointer, ownSSRC: UInt32, consent: MediaConsent?) -> Control {
        if let acked = MediaBinding.parseAck(raw) { return acked == ownSSRC ? .acknowledged : .ignored }
        guard let answer = consent?.answer(raw) else { return .ignored }
        return .answer(answer)
    }

    /// One SRTP packet in `buffer[0..<length]`, unprotected in place, that arrived at `arrival`
    /// (monotonic ns). `impaired`: whether the simulated impairment applies (not to what comes
    /// over the tunnel).
    mutating func receive(_ buffer: UnsafeMutableRawBufferPointer, length: Int, ownSSRC: UInt32, arrival: UInt64, impaired: Bool = true,
                          deliver: (RTPHeader, UnsafeRawBufferPointer, UInt64) -> Void) -> Outcome {
        let plain: Int
        do { plain = try srtp.unprotect(buffer, length: length) } catch { return .rejected }
        let d = UnsafeRawBufferPointer(rebasing: buffer[0..<plain])
        guard let h = try? RTPHeader(parsing: d), h.ssrc != ownSSRC else { return .ignored }
        guard impaired, let impairment else {
            deliver(h, d, arrival)
            return .delivered
        }
        // Impairment: drop, or hold for a random delay (which also reorders).
        let r = h.payloadType == VP8Payload.payloadType ? 1 : 0
        if losses[r].drops(using: &rngs[r]) { return .impairedDrop }
        let release = arrival + UInt64(Double.random(in: 0...max(0, impairment.jitterMs), using: &rngs[r]) * 1_000_000)
        let at = held.firstIndex { $0.release > release } ?? held.count
        held.insert((release, Array(d)), at: at)
        return .held
    }

    /// Hands on the held packets whose release time is `now` or earlier, each as arriving at
    /// its release time (exact, whenever they are read).
    mutating func release(now: UInt64, deliver: (RTPHeader, UnsafeRawBufferPointer, UInt64) -> Void) {
        while let first = held.first, first.release <= now {
            held.removeFirst()
            first.datagram.withUnsafeBytes { d in if let h = try? RTPHeader(parsing: d) { deliver(h, d, first.release) } }
        }
    }
}
