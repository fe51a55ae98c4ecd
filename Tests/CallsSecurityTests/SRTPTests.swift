import CallsCore
import CallsSecurity
import Testing

/// SRTP through libsrtp2: what the relay can read, what a receiver accepts, and rotation.
@Suite("SRTP")
struct SRTPTests {
    let ssrc: UInt32 = 0x1234_5678

    func key(_ epoch: UInt8) -> SRTPKey { SRTPKey(epoch: epoch, material: Crypto.randomBytes(SRTPProfile.aeadAES128GCM.masterKeyLength)) }

    /// An RTP packet with the RFC 6464 level, protected by `sender`.
    func packet(_ sender: SRTPSender, seq: UInt16, payload: [UInt8] = Array("opus frame bytes".utf8)) throws -> [UInt8] {
        var buf = [UInt8](repeating: 0, count: 1500)
        let n = try buf.withUnsafeMutableBytes { b throws -> Int in
            let h = RTPPacket.writeHeader(into: b, sequenceNumber: seq, timestamp: UInt32(seq) * 960, ssrc: ssrc,
                                          audioLevel: .init(level: 30, voiceActivity: true))
            for (i, x) in payload.enumerated() { b[h + i] = x }
            return try sender.protect(b, length: h + payload.count)
        }
        return Array(buf[0..<n])
    }

    func open(_ receiver: SRTPReceiver, _ p: [UInt8]) throws(SRTPError) -> RTPPacket? {
        var b = p
        let n = b.withUnsafeMutableBytes { raw in Result { () throws(SRTPError) in try receiver.unprotect(raw, length: p.count) } }
        let length = try n.get()
        return try? RTPPacket(parsing: b[0..<length])
    }

    @Test func roundTripKeepsHeaderReadableAndPayloadSecret() throws {
        let k = key(0)
        let sender = try SRTPSender(ssrc: ssrc, key: k)
        let receiver = try SRTPReceiver()
        try receiver.setKey(k, for: ssrc)
        let payload = Array("opus frame bytes".utf8)
        let p = try packet(sender, seq: 7, payload: payload)
        #expect(p.count == 20 + payload.count + SRTPProfile.aeadAES128GCM.overhead)
        // What the relay sees without a key: the header and the level, not the payload.
        let h = try RTPHeader(parsing: p)
        #expect(h.ssrc == ssrc && h.sequenceNumber == 7)
        #expect(h.audioLevel == .init(level: 30, voiceActivity: true))
        #expect(p.withUnsafeBytes { RTPPacket.audioLevel(inDatagram: $0) }?.level == 30)
        #expect(!p.indices.dropLast(payload.count).contains { Array(p[$0..<($0 + payload.count)]) == payload }, "payload is encrypted")
        let opened = try open(receiver, p)
        #expect(opened?.payload == payload)
        #expect(opened?.sequenceNumber == 7)
    }

    @Test func tamperedHeaderOrPayloadIsRefused() throws {
        let k = key(0)
        let sender = try SRTPSender(ssrc: ssrc, key: k)
        let receiver = try SRTPReceiver()
        try receiver.setKey(k, for: ssrc)
        var levelForged = try packet(sender, seq: 1)
        levelForged[17] = 0x80  // the level byte: "loudest" — authenticated, so refused
        #expect(throws: SRTPError.authenticationFailed) { try open(receiver, levelForged) }
        var payloadForged = try packet(sender, seq: 2)
        payloadForged[22] ^= 1
        #expect(throws: SRTPError.authenticationFailed) { try open(receiver, payloadForged) }
        // A stranger with another key, same SSRC (a spoofed packet from the victim's address).
        let forger = try SRTPSender(ssrc: ssrc, key: key(0))
        #expect(throws: SRTPError.authenticationFailed) { try open(receiver, try packet(forger, seq: 3)) }
        // Plain RTP is not accepted either.
        var plain = [UInt8](repeating: 0, count: 60)
        _ = plain.withUnsafeMutableBytes { RTPPacket.writeHeader(into: $0, sequenceNumber: 4, timestamp: 0, ssrc: ssrc, audioLevel: nil) }
        #expect(throws: SRTPError.self) { try open(receiver, plain) }
        #expect(try open(receiver, try packet(sender, seq: 5)) != nil, "the genuine stream still flows")
    }

    @Test func replayIsRefused() throws {
        let k = key(0)
        let sender = try SRTPSender(ssrc: ssrc, key: k)
        let receiver = try SRTPReceiver()
        try receiver.setKey(k, for: ssrc)
        let p = try packet(sender, seq: 100)
        #expect(try open(receiver, p) != nil)
        #expect(throws: SRTPError.replayed) { try open(receiver, p) }
    }

    @Test func unknownSenderIsRefused() throws {
        let sender = try SRTPSender(ssrc: ssrc, key: key(0))
        let receiver = try SRTPReceiver()
        #expect(throws: SRTPError.unknownKey) { try open(receiver, try packet(sender, seq: 1)) }
    }

    @Test func rotationIsSeamlessAndLockedOutLeaverCannotRead() throws {
        let old = key(0), new = key(1)
        let sender = try SRTPSender(ssrc: ssrc, key: old)
        let stayer = try SRTPReceiver(), leaver = try SRTPReceiver()
        try stayer.setKey(old, for: ssrc)
        try leaver.setKey(old, for: ssrc)
        let inFlight = try packet(sender, seq: 10)
        // The room rotates: the stayer learns the new key first, then the sender switches.
        try stayer.setKey(new, for: ssrc)
        #expect(stayer.epochs(of: ssrc) == [0, 1])
        try sender.rekey(new)
        #expect(sender.epoch == 1)
        let after = try packet(sender, seq: 11)
        #expect(try open(stayer, after) != nil, "new epoch verifies")
        #expect(try open(stayer, inFlight) != nil, "a packet sent before the switch still verifies")
        #expect(throws: SRTPError.unknownKey) { try open(leaver, after) }
        // A third epoch drops the first.
        try stayer.setKey(key(2), for: ssrc)
        #expect(stayer.epochs(of: ssrc) == [1, 2])
        stayer.remove(ssrc)
        #expect(throws: SRTPError.unknownKey) { try open(stayer, try packet(sender, seq: 12)) }
    }

    @Test func wrongKeyLengthIsAClearError() {
        #expect(throws: SRTPError.badKeyLength(expected: 28, got: 16)) { try SRTPSender(ssrc: 1, key: SRTPKey(epoch: 0, material: [UInt8](repeating: 1, count: 16))) }
    }
}
