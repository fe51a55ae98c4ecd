import CallRoomTestSupport
import Foundation
import XCTest

/// Leaving, many times over, as the rare crash on leave happened (issue #35: SIGSEGV in
/// libcrypto on the playback thread, about 1 in 57 two-party calls with TLS and chat; SIGABRT
/// once in CI): two headless clients over TLS join, talk, chat and leave, in several rooms at
/// once; every one must leave cleanly and exit 0. `scripts/stress-leaves.sh N` runs the same
/// loop for longer (500 leaves before a release).
final class LeaveStressTests: XCTestCase {
    func testTwoPartyLeavesOverTLSWithChatNeverCrash() throws {
        let tmp = TemporaryDirectory("callroom-leaves")
        defer { tmp.remove() }
        let server = try CallroomdProcess(dataDir: tmp.file("data"), extra: ["--tls-self-signed", "--log-level", "error"])
        defer { _ = server.stop() }
        let rounds = 16, roomsAtOnce = 3
        var failures: [String] = []
        for round in 1...rounds {
            var clients: [(String, ManagedProcess)] = []
            for room in 1...roomsAtOnce {
                for (side, tone) in [("a", "300"), ("b", "500")] {
                    let uid = "\(side)\(round)x\(room)"
                    let p = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "stress-\(round)-\(room)", "--uid", uid, "--server", server.url,
                                                                                "--auth-key", server.authKey, "--insecure", "--input", "tone:\(tone)",
                                                                                "--output", "null", "--headless"])
                    clients.append((uid, p))
                }
            }
            for (uid, p) in clients where p.waitForLine(timeout: 15, { $0.contains(#""event":"onSessionJoined""#) }) == nil {
                failures.append("\(uid) did not join: \(p.errorOutput)")
            }
            for (uid, p) in clients { p.send("send-chat hello from \(uid)") }
            Thread.sleep(forTimeInterval: 0.6)  // media and chat both ways while the leave comes
            for (_, p) in clients { p.send("leave") }
            for (uid, p) in clients {
                let status = p.wait(timeout: 10)
                if status != 0 { failures.append("\(uid): exit \(status.map(String.init) ?? "none (stuck)")\n\(p.errorOutput)\n\(p.stackDump())") }
                else if !p.output.contains(where: { $0.contains(#""event":"onSessionLeft""#) }) { failures.append("\(uid): no onSessionLeft") }
            }
        }
        XCTAssertTrue(failures.isEmpty, "\(failures.count) of \(rounds * roomsAtOnce * 2) leaves failed:\n" + failures.joined(separator: "\n"))
    }
}
