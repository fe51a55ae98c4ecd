import CallsCore

/// The MACs of the media bind and consent handshake (`MediaBinding` has the layout): what a
/// client computes from its bind token, and what the relay checks.
///
/// A value type; safe from any thread.
public struct MediaConsent: Sendable, Equatable {
    public let ssrc: UInt32
    private let token: [UInt8]

    /// The participant's SSRC and the bind token from its `joined` message.
    public init(ssrc: UInt32, token: [UInt8]) {
        self.ssrc = ssrc
        self.token = token
    }

    /// The bind datagram to send to the relay (until acknowledged).
    public var bindDatagram: [UInt8] { MediaBinding.encodeBind(.init(ssrc: ssrc, proof: proof)) }

    /// HMAC-SHA256(token, "CRB2" ‖ ssrc), truncated.
    public var proof: [UInt8] { Array(Crypto.hmacSHA256(key: token, message: MediaBinding.bindMessage(ssrc: ssrc)).prefix(MediaBinding.macLength)) }

    /// HMAC-SHA256(token, "CRR1" ‖ ssrc ‖ nonce), truncated.
    public func mac(nonce: [UInt8]) -> [UInt8] {
        Array(Crypto.hmacSHA256(key: token, message: MediaBinding.responseMessage(ssrc: ssrc, nonce: nonce)).prefix(MediaBinding.macLength))
    }

    /// The response to `datagram` if it is a consent challenge for this participant.
    public func answer(_ datagram: UnsafeRawBufferPointer) -> [UInt8]? {
        guard let c = MediaBinding.parseChallenge(datagram), c.ssrc == ssrc else { return nil }
        return MediaBinding.encodeResponse(.init(ssrc: ssrc, nonce: c.nonce, mac: mac(nonce: c.nonce)))
    }

    /// The relay's check of a bind's proof (constant time).
    public func verifies(_ bind: MediaBinding.Bind) -> Bool {
        bind.ssrc == ssrc && Crypto.constantTimeEqual(bind.proof, proof)
    }

    /// The relay's check of a response to the challenge that carried `nonce` (constant time).
    public func verifies(_ response: MediaBinding.Response, nonce: [UInt8]) -> Bool {
        response.ssrc == ssrc && Crypto.constantTimeEqual(response.nonce, nonce) && Crypto.constantTimeEqual(response.mac, mac(nonce: nonce))
    }
}

extension MediaConsent {
    /// The client's side of bind + consent, for tools and tests with a plain socket: sends the
    /// bind, answers the challenge, and returns true once acknowledged (up to `attempts` binds,
    /// each waiting up to `timeoutMs` per datagram). `receive` returns the next datagram from
    /// the relay, or nil on timeout; datagrams that are neither challenge nor ack are skipped.
    public func handshake(attempts: Int = 3, timeoutMs: Int32 = 1000, send: ([UInt8]) -> Void,
                          receive: (Int32) -> [UInt8]?) -> Bool {
        for _ in 0..<attempts {
            send(bindDatagram)
            var answered = false
            while let d = receive(timeoutMs) {
                if let ack = d.withUnsafeBytes({ MediaBinding.parseAck($0) }), ack == ssrc, answered { return true }
                if let r = d.withUnsafeBytes({ answer($0) }) {
                    send(r)
                    answered = true
                }
            }
        }
        return false
    }
}
