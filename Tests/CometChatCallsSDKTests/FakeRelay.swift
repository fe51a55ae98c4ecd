import CallsCore
import CallsTransport
import Foundation
import Synchronization

/// A relay on a real UDP socket on loopback for the media engine's tests, with the real relay's
/// handshake: a bind is answered with a consent challenge, and the response with an
/// acknowledgement — from `delay` after the first bind on (nil: never; `acking` switches it off
/// and on). It counts the media (anything else) that came before the first response, which the
/// real relay drops as unbound, and after.
final class FakeRelay: @unchecked Sendable {
    let socket: UDPSocket
    let delay: Double?
    private let running = Atomic<Bool>(true)
    let acking = Atomic<Bool>(true)
    let binds = Atomic<Int>(0)
    let mediaBeforeAck = Atomic<Int>(0)
    let mediaAfterAck = Atomic<Int>(0)

    init(ackAfter delay: Double?) throws {
        socket = try UDPSocket(host: "127.0.0.1", port: 0)
        self.delay = delay
        let t = Thread { [self] in self.loop() }
        t.start()
    }

    private func loop() {
        let buf = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 8)
        defer { buf.deallocate() }
        var firstBind: Date?
        var acked = false
        while running.load(ordering: .acquiring) {
            guard socket.waitReadable(timeoutMs: 20) else { continue }
            while let (n, from) = socket.receive(into: buf) {
                let d = UnsafeRawBufferPointer(rebasing: buf[0..<n])
                if let response = MediaBinding.parseResponse(d) {
                    acked = true
                    _ = socket.send(MediaBinding.encodeAck(ssrc: response.ssrc), to: from)
                    continue
                }
                guard let bind = MediaBinding.parseBind(d) else {
                    if acked { mediaAfterAck.add(1, ordering: .relaxed) } else { mediaBeforeAck.add(1, ordering: .relaxed) }
                    continue
                }
                binds.add(1, ordering: .relaxed)
                let since = firstBind ?? Date()
                firstBind = since
                // (The engine re-binds every 10 frames until acknowledged.)
                guard let delay, acking.load(ordering: .acquiring), Date().timeIntervalSince(since) >= delay else { continue }
                let nonce = (0..<MediaBinding.nonceLength).map { _ in UInt8.random(in: 0...255) }
                _ = socket.send(MediaBinding.encodeChallenge(.init(ssrc: bind.ssrc, nonce: nonce)), to: from)
            }
        }
    }

    func stop() { running.store(false, ordering: .releasing) }
}
