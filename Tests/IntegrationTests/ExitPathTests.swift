import CallRoomTestSupport
import Foundation
import XCTest

/// Every way out of `callroom` leaves cleanly and says why (issue #35): SIGINT, SIGTERM and
/// SIGHUP on each ringing and call screen in tmux, the headless commands, a closed stdout, an
/// SSH connection that drops (a real sshd on loopback), and the endings the user did not choose
/// (removed by a moderator, the server shut down) with their exit statuses. The other side is a
/// headless `callroom` process that must hear of it at once, never after a grace period.
final class ExitPathTests: XCTestCase {
    var tmp: TemporaryDirectory!
    var server: CallroomdProcess!
    override func setUpWithError() throws {
        tmp = TemporaryDirectory("callroom-exits")
        server = try CallroomdProcess(dataDir: tmp.file("data"), extra: ["--log-level", "error"])
    }
    override func tearDown() {
        _ = server?.stop()
        tmp.remove()
    }

    var credentials: String { "--server \(server.url) --auth-key \(server.authKey) --input null --output null" }

    func headless(_ args: [String]) throws -> ManagedProcess {
        try ManagedProcess(BuiltProducts.path("callroom"), args + ["--server", server.url, "--auth-key", server.authKey,
                                                                   "--input", "tone:300", "--output", "null", "--headless"])
    }

