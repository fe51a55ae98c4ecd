import CallRoomTestSupport
import CallsCore
import CallsTransport
import CometChatCallsSDK
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// A burst of random and mutated datagrams, malformed HTTP and malformed WebSocket frames at a
/// live `callroomd` while a call is in progress: the server drops and counts the junk, never
/// crashes, and the call carries on.
final class RobustnessTests: XCTestCase {
    var rng = SystemRandomNumberGenerator()

    func randomBytes(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) } }

    /// Opens a TCP connection to 127.0.0.1:port, writes `bytes`, reads whatever comes for a
    /// moment, and closes.
    @discardableResult
    func tcp(port: Int, _ bytes: [UInt8], readMs: Int32 = 30) -> [UInt8] {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(port).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let ok = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard ok == 0 else { return [] }
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        // Read until the peer closes or stays quiet for `readMs` (headers and body may come apart).
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while poll(&p, 1, readMs) > 0 {
            let n = recv(fd, &buf, buf.count, 0)
            guard n > 0 else { break }
            out += buf.prefix(n)
        }
        return out
    }

    func upgrade(_ extra: [UInt8]) -> [UInt8] {
        Array("GET /v1/signal HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: callroom-signal\r\n\r\n".utf8) + extra
    }

    func testJunkDuringALiveCall() async throws {
        let tmp = TemporaryDirectory("callroom-fuzz")
        defer { tmp.remove() }
        let server = try ManagedProcess(BuiltProducts.path("callroomd"), ["--listen", "127.0.0.1:0", "--data-dir", tmp.path, "--log-level", "error"])
        let line = try XCTUnwrap(server.waitForLine { $0.hasPrefix("callroomd listening on") })
        let words = line.split(separator: " ").map(String.init)
        let url = try XCTUnwrap(URL(string: words[3]))
        let port = url.port ?? 0
        let mediaPort = Int(words[5].split(separator: ":").last ?? "") ?? 0
        let appId = words.last ?? ""
        let authKey = server.output.first { $0.contains("authKey") }?.split(separator: " ").last.map(String.init) ?? ""

        let speaker = CallsClient(serverURL: url, appID: appId, eventQueue: DispatchQueue(label: "s")) { _ in }
        let listener = CallsClient(serverURL: url, appID: appId, eventQueue: DispatchQueue(label: "l")) { _ in }
        for (c, uid, input) in [(speaker, "spk", "tone:440"), (listener, "lis", "null")] {
            _ = try await c.login(uid: uid, authKey: authKey)
            try await c.join(callToken: try await c.generateToken(sessionID: "fuzz"), sessionID: "fuzz",
                             settings: SessionSettingsBuilder().setAudioInput(input).setAudioOutput("null").build())
        }
        let speakerPID = try XCTUnwrap(speaker.localParticipantID)
        func heard() async -> Float {
            var level: Float = -127
            for _ in 0..<60 where level < -30 {
                try? await Task.sleep(nanoseconds: 30_000_000)
                level = listener.audioLevels()[speakerPID] ?? -127
            }
            return level
        }
        let before = await heard()
        XCTAssertGreaterThan(before, -30, "the call works before the burst")

        // 1. Datagrams: random, mutated RTP, truncated, bind look-alikes, from many sockets.
        let relay = try XCTUnwrap(SocketAddress(host: "127.0.0.1", port: mediaPort))
        let sockets = try (0..<8).map { _ in try UDPSocket(host: "127.0.0.1", port: 0) }
        let valid = RTPPacket(sequenceNumber: 1, timestamp: 2, ssrc: 3, audioLevel: .init(level: 1, voiceActivity: true), payload: randomBytes(60)).encoded()
        for i in 0..<6000 {
            var d: [UInt8]
            switch i % 5 {
            case 0: d = randomBytes(Int.random(in: 0...1400))
            case 1: d = valid; for _ in 0..<4 { d[Int.random(in: 0..<d.count)] ^= UInt8.random(in: 1...255) }
            case 2: d = Array(valid.prefix(Int.random(in: 0..<valid.count)))
            case 3: d = Array("CRB1".utf8) + randomBytes(Int.random(in: 0...40))
            default: d = [0x90] + randomBytes(Int.random(in: 11...30))
            }
            sockets[i % sockets.count].send(d, to: relay)
        }

        // 2. Malformed HTTP.
        let httpJunk: [[UInt8]] = [
            randomBytes(500), Array("GET / HTTP/9.9\r\n\r\n".utf8), Array("POST /v3/users HTTP/1.1\r\nContent-Length: -5\r\n\r\n".utf8),
            Array("POST /v3/users HTTP/1.1\r\nContent-Length: 99999999\r\napikey: x\r\n\r\nabc".utf8),
            Array(("GET /" + String(repeating: "a", count: 20_000) + " HTTP/1.1\r\n\r\n").utf8),
            Array("GET /healthz HTTP/1.1\r\n".utf8) + Array(repeating: Array("X-Junk: 0123456789\r\n".utf8), count: 800).flatMap { $0 },
            Array("\r\n\r\n\r\n".utf8), Array("DELETE /v3/users/%00%ff HTTP/1.1\r\n\r\n".utf8),
        ]
        for _ in 0..<10 { for j in httpJunk { tcp(port: port, j, readMs: 5) } }

        // 3. Malformed WebSocket frames after a real upgrade.
        let frames: [[UInt8]] = [
            [0x81, 0x05] + Array("hello".utf8),  // unmasked client frame
            [0x8F, 0x80, 1, 2, 3, 4],  // reserved opcode
            [0x81, 0xFF] + [UInt8](repeating: 0xFF, count: 8) + [1, 2, 3, 4],  // absurd length
            [0x01, 0x83, 0, 0, 0, 0, 0x7B, 0x7B, 0x7B],  // fragment never finished
            [0x82, 0x84, 9, 9, 9, 9] + randomBytes(4),  // binary junk
        ]
        for _ in 0..<10 {
            for f in frames { tcp(port: port, upgrade(f + randomBytes(Int.random(in: 0...64))), readMs: 5) }
            tcp(port: port, upgrade(randomBytes(300)), readMs: 5)
        }

        // The call carries on, signalling still answers, the server is alive and counted the junk.
        let after = await heard()
        XCTAssertGreaterThan(after, -30, "media still flows after the burst")
        speaker.setAudioMuted(true)
        try await Task.sleep(nanoseconds: 300_000_000)
        XCTAssertEqual(listener.participants.first { $0.pid == speakerPID }?.isAudioMuted, true, "signalling still works")
        let health = tcp(port: port, Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8), readMs: 300)
        XCTAssertTrue(String(decoding: health, as: UTF8.self).contains("\"ok\""))
        let metrics = String(decoding: tcp(port: port, Array("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".utf8), readMs: 300), as: UTF8.self)
        XCTAssertTrue(metrics.contains("callroom_relay_packets_dropped_total"), metrics)
        XCTAssertTrue(server.process.isRunning, "callroomd survived: \(server.errorOutput)")
        await speaker.leave()
        await listener.leave()
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
    }
}
