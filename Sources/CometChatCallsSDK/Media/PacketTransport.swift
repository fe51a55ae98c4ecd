import CallsCore
import CallsTransport

/// Where the engine's protected media goes: the relay's UDP socket, or the signalling
/// connection when UDP is blocked (the tunnel) — the two kinds of `MediaTransport` the SDK
/// reports. Another way out (a WebRTC leg) is one more conformance; what comes back enters
/// `MediaReceiveStage` the same way whichever it was.
///
/// Thread rules: `send` from any media thread (capture, video) at once.
protocol PacketTransport: Sendable {
    /// Sends one protected packet; false when it could not go out.
    func send(_ packet: UnsafeRawBufferPointer) -> Bool
    /// Which way this is (over signalling, media may go before the relay's acknowledgement:
    /// the server takes the connection's word for it).
    var kind: MediaTransport { get }
}

/// UDP to the relay of the room's node, from the engine's one socket.
struct RelayUDPTransport: PacketTransport {
    let socket: UDPSocket
    let relay: SocketAddress
    var kind: MediaTransport { .udp }
    func send(_ packet: UnsafeRawBufferPointer) -> Bool { socket.send(packet, to: relay) }
}

/// Binary frames on the signalling connection (UDP to the relay is blocked).
struct SignallingTunnel: PacketTransport {
    let deliver: @Sendable ([UInt8]) -> Void
    var kind: MediaTransport { .signalling }
    func send(_ packet: UnsafeRawBufferPointer) -> Bool {
        deliver(Array(packet))
        return true
    }
}