    /// The pid of the `callroom` process run with `--uid uid` (not the shell or tmux around it).
    func callroomPID(uid: String, timeout: TimeInterval = 10) -> pid_t? {
        eventuallyValue(timeout, poll: 0.05) { () -> pid_t? in
            for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
                guard let pid = pid_t(entry), let raw = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { continue }
                let argv = raw.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
                guard argv.first?.hasSuffix("/callroom") == true, let i = argv.firstIndex(of: "--uid"), argv.indices.contains(i + 1),
                      argv[i + 1] == uid else { continue }
                return pid
            }
            return nil
        }
    }

    /// Whether `pid` is gone (or a zombie) within `timeout` seconds.
    func gone(_ pid: pid_t, within timeout: TimeInterval) -> Bool {
        eventually(timeout, poll: 0.02) {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
            return stat.split(separator: ")").last?.trimmingCharacters(in: .whitespaces).hasPrefix("Z") == true
        }
    }

    /// Whether `sig` waits to be delivered to process `pid` (its `ShdPnd` mask in /proc).
    static func pending(_ sig: Int32, in pid: pid_t) -> Bool {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("ShdPnd:") }),
              let mask = UInt64(line.dropFirst(7).trimmingCharacters(in: .whitespaces), radix: 16) else { return false }
        return mask & (1 << UInt64(sig - 1)) != 0
    }

    func tmuxSession(_ name: String) throws -> Tmux {
        let tmux = Tmux(session: "\(name)-\(UUID().uuidString.prefix(6))")
        try XCTSkipIf(!tmux.isAvailable, "tmux is not installed")
        return tmux
    }

    // MARK: Signals on the ringing screens

    func testASignalOnTheIdleOrIncomingScreenExitsAtOnce() throws {
        let tmux = try tmuxSession("idle")
        XCTAssertTrue(tmux.start("\(BuiltProducts.path("callroom")) listen --uid idle1 \(credentials); echo EXIT=$?; sleep 30", width: 80, height: 24))
        XCTAssertTrue(tmux.waitFor("online as idle1"), tmux.screen())
        let pid = try XCTUnwrap(callroomPID(uid: "idle1"))
        kill(pid, SIGINT)
        XCTAssertTrue(tmux.waitFor("EXIT=0", timeout: 3), "Ctrl-C from outside on the idle screen: \(tmux.screen())")

        // Ringing in: SIGTERM.
        let tmux2 = try tmuxSession("incoming")
        XCTAssertTrue(tmux2.start("\(BuiltProducts.path("callroom")) listen --uid idle2 \(credentials); echo EXIT=$?; sleep 30", width: 80, height: 24))
        XCTAssertTrue(tmux2.waitFor("online as idle2"), tmux2.screen())
        let caller = try headless(["call", "idle2", "--uid", "ringer"])
        XCTAssertTrue(tmux2.waitFor("Incoming call"), tmux2.screen())
        kill(try XCTUnwrap(callroomPID(uid: "idle2")), SIGTERM)
        XCTAssertTrue(tmux2.waitFor("EXIT=0", timeout: 3), "kill -TERM while a call rings in: \(tmux2.screen())")
        // The caller hears at once that it was declined, not at the timeout.
        XCTAssertNotNil(caller.waitForLine(timeout: 3) { $0.contains(#""event":"onOutgoingCallRejected""#) }, "\(caller.output.suffix(2))")
        XCTAssertEqual(caller.wait(timeout: 5), 4)
    }

    func testAHangupWhileRingingOutCancelsTheCallForTheCallee() throws {
        let tmux = try tmuxSession("out")
        let callee = try headless(["listen", "--uid", "callee"])
        XCTAssertNotNil(callee.waitForLine { $0.contains(#""event":"listening""#) }, callee.errorOutput)
        XCTAssertTrue(tmux.start("\(BuiltProducts.path("callroom")) call callee --uid dialer \(credentials); echo EXIT=$?; sleep 30", width: 80, height: 24))
        XCTAssertNotNil(callee.waitForLine { $0.contains(#""event":"onIncomingCallReceived""#) }, "\(callee.output)")
        kill(try XCTUnwrap(callroomPID(uid: "dialer")), SIGHUP)
        let sent = Date()
        XCTAssertNotNil(callee.waitForLine(timeout: 3) { $0.contains(#""event":"onIncomingCallCancelled""#) },
                        "the ring stops at once for the callee: \(callee.output.suffix(3))")
        XCTAssertLessThan(Date().timeIntervalSince(sent), 3)
        XCTAssertTrue(tmux.waitFor("EXIT=4", timeout: 3), "cancelled: did not connect \(tmux.screen())")
    }

    // MARK: Signals on the call screen and the summary

    /// `caller` calls `callee` (headless, answering at once) from the call screen in tmux at 80×24
    /// (the shell prints `EXIT=status` after it); returns once both are in the call.
    func callOnTheScreen(caller: String, callee: String) throws -> (Tmux, ManagedProcess) {
        let tmux = try tmuxSession(caller)
        let other = try headless(["listen", "--uid", callee, "--auto-accept"])
        XCTAssertNotNil(other.waitForLine { $0.contains(#""event":"listening""#) }, other.errorOutput)
        XCTAssertTrue(tmux.start("\(BuiltProducts.path("callroom")) call \(callee) --uid \(caller) \(credentials); echo EXIT=$?; sleep 30", width: 80, height: 24))
        XCTAssertTrue(tmux.waitFor("2 participants"), tmux.screen())
        return (tmux, other)
    }

    /// `callroom call` on the call screen: SIGTERM leaves, the callee hears the call end within
    /// 3 s, the summary on the shell says "You left", and the status is 0.
    func testSIGTERMOnTheCallScreenLeavesEndsTheCallAndPrintsTheSummary() throws {
        let (tmux, bob) = try callOnTheScreen(caller: "ann", callee: "bob")
        kill(try XCTUnwrap(callroomPID(uid: "ann")), SIGTERM)
        let sent = Date()
        XCTAssertNotNil(bob.waitForLine(timeout: 3) { $0.contains(#""event":"onCallEndedMessageReceived""#) },
                        "bob hears the call end at once: \(bob.output.suffix(3))")
        XCTAssertLessThan(Date().timeIntervalSince(sent), 3)
        XCTAssertTrue(tmux.waitFor("EXIT=0", timeout: 4), tmux.screen())
        XCTAssertTrue(tmux.screen().contains("ended           You left"), "the summary on the shell: \(tmux.screen())")
        XCTAssertEqual(bob.wait(timeout: 10), 0)
        XCTAssertTrue(bob.output.contains { $0.contains(#""message":"ann ended the call""#) }, "bob's ending: \(bob.output.suffix(2))")
    }

    /// `callroom listen` that answered on the screen: SIGHUP (the terminal went) leaves the call
    /// and exits — it does not go back online on the idle screen.
    func testSIGHUPOnAnAnsweredCallExitsInsteadOfGoingBackOnline() throws {
        let tmux = try tmuxSession("callhup")
        XCTAssertTrue(tmux.start("\(BuiltProducts.path("callroom")) listen --uid cal \(credentials); echo EXIT=$?; sleep 30", width: 80, height: 24))
        XCTAssertTrue(tmux.waitFor("online as cal"), tmux.screen())
        let dee = try headless(["call", "cal", "--uid", "dee"])
        XCTAssertTrue(tmux.waitFor("Incoming call"), tmux.screen())
        tmux.keys("a")
        XCTAssertTrue(tmux.waitFor("2 participants"), tmux.screen())
        kill(try XCTUnwrap(callroomPID(uid: "cal")), SIGHUP)
        XCTAssertNotNil(dee.waitForLine(timeout: 3) { $0.contains(#""event":"onSessionLeft""#) }, "dee's call ends at once: \(dee.output.suffix(3))")
        XCTAssertTrue(tmux.waitFor("EXIT=0", timeout: 4), tmux.screen())
        XCTAssertEqual(dee.wait(timeout: 10), 0)
    }

    /// A terminal that goes away is told twice: the kernel's SIGHUP to the session leader and the
    /// call screen's own check of its terminal (which sends one more). The second is the same
    /// news, not an impatient user: the call is still left and the other side hears at once
    /// (it forced an exit before the leave was sent — a dropped SSH connection left a ghost).
    func testAHangupToldTwiceStillLeavesTheCall() throws {
        let (tmux, bob) = try callOnTheScreen(caller: "hann", callee: "hbob")
        let pid = try XCTUnwrap(callroomPID(uid: "hann"))
        kill(pid, SIGHUP)
        // Two signals, not one: the first taken (no longer pending) before the second is sent.
        XCTAssertTrue(eventually(2, poll: 0.001) { !Self.pending(SIGHUP, in: pid) })
        kill(pid, SIGHUP)
        XCTAssertNotNil(bob.waitForLine(timeout: 3) { $0.contains(#""event":"onCallEndedMessageReceived""#) },
                        "bob hears the call end at once: \(bob.output.suffix(3))")
        XCTAssertTrue(tmux.waitFor("EXIT=0", timeout: 4), tmux.screen())
        XCTAssertEqual(bob.wait(timeout: 10), 0)
        XCTAssertTrue(bob.output.contains { $0.contains(#""message":"hann ended the call""#) }, "bob's ending: \(bob.output.suffix(2))")
    }

    /// A signal while the summary waits for its key exits at once.
    func testSIGINTOnTheSummaryExitsAtOnce() throws {
        let tmux = try tmuxSession("summary")
        XCTAssertTrue(tmux.start("\(BuiltProducts.path("callroom")) join room-s --uid sum \(credentials); echo EXIT=$?; sleep 30", width: 80, height: 24))
        XCTAssertTrue(tmux.waitFor("1 participant"), tmux.screen())
        tmux.keys("l")
        tmux.keys("Enter")  // the prompt says Enter confirms
        XCTAssertTrue(tmux.waitFor("Press any key to exit"), tmux.screen())
        kill(try XCTUnwrap(callroomPID(uid: "sum")), SIGINT)
        XCTAssertTrue(tmux.waitFor("EXIT=0", timeout: 3), tmux.screen())
    }

    // MARK: Headless

    func testHeadlessCallLeavesOnSIGTERMAndTheCalleeHearsAtOnce() throws {
        let bob = try headless(["listen", "--uid", "hbob", "--auto-accept"])
        XCTAssertNotNil(bob.waitForLine { $0.contains(#""event":"listening""#) }, bob.errorOutput)
        let ann = try headless(["call", "hbob", "--uid", "hann"])
        XCTAssertNotNil(ann.waitForLine { $0.contains(#""event":"onSessionJoined""#) }, "\(ann.output)")
        XCTAssertNotNil(bob.waitForLine { $0.contains(#""event":"onSessionJoined""#) }, "\(bob.output.suffix(3))")
        ann.signal(SIGTERM)
        XCTAssertNotNil(bob.waitForLine(timeout: 3) { $0.contains(#""event":"onCallEndedMessageReceived""#) }, "\(bob.output.suffix(3))")
        XCTAssertEqual(ann.wait(timeout: 4), 0, "a clean leave is \"You left\": \(ann.output.suffix(3))")
        XCTAssertTrue(ann.output.contains { $0.contains(#""event":"onSessionLeft""#) }, "it left before exiting")
        XCTAssertTrue(ann.output.contains { $0.contains(#""ending":"left""#) }, "\(ann.output.suffix(3))")
    }

    /// `callroom join --headless | head -1`: once nobody reads stdout the client leaves cleanly
    /// (others see `left`, not a disconnect after the grace period) and exits 0 — no trap.
    func testHeadlessWhoseStdoutClosesLeavesCleanly() throws {
        let watcher = try headless(["join", "room-pipe", "--uid", "watcher"])
        XCTAssertNotNil(watcher.waitForLine { $0.contains(#""event":"onSessionJoined""#) }, watcher.errorOutput)
        let script = "\(BuiltProducts.path("callroom")) join room-pipe --uid piped --headless \(credentials) < /dev/zero | head -1 > /dev/null; "
            + "echo STATUS=${PIPESTATUS[0]}"
        let shell = try ManagedProcess("/bin/bash", ["-c", script])
        XCTAssertNotNil(watcher.waitForLine(timeout: 15) { $0.contains(#""event":"onParticipantLeft""#) && $0.contains(#""leftReason":"left""#) },
                        "the piped client left cleanly: \(watcher.output.suffix(3))")
        XCTAssertNotNil(shell.waitForLine(timeout: 10) { $0 == "STATUS=0" }, "\(shell.output) \(shell.errorOutput)")
        // Online with nothing to print, the reader going is noticed all the same (and it goes offline).
        let idle = "\(BuiltProducts.path("callroom")) listen --uid piped2 --headless \(credentials) | head -1 > /dev/null; echo STATUS=${PIPESTATUS[0]}"
        let listen = try ManagedProcess("/bin/bash", ["-c", idle])
        XCTAssertNotNil(listen.waitForLine(timeout: 8) { $0 == "STATUS=0" }, "\(listen.output) \(listen.errorOutput)")
    }

    // MARK: Endings the user did not choose

    func testRemovedAndServerShutdownSayWhatHappenedWithTheirExitStatus() throws {
        let mod = try headless(["join", "room-end", "--uid", "grace", "--name", "Grace"])
        XCTAssertNotNil(mod.waitForLine { $0.contains(#""event":"onSessionJoined""#) }, mod.errorOutput)
        let tmux = try tmuxSession("removed")
        XCTAssertTrue(tmux.start("\(BuiltProducts.path("callroom")) join room-end --uid victor \(credentials); echo EXIT=$?; sleep 30", width: 80, height: 24))
        guard let joined = mod.waitForLine(timeout: 15, { $0.contains(#""event":"onParticipantJoined""#) && $0.contains(#""uid":"victor""#) }),
              let object = try? JSONSerialization.jsonObject(with: Data(joined.utf8)) as? [String: Any],
              let pid = (object["participant"] as? [String: Any])?["pid"] as? String else {
            return XCTFail("victor joined: \(mod.output.suffix(3))")
        }
        mod.send("remove-participant \(pid)")
        XCTAssertTrue(tmux.waitFor("You were removed by Grace", timeout: 10), tmux.screen())
        tmux.keys("x")
        XCTAssertTrue(tmux.waitFor("EXIT=5"), tmux.screen())
        XCTAssertTrue(tmux.screen().contains("ended           You were removed by Grace"), tmux.screen())

        // The server stops: Grace's headless client says so and exits 6.
        _ = server.stop()
        XCTAssertEqual(mod.wait(timeout: 10), 6, "\(mod.output.suffix(2))")
        XCTAssertTrue(mod.output.contains { $0.contains(#""ending":"serverShutdown""#) && $0.contains("The server shut down") }, "\(mod.output.suffix(2))")
    }

    // MARK: The truth on screen

    /// The server dies: a full-width banner counts the grace period, the tiles go stale and the
    /// quality badge greys out; the server back (same address), the session comes back and the
    /// banner goes.
    func testLosingTheServerShowsABannerUntilItIsBack() throws {
        _ = server.stop()
        let listen = "127.0.0.1:\(try FreePort.tcp())"
        server = try CallroomdProcess(dataDir: tmp.file("data2"), listen: listen, extra: ["--log-level", "error"])
        let tmux = try tmuxSession("banner")
        XCTAssertTrue(tmux.start("LANG=C.UTF-8 \(BuiltProducts.path("callroom")) join room-b --uid lost \(credentials); echo EXIT=$?; sleep 30",
                                 width: 80, height: 24))
        XCTAssertTrue(tmux.waitFor("1 participant"), tmux.screen())
        server.process.signal(SIGKILL)
        _ = server.process.wait(timeout: 5)
        XCTAssertTrue(tmux.waitFor("Connection lost — retrying"), tmux.screen())
        XCTAssertTrue(tmux.waitFor(" s of 30"), "the grace period counted: \(tmux.screen())")
        server = try CallroomdProcess(dataDir: tmp.file("data2"), listen: listen, extra: ["--log-level", "error"])
        eventually(20, poll: 0.1) { !tmux.screen().contains("Connection lost") }
        XCTAssertFalse(tmux.screen().contains("Connection lost"), "back again, the banner goes: \(tmux.screen())")
        XCTAssertTrue(tmux.waitFor("in call"), tmux.screen())
    }

    /// The server crashes while recording: the session comes back (a rejoin) and so does the
    /// recording — everyone hears the old one stopped (REC never shows over nothing) and a new
    /// one started by the returning moderator; the cut one is finalised and listed.
    func testARecordingCutByACrashResumesWithTheCall() throws {
        _ = server.stop()
        let listen = "127.0.0.1:\(try FreePort.tcp())"
        server = try CallroomdProcess(dataDir: tmp.file("data3"), listen: listen, extra: ["--log-level", "error"])
        let kim = try headless(["join", "taped", "--uid", "kim"])
        XCTAssertNotNil(kim.waitForLine { $0.contains(#""event":"onSessionJoined""#) }, kim.errorOutput)
        let lou = try headless(["join", "taped", "--uid", "lou"])
        XCTAssertNotNil(lou.waitForLine { $0.contains(#""event":"onSessionJoined""#) }, lou.errorOutput)
        kim.send("start-recording")  // the first to join moderates
        XCTAssertNotNil(lou.waitForLine { $0.contains(#""event":"onRecordingStarted""#) }, "\(lou.output.suffix(3))")
        Thread.sleep(forTimeInterval: 1.5)  // a second or so on disk
        server.process.signal(SIGKILL)
        _ = server.process.wait(timeout: 5)
        let apiKey = server.apiKey
        server = try CallroomdProcess(dataDir: tmp.file("data3"), listen: listen, extra: ["--log-level", "error"])
        for p in [kim, lou] {
            XCTAssertNotNil(p.waitForLine(timeout: 20) { $0.contains(#""event":"onSessionRejoined""#) }, "\(p.output.suffix(3))")
            let rejoined = p.output.lastIndex { $0.contains(#""event":"onSessionRejoined""#) } ?? 0
            XCTAssertNotNil(p.waitForLine(timeout: 5) { _ in p.output[rejoined...].contains { $0.contains(#""event":"onRecordingStopped""#) } },
                            "the lost one is over: \(p.output.suffix(3))")
            XCTAssertNotNil(p.waitForLine(timeout: 15) { _ in p.output[rejoined...].contains { $0.contains(#""event":"onRecordingStarted""#) } },
                            "and recording goes on with the call: \(p.output.suffix(4))")
        }
        // Both recordings are kept: the cut one finalised at the restart, the resumed one when it stops.
        for p in [kim, lou] { p.send("stop-recording") }  // (whichever came back first moderates now)
        XCTAssertNotNil(lou.waitForLine(timeout: 10) { _ in lou.output.filter { $0.contains(#""event":"onRecordingStopped""#) }.count >= 2 },
                        "\(lou.output.suffix(3))")
        // The recorder finishes its files and row a moment after it says it stopped.
        var calls: [String: Any] = [:]
        func recordings() -> [[String: Any]] {
            calls = BlockingHTTP.request("GET", server.url + "/v3/calls?sessionId=taped", headers: ["apikey": apiKey]).json
            return (calls["data"] as? [[String: Any]] ?? []).flatMap { ($0["recordings"] as? [[String: Any]]) ?? [] }
        }
        eventually(5, poll: 0.1) { recordings().count >= 2 }
        let rows = recordings()
        XCTAssertEqual(rows.count, 2, "the cut recording and the resumed one: \(calls)")
    }

    // MARK: SSH

    /// The call screen over a real SSH connection: the client dies (the connection drops) and
    /// within 3 s the remote `callroom` is gone and the other side has heard the call end.
    func testADroppedSSHConnectionLeavesTheCallWithinThreeSeconds() throws {
        try XCTSkipIf(!SSHServer.isInstalled, "openssh-server is not installed (scripts/install-deps.sh installs it)")
        try XCTSkipIf(getuid() != 0, "sshd needs root here")
        let sshd = try SSHServer()
        let bob = try headless(["listen", "--uid", "sbob", "--auto-accept"])
        XCTAssertNotNil(bob.waitForLine { $0.contains(#""event":"listening""#) }, bob.errorOutput)
        let remote = "TERM=xterm-256color \(BuiltProducts.path("callroom")) call sbob --uid sann \(credentials)"
        let ssh = try ManagedProcess("/usr/bin/ssh", sshd.sshArguments(remote))
        // Sann in bob's call: a join after bob's, or already in the list bob got (who joins first
        // after the accept is a race).
        XCTAssertNotNil(bob.waitForLine(timeout: 20) {
            ($0.contains(#""event":"onParticipantJoined""#) || $0.contains(#""event":"onParticipantListChanged""#)) && $0.contains(#""uid":"sann""#)
        }, "the call over SSH connected: \(bob.output.suffix(3)) \(ssh.errorOutput) \(sshd.log)")
        let pid = try XCTUnwrap(callroomPID(uid: "sann"), "the remote callroom runs")
        XCTAssertTrue(holds(for: 1, poll: 0.05) { !bob.output.contains { $0.contains(#""event":"onCallEndedMessageReceived""#) } },
                       "still in the call before the drop: \(ssh.output.suffix(5)) \(ssh.errorOutput)")
        ssh.signal(SIGKILL)  // the connection drops as a closed laptop or a lost network would
        let dropped = Date()
        XCTAssertNotNil(bob.waitForLine(timeout: 3) { $0.contains(#""event":"onCallEndedMessageReceived""#) || $0.contains(#""event":"onSessionLeft""#) },
                        "the other side hears at once: \(bob.output.suffix(3))")
        XCTAssertTrue(gone(pid, within: max(0.1, 3 - Date().timeIntervalSince(dropped))), "the remote callroom is gone, not a ghost")
        XCTAssertNotNil(bob.waitForLine(timeout: 3) { $0.contains(#""message":"sann ended the call""#) }, "\(bob.output.suffix(2))")
        XCTAssertEqual(bob.wait(timeout: 10), 0, "\(bob.output.suffix(4))")
    }
}
