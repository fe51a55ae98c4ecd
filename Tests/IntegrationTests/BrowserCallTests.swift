import CallRoomTestSupport
import CallsSecurity
import Foundation
import XCTest

/// A real browser in a room (issue #37): Debian's Chromium, headless, opens the invite link,
/// joins by the page (name, Join), and its media go over WebRTC through callroomd's gateway —
/// ICE-lite, DTLS-SRTP, its RTP rewritten to CallRoom's form and back.
final class BrowserCallTests: XCTestCase {
    /// A mono 16-bit WAV of `hz` for `seconds` (the browser's fake microphone plays it in a loop).
    static func toneWAV(_ path: String, hz: Double, seconds: Double = 10, rate: Int = 48_000) throws {
        let n = Int(seconds * Double(rate))
        var data = Data()
        func le<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
        data.append(contentsOf: Array("RIFF".utf8)); le(UInt32(36 + n * 2)); data.append(contentsOf: Array("WAVEfmt ".utf8))
        le(UInt32(16)); le(UInt16(1)); le(UInt16(1)); le(UInt32(rate)); le(UInt32(rate * 2)); le(UInt16(2)); le(UInt16(16))
        data.append(contentsOf: Array("data".utf8)); le(UInt32(n * 2))
        for i in 0..<n { le(Int16(8000 * sin(2 * Double.pi * hz * Double(i) / Double(rate)))) }
        try data.write(to: URL(fileURLWithPath: path))
    }

    /// Types `name` on the page and clicks Join (with `video`) or Join with audio only.
    static func clickJoin(_ browser: HeadlessChromium, _ page: HeadlessChromium.Page, name: String, video: Bool = true) throws {
        _ = try browser.evaluate(page, "document.getElementById('name').value = \(String(reflecting: name)); document.getElementById('\(video ? "join" : "join-audio")').click(); true")
    }

    /// The pid of the participant `uid` in the page's roster, when it is there.
    static func pid(_ browser: HeadlessChromium, _ page: HeadlessChromium.Page, uid: String) throws -> String? {
        try browser.evaluate(page, "[...window.callroom.roster.values()].find(p => p.uid === \(String(reflecting: uid)))?.pid") as? String
    }

    /// A config file asking every media address for consent every 300 ms and stopping media to
    /// one silent for 1.5 s (RFC 7675's 5 s and 30 s, shortened: a test's call outlasts them).
    static func shortConsent(_ tmp: TemporaryDirectory) throws -> String {
        let path = tmp.path + "/consent.json"
        try #"{"mediaConsentIntervalMs": 300, "mediaConsentTimeoutMs": 1500}"#.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The page's element `id` is shown and its text contains `text` (a page-side expression).
    static func says(_ id: String, _ text: String) -> String {
        "(() => { const e = document.getElementById(\(String(reflecting: id))); return !!e && !e.classList.contains('hidden') && e.textContent.includes(\(String(reflecting: text))); })()"
    }

    /// How many frames the terminal's `--video-out` files of `pid` hold, by file name (PID.y4m,
    /// PID-WxH.y4m: one a frame size).
    static func dumpedFrames(_ dir: String, pid: String) -> [String: Int] {
        var out: [String: Int] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] where name.hasPrefix(pid) && name.hasSuffix(".y4m") {
            if let n = y4mFrames(dir + "/" + name) { out[name] = n }
        }
        return out
    }

    /// The whole frames of the (growing) Y4M file at `path`, from its header and length: every
    /// frame is `FRAME\n` and W×H×1.5 bytes (counting `FRAME` markers in the file copied it whole
    /// for each search); nil when it holds no header yet.
    static func y4mFrames(_ path: String) -> Int? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        let head = (try? handle.read(upToCount: 128)) ?? Data()
        guard let end = head.firstIndex(of: 10), let length = try? handle.seekToEnd() else { return nil }
        var width = 0, height = 0
        for field in String(decoding: head[..<end], as: UTF8.self).split(separator: " ") {
            if field.first == "W" { width = Int(field.dropFirst()) ?? 0 }
            if field.first == "H" { height = Int(field.dropFirst()) ?? 0 }
        }
        guard width > 0, height > 0 else { return nil }
        return (Int(length) - (end + 1)) / (6 + width * height * 3 / 2)
    }

    /// Whether the Y4M file at `path` holds at least `frames` whole frames.
    static func y4m(_ path: String, holdsAtLeast frames: Int) -> Bool { (y4mFrames(path) ?? 0) >= frames }

    /// All along the browser answered the server's consent checks (`shortConsent`: every 240–360
    /// ms, a 1.5 s timeout): its media never stopped, and it answers them still.
    func assertConsentKept(_ server: CallroomdProcess, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(Self.metric(server, "callroom_webrtc_consent_expired_total"), 0, "a browser's consent ran out", file: file, line: line)
        let answered = { Self.metric(server, #"callroom_webrtc_address_checks_total{outcome="answered"}"#) ?? 0 }
        let before = answered()
        XCTAssertTrue(eventually(3, poll: 0.1) { answered() >= before + 4 }, "the browser answers consent checks: \(answered() - before) in 3 s",
                      file: file, line: line)
    }

    /// The page's media are through: its peer connection is `connected`.
    static let mediaConnected = "window.callroom.pc && window.callroom.pc.connectionState === 'connected'"

    /// A guest invite link for `session` (the operator's).
    static func invite(_ server: CallroomdProcess, session: String) -> String? {
        let r = BlockingHTTP.request("POST", server.url + "/v3/rooms/\(session)/invites", headers: ["apikey": server.apiKey, "appId": server.appId],
                                     body: #"{"role":"guest","maxUses":10}"#)
        return r.data["link"] as? String
    }

    /// How loud `hz` is against other frequencies in what the page receives from `pid` (WebAudio
    /// on the remote stream, an FFT over a second): dB of the tone's bin over the loudest other.
    static func heard(_ browser: HeadlessChromium, _ page: HeadlessChromium.Page, pid: String, hz: Double) throws -> Double? {
        try browser.evaluate(page, heardScript(pid: pid, hz: hz)) as? Double
    }

    /// `heard` at its clearest over up to six tries (it stops at the first over 20 dB).
    static func clearest(_ browser: HeadlessChromium, _ page: HeadlessChromium.Page, pid: String, hz: Double) throws -> Double {
        var best = -Double.infinity
        for _ in 0..<6 where best < 20 { best = max(best, try heard(browser, page, pid: pid, hz: hz) ?? -Double.infinity) }
        return best
    }

    /// Whether the browsers' media go on reaching the room: `packets` more re-protected by the gateway within 10 s.
    static func browsersKeepReaching(_ server: CallroomdProcess, packets: Int) -> Bool {
        let toRoom = { Int(metric(server, "callroom_webrtc_packets_to_room_total") ?? 0) }
        let before = toRoom()
        return eventually(10, poll: 0.1) { toRoom() >= before + packets }
    }

    /// In how many 100 ms windows of the WAV at `path` the tone `hz` stands out.
    static func windowsCarrying(_ path: String, hz: Double) throws -> (carrying: Int, of: Int) {
        let wav = try XCTUnwrap(SignalAnalysis.readWAV(path), "no WAV at \(path)")
        let r = SignalAnalysis.windowsCarrying(wav.samples, tone: hz, over: [440, 250, 1500, 3000].filter { $0 != hz })
        return (r.carrying, r.of)
    }

    /// The page-side measurement of `heard` (any browser).
    static func heardScript(pid: String, hz: Double) -> String {
        """
            (async () => {
              const s = window.callroom.streams.get(\(String(reflecting: pid)));
              if (!s || !s.getAudioTracks().length) return null;
              const ctx = new AudioContext();
              const an = ctx.createAnalyser(); an.fftSize = 8192; an.smoothingTimeConstant = 0.5;
              ctx.createMediaStreamSource(s).connect(an);
              await new Promise(r => setTimeout(r, 1500));
              const bins = new Float32Array(an.frequencyBinCount); an.getFloatFrequencyData(bins);
              const bin = (f) => Math.round(f * an.fftSize / ctx.sampleRate);
              const tone = Math.max(bins[bin(\(hz)) - 1], bins[bin(\(hz))], bins[bin(\(hz)) + 1]);
              let other = -Infinity;
              for (const f of [150, 250, 700, 1000, 1500, 2500, 4000]) other = Math.max(other, bins[bin(f)]);
              ctx.close();
              return tone - other;
            })()
            """
    }

    /// A counter of the server's /metrics (the first line of that name, labels included).
    static func metric(_ server: CallroomdProcess, _ name: String) -> Double? {
        BlockingHTTP.request("GET", server.url + "/metrics").text.split(separator: "\n")
            .first { $0.hasPrefix(name + " ") || $0.hasPrefix(name + "{") }.flatMap { $0.split(separator: " ").last.flatMap { Double($0) } }
    }

    /// The browser's RTP counters (for a failing test's message).
    static func stats(_ browser: HeadlessChromium, _ page: HeadlessChromium.Page) -> String {
        ((try? browser.evaluate(page, statsScript)) as? String) ?? "no stats"
    }

    /// The page-side listing of `stats` (any browser).
    static let statsScript = """
            (async () => {
              const out = [];
              (await window.callroom.pc.getStats()).forEach(r => {
                if (r.type === 'inbound-rtp' || r.type === 'outbound-rtp') out.push(r.type + ' ' + r.kind + ' ssrc ' + r.ssrc + ' packets ' + (r.packetsReceived ?? r.packetsSent) + ' bytes ' + (r.bytesReceived ?? r.bytesSent) + (r.totalAudioEnergy !== undefined ? ' energy ' + r.totalAudioEnergy : '') + (r.framesDecoded !== undefined ? ' frames ' + r.framesDecoded : ''));
                if (r.type === 'transport') out.push('transport dtls ' + r.dtlsState + ' srtp ' + r.srtpCipher);
              });
              return out.join('\\n') + '\\nOFFER\\n' + window.callroom.pc.localDescription.sdp + '\\nANSWER\\n' + window.callroom.pc.remoteDescription.sdp + '\\nTRANSCEIVERS ' + window.callroom.pc.getTransceivers().map(t => t.mid + ':' + t.direction + '/' + t.currentDirection).join(' ');
            })()
            """

    /// One browser and one terminal: each hears the other's tone, each decodes the other's
    /// video, and mute, hand, chat and leave are seen both ways.
    func testABrowserAndATerminalHearSeeAndFollowEachOther() throws {
        let tmp = TemporaryDirectory("callroom-browser")
        defer { tmp.remove() }
        let callroomd = try CallroomdProcess(dataDir: tmp.path + "/data", extra: ["--config", try Self.shortConsent(tmp)])
        defer { _ = callroomd.stop() }
        guard let link = Self.invite(callroomd, session: "web") else { return XCTFail("no invite") }
        let browserTone = tmp.path + "/browser-880.wav", heardPath = tmp.path + "/terminal-heard.wav"
        try Self.toneWAV(browserTone, hz: 880)
        let terminal = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "web", "--server", callroomd.url, "--uid", "term",
                                                                           "--auth-key", callroomd.authKey, "--input", "tone:440",
                                                                           "--output", "file:" + heardPath, "--video", "pattern",
                                                                           "--video-out", tmp.path, "--headless"])
        XCTAssertNotNil(terminal.waitForLine { $0.contains("onSessionJoined") }, terminal.errorOutput)

        let browser = try HeadlessChromium(audioFile: browserTone)
        defer { browser.close() }
        let page = try browser.open(link)
        try Self.clickJoin(browser, page, name: "Web Guest")
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.phase === 'call' && \(Self.mediaConnected)",
                                          timeout: 20), "the browser's media did not connect: \(String(describing: try? browser.evaluate(page, "JSON.stringify({phase: window.callroom.phase, error: window.callroom.error, ice: window.callroom.pc && window.callroom.pc.iceConnectionState, conn: window.callroom.pc && window.callroom.pc.connectionState, answers: window.callroom.answers})")))\n\(callroomd.output.suffix(20).joined(separator: "\n"))")
        XCTAssertNotNil(terminal.waitForLine(timeout: 10) { $0.contains("onParticipantJoined") && $0.contains("Web Guest") }, "the terminal sees the browser join")
        let termPid = try Self.pid(browser, page, uid: "term")
        XCTAssertNotNil(termPid)
        // The browser hears the terminal's 440 Hz.
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.streams.has(\(String(reflecting: termPid ?? "")))", timeout: 10), "no stream from the terminal")
        let best = try Self.clearest(browser, page, pid: termPid ?? "", hz: 440)
        XCTAssertGreaterThan(best, 20, "the terminal's tone is not what the browser hears:\n\(Self.stats(browser, page))\n\(BlockingHTTP.request("GET", callroomd.url + "/metrics").text.split(separator: "\n").filter { $0.hasPrefix("callroom_webrtc") || $0.hasPrefix("callroom_relay_tunnel") || $0.hasPrefix("callroom_relay_packets") }.joined(separator: "\n"))")
        // Video both ways: the browser decodes the terminal's pattern; the terminal writes the browser's frames.
        let framesDecoded = "(async () => { let n = 0; (await window.callroom.pc.getStats()).forEach(r => { if (r.type === 'inbound-rtp' && r.kind === 'video') n += r.framesDecoded || 0; }); return n; })()"
        XCTAssertTrue(eventually(15, poll: 0.2) { ((try? browser.evaluate(page, framesDecoded)) as? Int ?? 0) >= 10 },
                      "the browser decoded no video from the terminal:\n\(Self.stats(browser, page))")
        let webPid = try browser.evaluate(page, "window.callroom.me.pid") as? String ?? ""
        let y4m = tmp.path + "/\(webPid).y4m"
        let frames = { (try? Data(contentsOf: URL(fileURLWithPath: y4m)))?.split(separator: UInt8(ascii: "F"), omittingEmptySubsequences: false).count ?? 0 }
        XCTAssertTrue(eventually(15, poll: 0.2) { Self.y4m(y4m, holdsAtLeast: 10) },
                      "the terminal wrote no frames of the browser's video (\(frames()))")
        // Mute, hand and chat, from the browser to the terminal …
        _ = try browser.evaluate(page, "document.getElementById('mute').click(); document.getElementById('hand').click(); true")
        XCTAssertNotNil(terminal.waitForLine(timeout: 5) { $0.contains("onParticipantAudioMuted") && $0.contains("Web Guest") }, "mute not seen")
        XCTAssertNotNil(terminal.waitForLine(timeout: 5) { $0.contains("onParticipantHandRaised") && $0.contains("Web Guest") }, "hand not seen")
        // The speaking ring: with the browser muted the terminal is the dominant speaker …
        let ringOn = { (pid: String) in "document.querySelector('[data-pid=\"' + \(String(reflecting: pid)) + '\"]').classList.contains('speaking') && window.callroom.dominant === \(String(reflecting: pid))" }
        XCTAssertTrue(try browser.waitFor(page, ringOn(termPid ?? ""), timeout: 8), "no speaking ring on the terminal's tile (dominant: \(String(describing: try? browser.evaluate(page, "window.callroom.dominant"))))")
        _ = try browser.evaluate(page, "document.getElementById('chat-text').value = 'hello from the browser'; document.getElementById('chat-form').requestSubmit(); true")
        XCTAssertNotNil(terminal.waitForLine(timeout: 5) { $0.contains("onChatMessage") && $0.contains("hello from the browser") }, "chat not seen")
        _ = try browser.evaluate(page, "document.getElementById('mute').click(); true")
        XCTAssertNotNil(terminal.waitForLine(timeout: 5) { $0.contains("onParticipantAudioUnmuted") && $0.contains("Web Guest") }, "unmute not seen")
        // … and from the terminal to the browser (its roster, its chat, its tile's label).
        terminal.send("mute-audio")
        terminal.send("raise-hand")
        XCTAssertEqual(try browser.evaluate(page, "document.getElementById('panel-chat').textContent") as? String, "Chat", "its own message is not unread")
        terminal.send("send-chat hello from the terminal")
        // Unread while the chat is closed: the button counts it, opening the chat clears it.
        XCTAssertTrue(try browser.waitFor(page, "document.getElementById('panel-chat').textContent === 'Chat (1)'", timeout: 5), "no unread count on the Chat button")
        _ = try browser.evaluate(page, "document.getElementById('panel-chat').click(); true")
        XCTAssertEqual(try browser.evaluate(page, "document.getElementById('panel-chat').textContent") as? String, "Chat")
        let termState = "(() => { const p = window.callroom.roster.get(\(String(reflecting: termPid ?? ""))); return !!p && p.isAudioMuted && !!p.raisedHandTimestamp && window.callroom.chat.some(m => m.text === 'hello from the terminal'); })()"
        XCTAssertTrue(try browser.waitFor(page, termState, timeout: 5), "the terminal's mute, hand or chat not seen in the browser")
        // … and with the terminal muted, the browser is: its level, rewritten into CallRoom's
        // extension by the gateway, counts as every native sender's does.
        XCTAssertTrue(try browser.waitFor(page, ringOn(webPid), timeout: 8), "the browser never became the dominant speaker (dominant: \(String(describing: try? browser.evaluate(page, "window.callroom.dominant"))))")
        let label = try browser.evaluate(page, "document.querySelector('[data-pid=\"' + \(String(reflecting: termPid ?? "")) + '\"] .label').textContent") as? String ?? ""
        XCTAssertTrue(label.contains("🔇") && label.contains("✋"), "the tile shows the mute and the hand: \(label)")
        terminal.send("unmute")

        // The terminal hears the browser's 880 Hz (two seconds more of it, by the gateway's count).
        XCTAssertTrue(Self.browsersKeepReaching(callroomd, packets: 100 + 60), "the browser's audio and video stopped reaching the room")
        assertConsentKept(callroomd)
        terminal.send("leave")
        XCTAssertEqual(terminal.wait(timeout: 10), 0, terminal.errorOutput)
        XCTAssertTrue(try browser.waitFor(page, "!window.callroom.roster.has(\(String(reflecting: termPid ?? "")))", timeout: 5), "the terminal's leave not seen")
        XCTAssertTrue(try browser.waitFor(page, "document.querySelectorAll('.tile').length === 1", timeout: 5), "its tile stays")
        let carrying = try Self.windowsCarrying(heardPath, hz: 880)
        XCTAssertGreaterThan(carrying.carrying, 10, "the browser's tone heard in \(carrying.carrying) of \(carrying.of) windows of 100 ms")
    }

    /// Two browsers and two terminals in one room: everyone hears everyone (four tones, each
    /// found in what each of the others receives), and a terminal's call screen in tmux shows a
    /// browser's tile with its video.
    func testTwoBrowsersAndTwoTerminalsAllHearEachOtherAndTheCallScreenShowsABrowser() throws {
        let tmp = TemporaryDirectory("callroom-browsers")
        defer { tmp.remove() }
        let callroomd = try CallroomdProcess(dataDir: tmp.path + "/data")
        defer { _ = callroomd.stop() }
        guard let link = Self.invite(callroomd, session: "four") else { return XCTFail("no invite") }
        let heardPath = tmp.path + "/ann-heard.wav"
        let ann = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "four", "--server", callroomd.url, "--uid", "ann", "--name", "Ann",
                                                                      "--auth-key", callroomd.authKey, "--input", "tone:440", "--output", "file:" + heardPath,
                                                                      "--headless"])
        XCTAssertNotNil(ann.waitForLine { $0.contains("onSessionJoined") }, ann.errorOutput)
        let tmux = Tmux(session: "browsers-\(getpid())")
        XCTAssertTrue(tmux.start("env -u NO_COLOR TERM=tmux-256color \(BuiltProducts.path("callroom")) join four --server \(callroomd.url) --uid bea --name Bea --auth-key \(callroomd.authKey) --input tone:620 --output null --video none",
                                 width: 120, height: 40))
        XCTAssertNotNil(ann.waitForLine(timeout: 10) { $0.contains("onParticipantJoined") && $0.contains("Bea") }, tmux.screen())

        var browsers: [(HeadlessChromium, HeadlessChromium.Page)] = []
        defer { browsers.forEach { $0.0.close() } }
        for (name, hz, video) in [("Web One", 880.0, true), ("Web Two", 1100.0, false)] {
            let wav = tmp.path + "/\(Int(hz)).wav"
            try Self.toneWAV(wav, hz: hz)
            let browser = try HeadlessChromium(audioFile: wav)
            let page = try browser.open(link)
            try Self.clickJoin(browser, page, name: name, video: video)
            XCTAssertTrue(try browser.waitFor(page, Self.mediaConnected, timeout: 20), "\(name) did not connect")
            browsers.append((browser, page))
        }
        let pids = try Dictionary(uniqueKeysWithValues: ["Ann", "Bea", "Web One", "Web Two"].map { name in
            (name, try XCTUnwrap(browsers[0].0.evaluate(browsers[0].1, "[...window.callroom.roster.values()].find(p => p.name === \(String(reflecting: name)))?.pid") as? String, name))
        })
        // Each browser hears the other three, each on its own stream.
        for (index, tones) in [[("Ann", 440.0), ("Bea", 620.0), ("Web Two", 1100.0)], [("Ann", 440.0), ("Bea", 620.0), ("Web One", 880.0)]].enumerated() {
            let (browser, page) = browsers[index]
            for (who, hz) in tones {
                let pid = pids[who] ?? ""
                XCTAssertTrue(try browser.waitFor(page, "window.callroom.streams.has(\(String(reflecting: pid)))", timeout: 15), "browser \(index + 1) has no stream of \(who)")
                let best = try Self.clearest(browser, page, pid: pid, hz: hz)
                XCTAssertGreaterThan(best, 20, "browser \(index + 1) does not hear \(who)'s \(Int(hz)) Hz:\n\(Self.stats(browser, page))")
            }
        }
        // Bea's call screen shows Web One's tile with a picture: many colours in its half-block cells
        // (Web One is the only one sending video: Bea receives only, Web Two joined with audio only).
        XCTAssertTrue(tmux.waitFor("Web One", timeout: 10), tmux.screen())
        let colourful = eventually(15, poll: 0.5) {
            let painted = tmux.run(["capture-pane", "-p", "-e", "-t", tmux.session]).output
            // (The call screen's own styles set no background colour; picture cells set one each.)
            let backgrounds = Set(painted.components(separatedBy: "\u{1b}[").dropFirst().map { $0.prefix { $0 != "m" } }.filter { $0.contains("48;5;") || $0.contains("48;2;") })
            return backgrounds.count >= 3
        }
        let painted = tmux.run(["capture-pane", "-p", "-e", "-t", tmux.session]).output
        let colours = Set(painted.components(separatedBy: "\u{1b}[").dropFirst().map { String($0.prefix { $0 != "m" }) }.filter { $0.contains("48;") })
        if !colourful { try? painted.write(toFile: NSTemporaryDirectory() + "/callroom-browser-screen.txt", atomically: true, encoding: .utf8) }
        XCTAssertTrue(colourful, "no video picture on the call screen (\(colours.count) background colours):\n\(tmux.screen())")
        // Ann hears Bea and both browsers (each tone well over the quiet between them).
        XCTAssertTrue(Self.browsersKeepReaching(callroomd, packets: 300), "the browsers' media stopped reaching the room")
        ann.send("leave")
        XCTAssertEqual(ann.wait(timeout: 10), 0, ann.errorOutput)
        let wav = try XCTUnwrap(SignalAnalysis.readWAV(heardPath))
        let last = wav.samples.suffix(48_000 * 2)
        for hz in [620.0, 880.0, 1100.0] {
            let db = 10 * log10(SignalAnalysis.tonePower(last, frequency: hz) / (SignalAnalysis.tonePower(last, frequency: 760) + 1e-15))
            XCTAssertGreaterThan(db, 20, "Ann does not hear \(Int(hz)) Hz in her last two seconds (\(db) dB over 760 Hz)")
        }
        // A browser leaves (its Leave button): the others see it go, its tile goes from the call screen.
        _ = try browsers[1].0.evaluate(browsers[1].1, "document.getElementById('leave').click(); true")
        XCTAssertTrue(try browsers[0].0.waitFor(browsers[0].1, "![...window.callroom.roster.values()].some(p => p.name === 'Web Two')", timeout: 5),
                      "Web One does not see Web Two leave")
        let counted = tmux.waitFor("2 participants", timeout: 5)  // (Ann left before: Bea and Web One)
        if !counted { try? tmux.screen().write(toFile: NSTemporaryDirectory() + "/callroom-bea-screen.txt", atomically: true, encoding: .utf8) }
        XCTAssertTrue(counted, "Bea's screen still counts Web Two")
        tmux.keys("l")
        tmux.keys("l")
    }

    /// What the page says when it cannot let you in: a denied permission, a revoked or used-up
    /// invite, a locked room; an account holder in a lobby room waits for the host, who admits
    /// one browser and sends another away. And at a phone's width the call fits the screen.
    func testThePageSaysWhyItCannotJoinAndWaitsInTheLobby() throws {
        let tmp = TemporaryDirectory("callroom-browser-no")
        defer { tmp.remove() }
        let callroomd = try CallroomdProcess(dataDir: tmp.path + "/data")
        defer { _ = callroomd.stop() }
        let admin = ["apikey": callroomd.apiKey, "appId": callroomd.appId]
        func joinBy(_ browser: HeadlessChromium, _ url: String, name: String) throws -> HeadlessChromium.Page {
            let page = try browser.open(url)
            try Self.clickJoin(browser, page, name: name)
            return page
        }
        func noticeOf(_ browser: HeadlessChromium, _ page: HeadlessChromium.Page) -> String {
            ((try? browser.evaluate(page, "document.getElementById('notice').textContent + ' ' + document.getElementById('ended-text').textContent")) as? String) ?? ""
        }

        // A browser that may not use the microphone or camera is told so, before joining.
        do {
            let denied = try HeadlessChromium(denyMedia: true)
            defer { denied.close() }
            guard let link = Self.invite(callroomd, session: "nope") else { return XCTFail("no invite") }
            let page = try denied.open(link)
            XCTAssertTrue(try denied.waitFor(page, "window.callroom.error && window.callroom.error.includes('not allowed to use your microphone or camera')", timeout: 10),
                          noticeOf(denied, page))
        }

        let browser = try HeadlessChromium()
        defer { browser.close() }
        // A machine without a camera (the browser says NotFoundError for video): the page falls back
        // to audio only, says so, and joins; without a microphone either, it says that.
        let noDevice = { (what: String) in """
            const real = navigator.mediaDevices.getUserMedia.bind(navigator.mediaDevices);
            navigator.mediaDevices.getUserMedia = async (c) => {
              if (\(what == "camera" ? "c.video" : "true")) throw new DOMException('Requested device not found', 'NotFoundError');
              return real(c);
            };
            """ }
        var page = try browser.open(try XCTUnwrap(Self.invite(callroomd, session: "nope")), beforeLoad: noDevice("camera"))
        XCTAssertTrue(try browser.waitFor(page, "document.getElementById('camera-note').textContent.includes('No camera found') && window.callroom.local && window.callroom.local.getVideoTracks().length === 0 && window.callroom.local.getAudioTracks().length === 1", timeout: 10),
                      noticeOf(browser, page))
        try Self.clickJoin(browser, page, name: "Camera-less")
        XCTAssertTrue(try browser.waitFor(page, Self.mediaConnected, timeout: 20), "joined with audio only: \(noticeOf(browser, page))")
        _ = try browser.evaluate(page, "document.getElementById('leave').click(); true")
        page = try browser.open(try XCTUnwrap(Self.invite(callroomd, session: "nope")), beforeLoad: noDevice("microphone"))
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.error && window.callroom.error.includes('No microphone found')", timeout: 10), noticeOf(browser, page))
        // A revoked invite, and one used up.
        let minted = BlockingHTTP.request("POST", callroomd.url + "/v3/rooms/nope/invites", headers: admin, body: #"{"role":"guest","maxUses":1}"#)
        let revokedLink = try XCTUnwrap(minted.data["link"] as? String), inviteId = try XCTUnwrap(minted.data["inviteId"] as? String)
        XCTAssertEqual(BlockingHTTP.request("DELETE", callroomd.url + "/v3/rooms/nope/invites/\(inviteId)", headers: admin).status, 200)
        page = try joinBy(browser, revokedLink, name: "Late")
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.error && window.callroom.error.includes('revoked or used up')", timeout: 10), noticeOf(browser, page))
        let once = try XCTUnwrap(BlockingHTTP.request("POST", callroomd.url + "/v3/rooms/nope/invites", headers: admin, body: #"{"role":"guest","maxUses":1}"#).data["link"] as? String)
        XCTAssertEqual(BlockingHTTP.request("POST", callroomd.url + "/v3/invites/redeem", headers: ["appId": callroomd.appId],
                                            body: #"{"invite":"\#(once.components(separatedBy: "invite=")[1])","name":"First"}"#).status, 200)
        page = try joinBy(browser, once, name: "Second")
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.error && window.callroom.error.includes('revoked or used up')", timeout: 10), noticeOf(browser, page))
        // An expired one: a real invite's grant signed again with the server's own secret (from its
        // keys.json) but an expiry in the past — exactly what a link a day too old carries.
        let fresh = BlockingHTTP.request("POST", callroomd.url + "/v3/rooms/nope/invites", headers: admin, body: #"{"role":"guest"}"#)
        let freshId = try XCTUnwrap(fresh.data["inviteId"] as? String)
        let keys = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: tmp.path + "/data/keys.json"))) as? [String: Any])
        let secret = try XCTUnwrap(keys["tokenSecret"] as? String)
        let now = Int64(Date().timeIntervalSince1970)
        let secretBytes = stride(from: 0, to: secret.count - 1, by: 2).compactMap { i -> UInt8? in
            let at = secret.index(secret.startIndex, offsetBy: i)
            return UInt8(secret[at...secret.index(after: at)], radix: 16)
        }
        let expired = CallTokenSigner(secret: secretBytes).sign(CallTokenClaims(
            app: callroomd.appId, sub: "invite", sid: "nope", iat: now - 7200, exp: now - 3600, role: "guest", jti: freshId,
            aud: CallTokenClaims.inviteAudience(appId: callroomd.appId)))
        page = try joinBy(browser, callroomd.url + "/call/nope?invite=" + expired, name: "Too Late")
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.error && window.callroom.error.includes('expired')", timeout: 10), noticeOf(browser, page))

        // A locked room.
        let host = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "locked", "--server", callroomd.url, "--uid", "host", "--auth-key", callroomd.authKey,
                                                                       "--input", "null", "--output", "null", "--headless"])
        XCTAssertNotNil(host.waitForLine { $0.contains("onSessionJoined") }, host.errorOutput)
        host.send("lock-room")
        XCTAssertNotNil(host.waitForLine(timeout: 5) { $0.contains("onRoomLockChanged") || $0.contains("locked") }, "the room did not lock")
        page = try joinBy(browser, try XCTUnwrap(Self.invite(callroomd, session: "locked")), name: "Knocker")
        XCTAssertTrue(try browser.waitFor(page, "document.getElementById('ended-text').textContent.includes('locked')", timeout: 10), noticeOf(browser, page))
        host.send("leave")
        _ = host.wait(timeout: 10)

        // A lobby room: an account holder (no invite) waits; the host admits one, denies another.
        XCTAssertEqual(BlockingHTTP.request("PUT", callroomd.url + "/v3/rooms/lob", headers: admin, body: #"{"access":"lobby"}"#).status, 200)
        let mod = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "lob", "--server", callroomd.url, "--uid", "mod", "--auth-key", callroomd.authKey,
                                                                      "--input", "null", "--output", "null", "--headless"])
        XCTAssertNotNil(mod.waitForLine { $0.contains("onSessionJoined") }, mod.errorOutput)
        func account(_ uid: String) throws -> String {
            _ = BlockingHTTP.request("POST", callroomd.url + "/v3/users", headers: admin, body: #"{"uid":"\#(uid)","name":"\#(uid)"}"#)
            return try XCTUnwrap(BlockingHTTP.request("POST", callroomd.url + "/v3/users/\(uid)/auth_tokens", headers: admin).data["authToken"] as? String)
        }
        var waiting: [HeadlessChromium.Page] = []
        for uid in ["kim", "lee"] {
            let p = try joinBy(browser, callroomd.url + "/call/lob#authToken=" + (try account(uid)), name: uid.capitalized)
            XCTAssertTrue(try browser.waitFor(p, "window.callroom.phase === 'lobby' && document.getElementById('notice').textContent.includes('Waiting for the host')", timeout: 10),
                          noticeOf(browser, p))
            waiting.append(p)
        }
        func requestPid(_ name: String) -> String? {
            mod.waitForLine(timeout: 5) { $0.contains("onLobbyRequest") && $0.contains(name) }
                .flatMap { line in (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] }
                .flatMap { ($0["participant"] as? [String: Any])?["pid"] as? String ?? (($0["onLobbyRequest"] as? [String: Any])?["participant"] as? [String: Any])?["pid"] as? String }
        }
        let kim = try XCTUnwrap(requestPid("Kim"), mod.output.suffix(5).joined(separator: "\n"))
        let lee = try XCTUnwrap(requestPid("Lee"), mod.output.suffix(5).joined(separator: "\n"))
        mod.send("admit \(kim)")
        mod.send("deny \(lee)")
        XCTAssertTrue(try browser.waitFor(waiting[0], "window.callroom.phase === 'call' && \(Self.mediaConnected)", timeout: 15),
                      noticeOf(browser, waiting[0]))
        XCTAssertTrue(try browser.waitFor(waiting[1], "document.getElementById('ended-text').textContent.includes('did not let you in')", timeout: 10),
                      noticeOf(browser, waiting[1]))
        mod.send("leave")
        _ = mod.wait(timeout: 10)
    }

    /// At a phone's width (390×844) the call fits: nothing wider than the screen, the control
    /// bar on it. The screenshot is kept for a person to look at (CALLROOM_SCREENSHOT_DIR).
    func testAtAPhonesWidthTheCallFitsTheScreen() throws {
        let tmp = TemporaryDirectory("callroom-browser-phone")
        defer { tmp.remove() }
        let callroomd = try CallroomdProcess(dataDir: tmp.path + "/data")
        defer { _ = callroomd.stop() }
        let other = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "phone", "--server", callroomd.url, "--uid", "desk", "--name", "Desk Person",
                                                                        "--auth-key", callroomd.authKey, "--input", "tone:440", "--output", "null",
                                                                        "--video", "pattern", "--headless"])
        XCTAssertNotNil(other.waitForLine { $0.contains("onSessionJoined") }, other.errorOutput)
        let browser = try HeadlessChromium(windowSize: "390,844", extraFlags: ["--force-device-scale-factor=1"])
        defer { browser.close() }
        _ = try browser.call("Emulation.setDeviceMetricsOverride", ["width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": true],
                             session: try browser.open("about:blank").session)
        let page = try browser.open(try XCTUnwrap(Self.invite(callroomd, session: "phone")))
        _ = try browser.call("Emulation.setDeviceMetricsOverride", ["width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": true], session: page.session)
        try Self.clickJoin(browser, page, name: "Phone")
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.pc && window.callroom.pc.connectionState === 'connected' && document.querySelectorAll('.tile').length === 2", timeout: 20))
        XCTAssertTrue(try browser.waitFor(page, "document.querySelector('.tile:not([data-pid=\"' + window.callroom.me.pid + '\"]) video').videoWidth > 0", timeout: 15),
                      "the other's video is not playing")
        XCTAssertTrue(try browser.waitFor(page, "!document.querySelector('.tile:not([data-pid=\"' + window.callroom.me.pid + '\"]) video').classList.contains('hidden')", timeout: 5),
                      "the other's video is not shown")
        // What runs in the room (recording) and an 80-column terminal shared into it: still the phone's width.
        other.send("start-recording")  // (the terminal joined first: the moderator)
        let share = try ManagedProcess(BuiltProducts.path("callroom"), ["share", "phone", "--server", callroomd.url, "--uid", "desk",
                                                                        "--auth-key", callroomd.authKey, "--size", "80x24", "--", "bash", "-c",
                                                                        "seq -s ' ' 1 40; sleep 8"])
        defer { share.signal(SIGKILL); _ = share.wait(timeout: 5) }
        XCTAssertTrue(try browser.waitFor(page, Self.says("indicators", "Recording") + " && !!document.querySelector('#shares pre > div')", timeout: 15),
                      "no recording said, or no shared terminal: \(share.errorOutput)")
        let fits = try browser.evaluate(page, "document.documentElement.scrollWidth <= window.innerWidth && document.querySelector('.bar').getBoundingClientRect().bottom <= window.innerHeight && window.innerWidth === 390") as? Bool
        XCTAssertEqual(fits, true, "wider than the phone, or the controls off screen")
        XCTAssertGreaterThanOrEqual(Double(try browser.evaluate(page, "parseFloat(document.querySelector('#shares pre').style.fontSize)") as? Double ?? 0), 9,
                                    "the shared terminal's text stays readable (it scrolls sideways)")
        let png = try browser.screenshot(page)
        XCTAssertGreaterThan(png.count, 10_000)
        let dir = ProcessInfo.processInfo.environment["CALLROOM_SCREENSHOT_DIR"] ?? tmp.path
        try png.write(to: URL(fileURLWithPath: dir + "/browser-phone-390x844.png"))
        // Dark, as the system asks: the page's background follows.
        _ = try browser.call("Emulation.setEmulatedMedia", ["features": [["name": "prefers-color-scheme", "value": "dark"]]], session: page.session)
        let background = try browser.evaluate(page, "getComputedStyle(document.body).backgroundColor") as? String
        XCTAssertEqual(background, "rgb(15, 17, 21)", "the dark background")
        try browser.screenshot(page).write(to: URL(fileURLWithPath: dir + "/browser-phone-390x844-dark.png"))
        other.send("leave")
        _ = other.wait(timeout: 10)
    }

    /// A network blip: the browser (in its own network namespace) loses its link for 3 s or
    /// more — until its ICE says `disconnected`, and past the server's consent timeout (1.5 s
    /// here): the room's media to it stop. When the link is back its checks arrive again, it
    /// answers the server's, and the same connection carries media again (no reload, no new
    /// offer): it hears the terminal again.
    func testAfterANetworkBlipTheBrowserHearsTheRoomAgain() throws {
        guard VethNamespace.isAvailable else { throw XCTSkip("needs root and iproute2 for a network namespace") }
        let ns = VethNamespace(name: "crweb\(getpid() % 100_000)", hostSide: "crw\(getpid() % 100_000)", peerSide: "crweb", prefix: "10.203.79")
        if let failed = try ns.create() { return XCTFail("cannot make the namespace: \(failed)") }
        defer { ns.remove() }
        let tmp = TemporaryDirectory("callroom-browser-blip")
        defer { tmp.remove() }
        let callroomd = try CallroomdProcess(dataDir: tmp.path + "/data", listen: ns.hostIP + ":0",
                                             extra: ["--allow-plain-http", "--config", try Self.shortConsent(tmp)])
        defer { _ = callroomd.stop() }
        let terminal = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "blip", "--server", callroomd.url, "--uid", "term",
                                                                           "--auth-key", callroomd.authKey, "--input", "tone:440", "--output", "null", "--headless"])
        XCTAssertNotNil(terminal.waitForLine { $0.contains("onSessionJoined") }, terminal.errorOutput)
        let browser = try HeadlessChromium(extraFlags: ["--unsafely-treat-insecure-origin-as-secure=\(callroomd.url)"],
                                           launcher: ["/usr/sbin/ip", "netns", "exec", ns.name])
        defer { browser.close() }
        let page = try browser.open(try XCTUnwrap(Self.invite(callroomd, session: "blip")))
        try Self.clickJoin(browser, page, name: "Roamer")
        XCTAssertTrue(try browser.waitFor(page, Self.mediaConnected, timeout: 20),
                      "not connected over the namespace's link: \(Self.stats(browser, page))")
        let termPid = try XCTUnwrap(Self.pid(browser, page, uid: "term"))
        func hears() throws -> Bool {
            let best = try Self.clearest(browser, page, pid: termPid, hz: 440)
            return best > 20
        }
        XCTAssertTrue(try hears(), "the browser does not hear the terminal before the blip")
        let answers = try browser.evaluate(page, "window.callroom.answers") as? Int
        let packets = "(async () => { let n = 0; (await window.callroom.pc.getStats()).forEach(r => { if (r.type === 'inbound-rtp' && r.kind === 'audio') n += r.packetsReceived; }); return n; })()"
        XCTAssertEqual(try VethNamespace.ip(["link", "set", ns.hostSide, "down"]), 0)
        let cut = Date()
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.pc.iceConnectionState === 'disconnected'", timeout: 10),
                      "the browser never noticed the link was gone")
        XCTAssertTrue(eventually(5, poll: 0.1) { Date().timeIntervalSince(cut) >= 3 })  // (at least 3 s without a link)
        // Longer than the consent timeout (1.5 s here): the room's media to it stopped.
        XCTAssertTrue(eventually(3, poll: 0.1) { Self.metric(callroomd, "callroom_webrtc_consent_expired_total") == 1 },
                      "the browser's media went on without its consent")
        XCTAssertTrue(eventually(3, poll: 0.1) { Self.metric(callroomd, #"callroom_webrtc_packets_dropped_total{reason="noConsent"}"#) ?? 0 > 10 },
                      "the room's media to it are not held back")
        let during = try browser.evaluate(page, packets) as? Int ?? 0
        XCTAssertEqual(try VethNamespace.ip(["link", "set", ns.hostSide, "up"]), 0)
        XCTAssertTrue(eventually(15, poll: 0.2) { ((try? browser.evaluate(page, packets)) as? Int ?? 0) > during + 100 },
                      "no audio after the link came back: \(Self.stats(browser, page))")
        XCTAssertTrue(try hears(), "the browser does not hear the terminal after the blip")
        XCTAssertEqual(try browser.evaluate(page, "window.callroom.answers") as? Int, answers, "the same connection carried on (no new offer)")
        XCTAssertEqual(try browser.evaluate(page, "window.callroom.phase") as? String, "call")
        terminal.send("leave")
        _ = terminal.wait(timeout: 10)
    }

    /// A host in the browser (an account holder, first into a lobby room): the People panel admits
    /// a terminal from the lobby, mutes it, locks the room and removes it (asked twice), lets it
    /// back in, bans it for good (asked twice) and lifts the ban.
    func testAHostInTheBrowserAdmitsMutesLocksAndRemoves() throws {
        let tmp = TemporaryDirectory("callroom-browser-host")
        defer { tmp.remove() }
        let callroomd = try CallroomdProcess(dataDir: tmp.path + "/data")
        defer { _ = callroomd.stop() }
        let admin = ["apikey": callroomd.apiKey, "appId": callroomd.appId]
        XCTAssertEqual(BlockingHTTP.request("PUT", callroomd.url + "/v3/rooms/hosted", headers: admin, body: #"{"access":"lobby"}"#).status, 200)
        _ = BlockingHTTP.request("POST", callroomd.url + "/v3/users", headers: admin, body: #"{"uid":"hana","name":"Hana"}"#)
        let token = try XCTUnwrap(BlockingHTTP.request("POST", callroomd.url + "/v3/users/hana/auth_tokens", headers: admin).data["authToken"] as? String)
        let browser = try HeadlessChromium()
        defer { browser.close() }
        let page = try browser.open(callroomd.url + "/call/hosted#authToken=" + token)
        try Self.clickJoin(browser, page, name: "Hana")
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.phase === 'call' && window.callroom.me.role === 'moderator'", timeout: 15),
                      "the first one in does not host")
        XCTAssertTrue(try browser.evaluate(page, "!document.getElementById('lock').classList.contains('hidden')") as? Bool == true, "no lock button for the host")
        let guest = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "hosted", "--server", callroomd.url, "--uid", "gus", "--name", "Gus",
                                                                        "--auth-key", callroomd.authKey, "--input", "tone:440", "--output", "null", "--headless"])
        XCTAssertTrue(try browser.waitFor(page, "document.querySelector('#people [data-lobby] button')", timeout: 10), "no lobby request in the People panel")
        _ = try browser.evaluate(page, "document.querySelector('#people [data-lobby] button').click(); true")  // Admit
        XCTAssertNotNil(guest.waitForLine(timeout: 10) { $0.contains("onSessionJoined") }, "the host's admit did not let Gus in: \(guest.errorOutput)")
        let gus = "[...window.callroom.roster.values()].find(p => p.uid === 'gus')"
        XCTAssertTrue(try browser.waitFor(page, "!!\(gus)", timeout: 5))
        let clickOnGus = { (label: String) in
            "[...document.querySelectorAll('#people li[data-pid=\"' + \(gus).pid + '\"] button')].find(b => b.textContent === '\(label)').click(); true"
        }
        // The server's features, from the People panel: recording, told to the room and the page.
        let hostButton = { (feature: String) in "document.querySelector('#host-controls [data-feature=\"\(feature)\"]')" }
        XCTAssertTrue(try browser.evaluate(page, "\(hostButton("recording")).textContent") as? String == "Start recording")
        _ = try browser.evaluate(page, "\(hostButton("recording")).click(); true")
        XCTAssertNotNil(guest.waitForLine(timeout: 10) { $0.contains("onRecordingStarted") }, "the host's recording not started: \(guest.output.suffix(3))")
        XCTAssertTrue(try browser.waitFor(page, Self.says("indicators", "Recording") + " && \(hostButton("recording")).textContent === 'Stop recording'", timeout: 5))
        _ = try browser.evaluate(page, "\(hostButton("recording")).click(); true")
        XCTAssertNotNil(guest.waitForLine(timeout: 10) { $0.contains("onRecordingStopped") }, "the host's recording not stopped")
        // Pinned for the whole room: the terminal hears of it, the page puts Gus first; then unpinned.
        _ = try browser.evaluate(page, clickOnGus("Pin"))
        XCTAssertNotNil(guest.waitForLine(timeout: 5) { $0.contains("onParticipantListChanged") && $0.contains(#""isPinned":true"#) }, "the host's pin not seen")
        let gusTile = "document.querySelector('.tile[data-pid=\"' + \(gus).pid + '\"]')"
        XCTAssertTrue(try browser.waitFor(page, "\(gusTile).classList.contains('pinned') && getComputedStyle(\(gusTile)).order === '-1'", timeout: 5), "the pinned tile is not first")
        _ = try browser.evaluate(page, clickOnGus("Unpin"))
        XCTAssertTrue(try browser.waitFor(page, "!\(gusTile).classList.contains('pinned')", timeout: 5), "not unpinned")
        _ = try browser.evaluate(page, clickOnGus("Mute"))
        XCTAssertNotNil(guest.waitForLine(timeout: 5) { $0.contains("onAudioMuted") }, "the host's mute not felt")
        _ = try browser.evaluate(page, "document.getElementById('lock').click(); true")
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.locked && document.getElementById('lock').textContent === 'Unlock room'", timeout: 5))
        // Removing asks first: the first click only turns the button into "Confirm remove".
        _ = try browser.evaluate(page, clickOnGus("Remove"))
        XCTAssertTrue(try browser.waitFor(page, "[...document.querySelectorAll('#people button')].some(b => b.textContent === 'Confirm remove')", timeout: 5))
        XCTAssertNil(guest.waitForLine(timeout: 1) { $0.contains("removed") }, "removed on the first click")
        _ = try browser.evaluate(page, clickOnGus("Confirm remove"))
        XCTAssertNotNil(guest.waitForLine(timeout: 5) { $0.contains("removed") }, "the host's removal not felt: \(guest.output.suffix(3))")
        XCTAssertTrue(try browser.waitFor(page, "!\(gus)", timeout: 5), "Gus still in the browser's roster")
        _ = guest.wait(timeout: 10)
        // Removed stays removed (whatever token he brings) until the host lets him back in.
        _ = try browser.evaluate(page, "document.getElementById('lock').click(); true")  // (unlocked: the lobby again)
        XCTAssertTrue(try browser.waitFor(page, "!window.callroom.locked", timeout: 5))
        let join = { try ManagedProcess(BuiltProducts.path("callroom"), ["join", "hosted", "--server", callroomd.url, "--uid", "gus", "--name", "Gus",
                                                                         "--auth-key", callroomd.authKey, "--input", "null", "--output", "null", "--headless"]) }
        let refused = try join()
        XCTAssertEqual(refused.wait(timeout: 10), 1)
        XCTAssertTrue(refused.errorOutput.contains("ERR_REMOVED_FROM_SESSION"), refused.errorOutput)
        let removedItem = "document.querySelector('#people li[data-removed=\"gus\"]')"
        XCTAssertTrue(try browser.waitFor(page, "!!\(removedItem) && \(removedItem).textContent.startsWith('Gus was removed')", timeout: 5),
                      "the People panel does not offer to let Gus back in")
        _ = try browser.evaluate(page, "\(removedItem).querySelector('button').click(); true")  // Let back in
        XCTAssertTrue(try browser.waitFor(page, "!\(removedItem)", timeout: 5))
        let back = try join()
        defer { back.closeInput(); _ = back.wait(timeout: 10) }
        XCTAssertTrue(try browser.waitFor(page, "document.querySelector('#people [data-lobby] button')", timeout: 10), "not let back in: \(back.errorOutput)")
        _ = try browser.evaluate(page, "document.querySelector('#people [data-lobby] button').click(); true")  // Admit
        XCTAssertNotNil(back.waitForLine(timeout: 10) { $0.contains("onSessionJoined") }, back.errorOutput)
        // Banned for good (asked first too): out now, listed with a way to lift it; lifted, the room's rules hold no ban.
        XCTAssertTrue(try browser.waitFor(page, "!!\(gus)", timeout: 5))
        _ = try browser.evaluate(page, clickOnGus("Ban"))
        XCTAssertTrue(try browser.waitFor(page, "[...document.querySelectorAll('#people button')].some(b => b.textContent === 'Confirm ban')", timeout: 5))
        _ = try browser.evaluate(page, clickOnGus("Confirm ban"))
        XCTAssertNotNil(back.waitForLine(timeout: 5) { $0.contains("removed") }, "the host's ban not felt: \(back.output.suffix(3))")
        let bans = { (BlockingHTTP.request("GET", callroomd.url + "/v3/rooms/hosted/bans", headers: admin).data["bannedUids"] as? [String]) ?? ["?"] }
        XCTAssertEqual(bans(), ["gus"])
        let bannedItem = "document.querySelector('#people li[data-banned=\"gus\"]')"
        XCTAssertTrue(try browser.waitFor(page, "!!\(bannedItem) && \(bannedItem).textContent.startsWith('Gus is banned') && !\(removedItem)", timeout: 5),
                      "the ban is not listed (or Gus is offered back in while banned)")
        _ = try browser.evaluate(page, "\(bannedItem).querySelector('button').click(); true")  // Lift ban
        XCTAssertTrue(try browser.waitFor(page, "!\(bannedItem) && !\(removedItem)", timeout: 5), "the lifted ban is still listed")
        XCTAssertEqual(bans(), [])
    }

    /// Firefox (Debian's firefox-esr over Marionette) and a terminal: each hears the other, each
    /// decodes the other's video, chat both ways, leave seen. Firefox differs from Chromium where
    /// it matters to the gateway: Opus at 109 and VP8 at 120 (no RED: the terminal's RED is cut to
    /// its primary frame), the transport at session level, and every section after the first
    /// offered `bundle-only` with port 0. It gathers no loopback candidates, so it runs in a
    /// network namespace and callroomd listens on the veth pair's host side.
    func testFirefoxAndATerminalHearAndSeeEachOther() throws {
        guard VethNamespace.isAvailable else { throw XCTSkip("needs root and iproute2 for a network namespace") }
        guard HeadlessFirefox.binary != nil else { throw XCTSkip("firefox-esr is not installed (scripts/install-deps.sh)") }
        let ns = VethNamespace(name: "crfox\(getpid() % 100_000)", hostSide: "crf\(getpid() % 100_000)", peerSide: "crfox", prefix: "10.203.80")
        if let failed = try ns.create() { return XCTFail("cannot make the namespace: \(failed)") }
        defer { ns.remove() }
        let tmp = TemporaryDirectory("callroom-firefox")
        defer { tmp.remove() }
        let callroomd = try CallroomdProcess(dataDir: tmp.path + "/data", listen: ns.hostIP + ":0", extra: ["--allow-plain-http"])
        defer { _ = callroomd.stop() }
        let heardPath = tmp.path + "/terminal-heard.wav"
        let terminal = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "fox", "--server", callroomd.url, "--uid", "term",
                                                                           "--auth-key", callroomd.authKey, "--input", "tone:440",
                                                                           "--output", "file:" + heardPath, "--video", "pattern",
                                                                           "--video-out", tmp.path, "--headless"])
        XCTAssertNotNil(terminal.waitForLine { $0.contains("onSessionJoined") }, terminal.errorOutput)
        let firefox = try HeadlessFirefox(namespace: ns.name, secureHosts: [ns.hostIP])
        defer { firefox.close() }
        try firefox.open(try XCTUnwrap(Self.invite(callroomd, session: "fox")))
        _ = try firefox.evaluate("(() => { document.getElementById('name').value = 'Fox'; document.getElementById('join').click(); return true; })()")
        XCTAssertTrue(firefox.waitFor("window.callroom.phase === 'call' && \(Self.mediaConnected)", timeout: 20),
                      "Firefox's media did not connect: \(String(describing: try? firefox.evaluate("JSON.stringify({phase: window.callroom.phase, error: window.callroom.error, conn: window.callroom.pc && window.callroom.pc.connectionState})")))")
        XCTAssertNotNil(terminal.waitForLine(timeout: 10) { $0.contains("onParticipantJoined") && $0.contains("Fox") }, "the terminal sees Firefox join")
        let termPid = try XCTUnwrap(firefox.evaluate("[...window.callroom.roster.values()].find(p => p.uid === 'term').pid") as? String)
        // Firefox hears the terminal (RED cut to Opus at 109) and decodes its VP8 at 120. (Headless
        // Firefox here has no audio device, so WebAudio never runs — its AudioContext stays
        // suspended; the decoder's own measure is used instead: the energy of what it decoded
        // grows while the terminal speaks and stops growing while it is muted.)
        XCTAssertTrue(firefox.waitFor("window.callroom.streams.has(\(String(reflecting: termPid)))", timeout: 10), "no stream from the terminal")
        // Energy and packets of what Firefox decoded from the terminal, gained over 100 more packets
        // (2 s of audio) or 3 s, whichever comes first.
        let counters = "(async () => { let e = 0, n = 0; (await window.callroom.pc.getStats()).forEach(r => { if (r.type === 'inbound-rtp' && r.kind === 'audio') { e += r.totalAudioEnergy || 0; n += r.packetsReceived || 0; } }); return [e, n]; })()"
        func energyGained() throws -> Double {
            let start = try XCTUnwrap(firefox.evaluate(counters) as? [Double])
            var now = start
            _ = eventually(3, poll: 0.1) { now = (try? firefox.evaluate(counters) as? [Double]) ?? now; return now[1] >= start[1] + 100 }
            return now[0] - start[0]
        }
        let speaking = try energyGained()
        // The terminal's tone at 8000/32768 of full scale: ~0.06 of energy a second, decoded.
        XCTAssertGreaterThan(speaking, 0.05, "Firefox decodes no sound from the terminal:\n\((try? firefox.evaluate(Self.statsScript)) as? String ?? "")")
        terminal.send("mute-audio")
        XCTAssertTrue(firefox.waitFor("window.callroom.roster.get(\(String(reflecting: termPid))).isAudioMuted", timeout: 5), "the terminal's mute not seen")
        _ = try energyGained()  // (what was on its way)
        let muted = try energyGained()
        XCTAssertLessThan(muted, speaking / 10, "what Firefox decodes is not the terminal's: \(muted) of energy while it is muted, against \(speaking)")
        terminal.send("unmute")
        let framesDecoded = "(async () => { let n = 0; (await window.callroom.pc.getStats()).forEach(r => { if (r.type === 'inbound-rtp' && r.kind === 'video') n += r.framesDecoded || 0; }); return n; })()"
        XCTAssertTrue(eventually(15, poll: 0.2) { ((try? firefox.evaluate(framesDecoded)) as? Int ?? 0) >= 10 }, "Firefox decoded no video from the terminal")
        // The terminal writes Firefox's fake camera frames.
        let webPid = try XCTUnwrap(firefox.evaluate("window.callroom.me.pid") as? String)
        XCTAssertTrue(eventually(15, poll: 0.2) { Self.y4m(tmp.path + "/\(webPid).y4m", holdsAtLeast: 10) },
                      "the terminal wrote no frames of Firefox's video")
        // Chat both ways.
        _ = try firefox.evaluate("(() => { document.getElementById('chat-text').value = 'hello from firefox'; document.getElementById('chat-form').requestSubmit(); return true; })()")
        XCTAssertNotNil(terminal.waitForLine(timeout: 5) { $0.contains("onChatMessage") && $0.contains("hello from firefox") }, "chat not seen")
        terminal.send("send-chat hello from the terminal")
        XCTAssertTrue(firefox.waitFor("window.callroom.chat.some(m => m.text === 'hello from the terminal')", timeout: 5), "the terminal's chat not seen in Firefox")
        // Firefox's fake microphone is a 1 kHz tone: the terminal hears it.
        XCTAssertTrue(Self.browsersKeepReaching(callroomd, packets: 150), "Firefox's media stopped reaching the room")
        _ = try firefox.evaluate("(() => { document.getElementById('leave').click(); return true; })()")
        XCTAssertNotNil(terminal.waitForLine(timeout: 5) { $0.contains("onParticipantLeft") && $0.contains("Fox") }, "Firefox's leave not seen")
        terminal.send("leave")
        XCTAssertEqual(terminal.wait(timeout: 10), 0, terminal.errorOutput)
        let carrying = try Self.windowsCarrying(heardPath, hz: 1000)
        XCTAssertGreaterThan(carrying.carrying, 10, "Firefox's 1 kHz heard in \(carrying.carrying) of \(carrying.of) windows of 100 ms")
    }

    /// UDP blocked: the browser (in a network namespace whose UDP is routed to a blackhole —
    /// every datagram it sends fails) reaches the room only through Debian's coturn over TCP,
    /// given to the page by `webrtcIceServers`. Its ICE pairs a TURN relay candidate over TCP with
    /// the gateway's port; coturn relays to the gateway over UDP from the host side. It hears
    /// the terminal and the terminal hears it.
    func testWithUDPBlockedTheBrowserRelaysThroughTURNOverTCP() throws {
        try relayThroughTURN(tls: false)
    }

    /// The same over TLS (`turns:`; coturn with a certificate of its own, which the browser is
    /// told to accept: a real deployment's is a CA's).
    func testWithUDPBlockedTheBrowserRelaysThroughTURNOverTLS() throws {
        try relayThroughTURN(tls: true)
    }

    private func relayThroughTURN(tls: Bool) throws {
        guard VethNamespace.isAvailable else { throw XCTSkip("needs root and iproute2 for a network namespace") }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/turnserver") else { throw XCTSkip("coturn is not installed (scripts/install-deps.sh)") }
        let ns = VethNamespace(name: "crturn\(getpid() % 100_000)", hostSide: "crt\(getpid() % 100_000)", peerSide: "crturn", prefix: tls ? "10.203.82" : "10.203.81")
        if let failed = try ns.create() { return XCTFail("cannot make the namespace: \(failed)") }
        defer { ns.remove() }
        // Every UDP datagram from the namespace (but to its own addresses) goes to a blackhole.
        for step in [["-n", ns.name, "rule", "add", "ipproto", "udp", "lookup", "100", "pref", "100"],
                     ["-n", ns.name, "route", "add", "blackhole", "default", "table", "100"]] {
            XCTAssertEqual(try VethNamespace.ip(step), 0, "ip " + step.joined(separator: " "))
        }
        let tmp = TemporaryDirectory("callroom-browser-turn")
        defer { tmp.remove() }
        let turnPort = 3478 + Int(getpid() % 1000)
        var listeners = ["--no-tls", "--listening-port", String(turnPort)]
        if tls {
            let identity = try SelfSignedCertificate.generate(commonName: "turn.callroom.test", dnsNames: [], ipAddresses: [ns.hostIP])
            try identity.certificatePEM.write(toFile: tmp.path + "/turn.pem", atomically: true, encoding: .utf8)
            try identity.privateKeyPEM.write(toFile: tmp.path + "/turn.key", atomically: true, encoding: .utf8)
            listeners = ["--no-tcp", "--tls-listening-port", String(turnPort), "--cert", tmp.path + "/turn.pem", "--pkey", tmp.path + "/turn.key"]
        }
        let turn = try ManagedProcess("/usr/bin/turnserver", ["-n", "--listening-ip", ns.hostIP, "--relay-ip", ns.hostIP] + listeners +
                                                            ["--no-udp", "--no-dtls", "--lt-cred-mech", "--user", "callroom:turn-test-password",
                                                             "--realm", "callroom.test", "--no-cli", "--log-file", "stdout", "--simple-log",
                                                             "--pidfile", tmp.path + "/turnserver.pid"])
        defer { turn.signal(SIGTERM); if turn.wait(timeout: 5) == nil { turn.signal(SIGKILL) } }
        XCTAssertNotNil(turn.waitForLine(timeout: 10) { $0.contains("Total General servers") || $0.contains("listener opened") }, turn.output.suffix(10).joined(separator: "\n"))
        let config = tmp.path + "/callroomd.json"
        let url = tls ? "turns:\(ns.hostIP):\(turnPort)?transport=tcp" : "turn:\(ns.hostIP):\(turnPort)?transport=tcp"
        try #"{"webrtcIceServers": [{"urls": ["\#(url)"], "username": "callroom", "credential": "turn-test-password"}], "mediaConsentIntervalMs": 300, "mediaConsentTimeoutMs": 1500}"#
            .write(toFile: config, atomically: true, encoding: .utf8)
        let callroomd = try CallroomdProcess(dataDir: tmp.path + "/data", listen: ns.hostIP + ":0", extra: ["--allow-plain-http", "--config", config])
        defer { _ = callroomd.stop() }
        let heardPath = tmp.path + "/terminal-heard.wav"
        let terminal = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "turn", "--server", callroomd.url, "--uid", "term", "--auth-key", callroomd.authKey,
                                                                           "--input", "tone:440", "--output", "file:" + heardPath, "--headless"])
        XCTAssertNotNil(terminal.waitForLine { $0.contains("onSessionJoined") }, terminal.errorOutput)
        let tone = tmp.path + "/880.wav"
        try Self.toneWAV(tone, hz: 880)
        let browser = try HeadlessChromium(audioFile: tone, extraFlags: ["--unsafely-treat-insecure-origin-as-secure=\(callroomd.url)"] + (tls ? ["--ignore-certificate-errors"] : []),
                                           launcher: ["/usr/sbin/ip", "netns", "exec", ns.name])
        defer { browser.close() }
        let page = try browser.open(try XCTUnwrap(Self.invite(callroomd, session: "turn")))
        try Self.clickJoin(browser, page, name: "Behind A Firewall", video: false)
        XCTAssertTrue(try browser.waitFor(page, Self.mediaConnected, timeout: 30),
                      "not connected through TURN: \(Self.stats(browser, page))\n\(turn.output.suffix(15).joined(separator: "\n"))")
        // The pair in use: a relay candidate, allocated over TCP.
        let pair = """
            (async () => {
              const stats = await window.callroom.pc.getStats(); let out = null;
              stats.forEach(r => { if (r.type === 'transport' && r.selectedCandidatePairId) {
                const p = stats.get(r.selectedCandidatePairId), l = stats.get(p.localCandidateId);
                out = l.candidateType + '/' + (l.relayProtocol || ''); } });
              return out;
            })()
            """
        let selected = try browser.evaluate(page, pair) as? String ?? ""
        XCTAssertEqual(selected, tls ? "relay/tls" : "relay/tcp", "the browser's pair is not a TURN relay over \(tls ? "TLS" : "TCP"): \(selected)")
        let termPid = try XCTUnwrap(Self.pid(browser, page, uid: "term"))
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.streams.has(\(String(reflecting: termPid)))", timeout: 10), "no stream from the terminal")
        let best = try Self.clearest(browser, page, pid: termPid, hz: 440)
        XCTAssertGreaterThan(best, 20, "the browser does not hear the terminal through TURN:\n\(Self.stats(browser, page))")
        XCTAssertTrue(Self.browsersKeepReaching(callroomd, packets: 100), "the browser's audio stopped reaching the room")
        assertConsentKept(callroomd)  // (consent checks through the TURN server's relayed address)
        terminal.send("leave")
        XCTAssertEqual(terminal.wait(timeout: 10), 0, terminal.errorOutput)
        let carrying = try Self.windowsCarrying(heardPath, hz: 880)
        XCTAssertGreaterThan(carrying.carrying, 10, "the browser's tone heard in \(carrying.carrying) of \(carrying.of) windows of 100 ms")
    }

    /// A host (a terminal) mutes a browser where the room holds a host's mute, then allows it to
    /// unmute, then stops its video: the page says so and its controls and tracks follow — never
    /// a "Mute" button on a microphone the server silences.
    func testAHostsMuteAndStoppedVideoAreToldTruthfullyInTheBrowser() throws {
        let tmp = TemporaryDirectory("callroom-browser-held")
        defer { tmp.remove() }
        let callroomd = try CallroomdProcess(dataDir: tmp.path + "/data")
        defer { _ = callroomd.stop() }
        let admin = ["apikey": callroomd.apiKey, "appId": callroomd.appId]
        XCTAssertEqual(BlockingHTTP.request("PUT", callroomd.url + "/v3/rooms/held", headers: admin, body: #"{"moderatorMute":"untilAllowed"}"#).status, 200)
        let host = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "held", "--server", callroomd.url, "--uid", "host", "--auth-key", callroomd.authKey,
                                                                       "--input", "null", "--output", "null", "--headless"])
        XCTAssertNotNil(host.waitForLine { $0.contains("onSessionJoined") }, host.errorOutput)
        let browser = try HeadlessChromium()
        defer { browser.close() }
        let page = try browser.open(try XCTUnwrap(Self.invite(callroomd, session: "held")))
        try Self.clickJoin(browser, page, name: "Guest")
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.phase === 'call' && \(Self.mediaConnected)", timeout: 20))
        let pid = try XCTUnwrap(browser.evaluate(page, "window.callroom.me.pid") as? String)
        let controls = "JSON.stringify({muted: window.callroom.muted, mic: window.callroom.local.getAudioTracks()[0].enabled, button: document.getElementById('mute').textContent, disabled: document.getElementById('mute').disabled, cameraOff: window.callroom.cameraOff, camera: window.callroom.local.getVideoTracks()[0].enabled, cameraButton: document.getElementById('camera-toggle').textContent, status: document.getElementById('status').textContent})"
        func state() -> String { ((try? browser.evaluate(page, controls)) as? String) ?? "" }
        // Its own quick mute and unmute: the server's answers to them are not the host's doing.
        _ = try browser.evaluate(page, "document.getElementById('mute').click(); document.getElementById('mute').click(); true")
        XCTAssertNotNil(host.waitForLine(timeout: 5) { $0.contains("onParticipantAudioUnmuted") && $0.contains("Guest") }, "the unmute not seen")
        XCTAssertTrue(try browser.evaluate(page, "!window.callroom.muted && window.callroom.local.getAudioTracks()[0].enabled && document.getElementById('mute').textContent === 'Mute' && !document.getElementById('status').textContent.includes('host')") as? Bool == true,
                      "its own toggles taken for the host's: \(state())")
        host.send("mute-participant \(pid)")
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.muted && !window.callroom.local.getAudioTracks()[0].enabled && document.getElementById('mute').textContent === 'Muted by host' && document.getElementById('mute').disabled && document.getElementById('status').textContent.includes('host muted you')", timeout: 5), state())
        // Its own click cannot unmute it meanwhile.
        _ = try browser.evaluate(page, "document.getElementById('mute').click(); true")
        XCTAssertEqual(try browser.evaluate(page, "window.callroom.muted") as? Bool, true, state())
        host.send("allow-unmute \(pid)")
        XCTAssertTrue(try browser.waitFor(page, "document.getElementById('mute').textContent === 'Unmute' && !document.getElementById('mute').disabled && document.getElementById('status').textContent.includes('allows you to unmute')", timeout: 5), state())
        _ = try browser.evaluate(page, "document.getElementById('mute').click(); true")
        XCTAssertNotNil(host.waitForLine(timeout: 5) { $0.contains("onParticipantAudioUnmuted") && $0.contains("Guest") }, "the browser's unmute not seen: \(state())")
        XCTAssertEqual(try browser.evaluate(page, "window.callroom.local.getAudioTracks()[0].enabled") as? Bool, true)
        host.send("pause-participant-video \(pid)")
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.cameraOff && !window.callroom.local.getVideoTracks()[0].enabled && document.getElementById('camera-toggle').textContent === 'Camera on' && document.getElementById('status').textContent.includes('stopped your video')", timeout: 5), state())
        host.send("leave")
        _ = host.wait(timeout: 10)
        // The server stops: the page says it is restarting (the wire's "server shutting down").
        _ = callroomd.stop()
        XCTAssertTrue(try browser.waitFor(page, "document.getElementById('ended-text').textContent.includes('server is restarting')", timeout: 10),
                      String(describing: try? browser.evaluate(page, "document.getElementById('ended-text').textContent")))
    }

    /// A browser's video in a recording (#38): the terminal moderator records while a browser
    /// sends its camera (Chromium's fake device) and microphone; the recorder, a subscriber of
    /// every video sender, gets the browser's VP8 through the gateway (its keyframe asked for by a
    /// PLI) and the browser's WebM holds VP8 and Opus, read by ffprobe from outside.
    func testABrowsersVideoAndAudioAreRecordedAsWebM() throws {
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: "/usr/bin/ffprobe"), "needs ffmpeg's ffprobe (scripts/install-deps.sh)")
        let tmp = TemporaryDirectory("callroom-browser-rec")
        defer { tmp.remove() }
        let callroomd = try CallroomdProcess(dataDir: tmp.path + "/data")
        defer { _ = callroomd.stop() }
        let terminal = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "webrec", "--server", callroomd.url, "--uid", "term",
                                                                           "--auth-key", callroomd.authKey, "--input", "tone:440", "--output", "null", "--headless"])
        XCTAssertNotNil(terminal.waitForLine { $0.contains("onSessionJoined") }, terminal.errorOutput)
        let browserTone = tmp.path + "/browser-880.wav"
        try Self.toneWAV(browserTone, hz: 880)
        let browser = try HeadlessChromium(audioFile: browserTone)
        defer { browser.close() }
        let page = try browser.open(try XCTUnwrap(Self.invite(callroomd, session: "webrec")))
        try Self.clickJoin(browser, page, name: "Web Camera")
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.phase === 'call' && \(Self.mediaConnected)", timeout: 20), "the browser's media did not connect")
        let webPid = try XCTUnwrap(try browser.evaluate(page, "window.callroom.me.pid") as? String)
        XCTAssertTrue(try browser.evaluate(page, "document.getElementById('host-controls').classList.contains('hidden')") as? Bool == true,
                      "a guest is offered the host's controls")
        terminal.send("start-recording")  // (the terminal joined first: the moderator)
        XCTAssertNotNil(terminal.waitForLine(timeout: 10) { $0.contains("onRecordingStarted") }, terminal.errorOutput)
        // Everyone in the call is told it is recorded, the browser too.
        XCTAssertTrue(try browser.waitFor(page, Self.says("indicators", "Recording"), timeout: 5), "the page does not say the call is recorded")
        // The browser's video track grows in the recording's directory.
        let recordings = tmp.path + "/data/recordings"
        let ivfBytes = { () -> Int in
            let dirs = (try? FileManager.default.contentsOfDirectory(atPath: recordings)) ?? []
            return dirs.compactMap { (try? FileManager.default.attributesOfItem(atPath: "\(recordings)/\($0)/\(webPid).ivf")[.size] as? NSNumber)?.intValue }.max() ?? 0
        }
        XCTAssertTrue(eventually(20, poll: 0.2) { ivfBytes() > 50_000 }, "the recorder writes the browser's video (\(ivfBytes()) bytes)\n\(Self.stats(browser, page))")
        terminal.send("stop-recording")
        XCTAssertNotNil(terminal.waitForLine(timeout: 10) { $0.contains("onRecordingStopped") }, terminal.errorOutput)
        XCTAssertTrue(try browser.waitFor(page, "document.getElementById('indicators').classList.contains('hidden')", timeout: 5),
                      "the page still says the call is recorded")
        let admin = ["apikey": callroomd.apiKey, "appId": callroomd.appId]
        let file = eventuallyValue(10, poll: 0.2) { () -> [String: Any]? in
            let call = BlockingHTTP.request("GET", callroomd.url + "/v3/calls/webrec", headers: admin).data
            let files = (call["recordings"] as? [[String: Any]])?.first?["files"] as? [[String: Any]] ?? []
            return files.first { $0["name"] as? String == "\(webPid).webm" }
        }
        let webm = try XCTUnwrap(file, "the browser's WebM in the call log")
        XCTAssertEqual(webm["video"] as? Bool, true)
        let got = BlockingHTTP.request("GET", try XCTUnwrap(webm["url"] as? String), headers: admin)
        XCTAssertEqual(got.status, 200, got.text)
        try got.body.write(to: URL(fileURLWithPath: tmp.path + "/web.webm"))
        let p = try ManagedProcess("/usr/bin/ffprobe", ["-v", "error", "-print_format", "json", "-show_streams", "-count_packets", tmp.path + "/web.webm"])
        XCTAssertEqual(p.wait(timeout: 20), 0, p.errorOutput)
        let streams = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(p.output.joined(separator: "\n").utf8)) as? [String: Any])?["streams"] as? [[String: Any]])
        XCTAssertEqual(Set(streams.compactMap { $0["codec_name"] as? String }), ["vp8", "opus"], "\(streams)")
        let v = try XCTUnwrap(streams.first { $0["codec_name"] as? String == "vp8" })
        XCTAssertGreaterThan(v["width"] as? Int ?? 0, 0)
        XCTAssertGreaterThan(Int(v["nb_read_packets"] as? String ?? "") ?? 0, 20, "the browser's frames: \(v)")
        terminal.send("leave")
        _ = terminal.wait(timeout: 10)
    }

    /// A terminal that joins just after the browser's first answer: the browser's next offer
    /// would come inside the server's 250 ms between offers. The page waits out the interval
    /// (before, the refused offer left it waiting for an answer for ever and it never heard the
    /// terminal).
    func testATerminalJoiningJustAfterTheBrowserIsHeard() throws {
        let tmp = TemporaryDirectory("callroom-browser-race")
        defer { tmp.remove() }
        let callroomd = try CallroomdProcess(dataDir: tmp.path + "/data")
        defer { _ = callroomd.stop() }
        let browser = try HeadlessChromium()
        defer { browser.close() }
        let page = try browser.open(try XCTUnwrap(Self.invite(callroomd, session: "race")))
        try Self.clickJoin(browser, page, name: "First", video: false)
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.answers >= 1", timeout: 20))
        let terminal = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "race", "--server", callroomd.url, "--uid", "term", "--auth-key", callroomd.authKey,
                                                                           "--input", "tone:440", "--output", "null", "--headless"])
        XCTAssertNotNil(terminal.waitForLine { $0.contains("onSessionJoined") }, terminal.errorOutput)
        let termPid = try XCTUnwrap(eventuallyValue(5, poll: 0.05) { try? Self.pid(browser, page, uid: "term") }, "the terminal not in the browser's roster")
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.streams.has(\(String(reflecting: termPid)))", timeout: 10),
                      "no stream from the terminal: \(Self.stats(browser, page))")
        let best = try Self.clearest(browser, page, pid: termPid, hz: 440)
        XCTAssertGreaterThan(best, 20, "the browser does not hear the terminal")
        terminal.send("leave")
        _ = terminal.wait(timeout: 10)
    }

    /// "Copy invite link": a guest's copy is the invite (the grant in `?invite=`); an account
    /// holder's `#authToken=…` leaves the address bar as the page loads and is never in a copied
    /// link (it stays for the tab, so a reload still joins). And the microphone picker switches
    /// the device the page uses.
    func testTheCopiedLinkNeverCarriesAnAuthTokenAndThePickerSwitchesDevices() throws {
        let tmp = TemporaryDirectory("callroom-browser-link")
        defer { tmp.remove() }
        let callroomd = try CallroomdProcess(dataDir: tmp.path + "/data")
        defer { _ = callroomd.stop() }
        let admin = ["apikey": callroomd.apiKey, "appId": callroomd.appId]
        let browser = try HeadlessChromium()
        defer { browser.close() }
        _ = try browser.call("Browser.grantPermissions", ["permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"], "origin": callroomd.url])
        let copied = "(async () => { document.getElementById('copy-link').click(); await new Promise(r => setTimeout(r, 300)); return await navigator.clipboard.readText(); })()"
        // A guest: the picker first, then the call and its link.
        let link = try XCTUnwrap(Self.invite(callroomd, session: "links"))
        var page = try browser.open(link)
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.local && document.getElementById('mic').options.length >= 2", timeout: 10),
                      "the fake devices are listed")
        let second = try XCTUnwrap(browser.evaluate(page, "document.getElementById('mic').options[1].value") as? String)
        _ = try browser.evaluate(page, "const m = document.getElementById('mic'); m.value = m.options[1].value; m.dispatchEvent(new Event('change')); true")
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.local && window.callroom.local.getAudioTracks()[0].getSettings().deviceId === \(String(reflecting: second))", timeout: 10),
                      "the page did not switch to the microphone picked")
        try Self.clickJoin(browser, page, name: "Guest")
        XCTAssertTrue(try browser.waitFor(page, Self.mediaConnected, timeout: 20))
        XCTAssertEqual(try browser.evaluate(page, copied) as? String, link, "a guest copies the invite it came with")
        // An account holder: the token is gone from the address bar and from what is copied.
        _ = BlockingHTTP.request("POST", callroomd.url + "/v3/users", headers: admin, body: #"{"uid":"ada","name":"Ada"}"#)
        let token = try XCTUnwrap(BlockingHTTP.request("POST", callroomd.url + "/v3/users/ada/auth_tokens", headers: admin).data["authToken"] as? String)
        page = try browser.open(callroomd.url + "/call/links#authToken=" + token)
        XCTAssertEqual(try browser.evaluate(page, "location.href") as? String, callroomd.url + "/call/links", "the token left the address bar")
        try Self.clickJoin(browser, page, name: "Ada")
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.phase === 'call' && \(Self.mediaConnected)", timeout: 20))
        let theirs = try XCTUnwrap(browser.evaluate(page, copied) as? String)
        XCTAssertFalse(theirs.contains(token) || theirs.contains("authToken"), "the copied link carries the auth token: \(theirs)")
        XCTAssertEqual(theirs, callroomd.url + "/call/links")
        // A reload (same tab) still joins: the token stayed with the tab.
        _ = try browser.evaluate(page, "document.getElementById('leave').click(); true")
        _ = try browser.call("Page.reload", [:], session: page.session)
        XCTAssertTrue(try browser.waitFor(page, "document.readyState === 'complete' && !!window.callroom && window.callroom.phase === 'prejoin' && !window.callroom.error", timeout: 10),
                      "after a reload: \(String(describing: try? browser.evaluate(page, "window.callroom && window.callroom.error")))")
        try Self.clickJoin(browser, page, name: "Ada")
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.phase === 'call' && window.callroom.me && window.callroom.me.uid === 'ada'", timeout: 20),
                      "the reload did not join as Ada")
    }

    /// Captions in the browser: a terminal's speech, transcribed by the server, shows under the
    /// tiles with the speaker's name while the page says captions are on; the person hides and
    /// shows them; when the host stops the transcription they go.
    func testTheBrowserShowsTheRoomsCaptions() throws {
        let tmp = TemporaryDirectory("callroom-browser-captions")
        defer { tmp.remove() }
        let callroomd = try CallroomdProcess(dataDir: tmp.path + "/data")
        defer { _ = callroomd.stop() }
        let terminal = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "webcc", "--server", callroomd.url, "--uid", "ada", "--name", "Ada",
                                                                           "--auth-key", callroomd.authKey, "--output", "null", "--headless",
                                                                           "--input", "file:" + BuiltProducts.packageRoot + "/Resources/clips/ada.wav"])
        defer { terminal.signal(SIGKILL); _ = terminal.wait(timeout: 5) }
        XCTAssertNotNil(terminal.waitForLine { $0.contains("onSessionJoined") }, terminal.errorOutput)
        let browser = try HeadlessChromium()
        defer { browser.close() }
        let page = try browser.open(try XCTUnwrap(Self.invite(callroomd, session: "webcc")))
        try Self.clickJoin(browser, page, name: "Reader")
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.phase === 'call'", timeout: 20))
        XCTAssertTrue(try browser.evaluate(page, "document.getElementById('cc').classList.contains('hidden')") as? Bool == true, "no captions to toggle yet")
        terminal.send("start-transcription")  // (the terminal joined first: the moderator)
        XCTAssertTrue(try browser.waitFor(page, Self.says("indicators", "Captions on"), timeout: 10), "the page does not say captions are on")
        let adaSaid = "[...document.querySelectorAll('#captions p')].some(p => p.querySelector('strong').textContent === 'Ada: ' && p.textContent.length > 'Ada: '.length)"
        XCTAssertTrue(try browser.waitFor(page, Self.says("captions", "Ada: ") + " && " + adaSaid, timeout: 45),
                      "no caption of Ada's speech on the page: \(terminal.output.suffix(3))")
        // Ada sends no video: her tile shows her initials, not a black picture.
        let adaTile = "document.querySelector('.tile:not([data-pid=\"' + window.callroom.me.pid + '\"])')"
        XCTAssertTrue(try browser.waitFor(page, "\(adaTile).querySelector('video').classList.contains('hidden') && \(adaTile).querySelector('.initials').textContent === 'A'", timeout: 5),
                      "a participant without video shows as a video")
        let dir = ProcessInfo.processInfo.environment["CALLROOM_SCREENSHOT_DIR"] ?? tmp.path
        try browser.screenshot(page).write(to: URL(fileURLWithPath: dir + "/browser-captions.png"))
        // A screen reader hears the final lines only, not every partial.
        XCTAssertTrue(try browser.waitFor(page, "document.getElementById('captions-read').textContent.startsWith('Ada: ')", timeout: 20), "no final caption for a screen reader")
        // A guess that the utterance's last pass did not confirm — a final with no text, as the
        // server sends it — leaves the page (the page's own handler, given both in one turn).
        let retracted = """
          (() => {
            const deliver = (text, final) => window.callroom.ws.onmessage({ data: JSON.stringify({ type: 'caption', caption:
              { tid: 'tr', pid: 'p-guess', uid: 'guess', name: 'Guesser', id: 7, text, final, start: 0, end: 900 } }) });
            deliver('a guess', false);
            const shown = document.getElementById('captions').textContent.includes('Guesser: a guess');
            deliver('', true);
            return shown && !document.getElementById('captions').textContent.includes('a guess') && !document.getElementById('captions-read').textContent.includes('Guesser');
          })()
          """
        XCTAssertEqual(try browser.evaluate(page, retracted) as? Bool, true, "an empty final left the guess on the page")
        // Hidden by the person, shown again.
        _ = try browser.evaluate(page, "document.getElementById('cc').click(); true")
        XCTAssertTrue(try browser.evaluate(page, "document.getElementById('captions').classList.contains('hidden') && document.getElementById('cc').textContent === 'Show captions'") as? Bool == true)
        _ = try browser.evaluate(page, "document.getElementById('cc').click(); true")
        XCTAssertTrue(try browser.waitFor(page, Self.says("captions", "Ada: "), timeout: 20), "captions not shown again")
        terminal.send("stop-transcription")
        XCTAssertTrue(try browser.waitFor(page, "document.getElementById('captions').classList.contains('hidden') && document.getElementById('cc').classList.contains('hidden') && document.getElementById('indicators').classList.contains('hidden')", timeout: 10),
                      "the captions stay after the transcription stopped")
    }

    /// A terminal shared into the room (`callroom share`) shows in the browser as text, cell for
    /// cell with its colours, follows as it changes, and goes when the share ends.
    func testTheBrowserShowsASharedTerminal() throws {
        let tmp = TemporaryDirectory("callroom-browser-share")
        defer { tmp.remove() }
        let callroomd = try CallroomdProcess(dataDir: tmp.path + "/data")
        defer { _ = callroomd.stop() }
        let browser = try HeadlessChromium()
        defer { browser.close() }
        let page = try browser.open(try XCTUnwrap(Self.invite(callroomd, session: "webshare")))
        try Self.clickJoin(browser, page, name: "Viewer")
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.phase === 'call'", timeout: 20))
        let script = #"printf '\033[31mFAIL\033[0m test_login \033[1;32mPASS\033[0m 日本\n'; for i in 1 2 3 4 5 6 7 8 9 10; do printf 'tick %d\r' $i; sleep 0.2; done; echo; echo done; sleep 3"#
        let share = try ManagedProcess(BuiltProducts.path("callroom"), ["share", "webshare", "--server", callroomd.url, "--uid", "lead", "--name", "Lead",
                                                                        "--auth-key", callroomd.authKey, "--size", "50x8", "--", "bash", "-c", script])
        defer { share.signal(SIGKILL); _ = share.wait(timeout: 5) }
        XCTAssertNotNil(share.waitForLine(timeout: 15) { $0.contains("sharing") }, share.errorOutput)
        let rows = "[...document.querySelectorAll('#shares .share pre > div')].map(d => d.textContent.replace(/ +$/, ''))"
        XCTAssertTrue(try browser.waitFor(page, "\(rows).join('\\n').startsWith('FAIL test_login PASS 日本\\ntick 10\\ndone')", timeout: 15),
                      "the shared terminal is not on the page: \(String(describing: try? browser.evaluate(page, "JSON.stringify(\(rows))")))")
        XCTAssertEqual(try browser.evaluate(page, "\(rows).length") as? Int, 8, "its eight rows")
        XCTAssertEqual(try browser.evaluate(page, "document.querySelector('#shares figcaption').textContent") as? String, "Shared by Lead's terminal", "who shares it (callroom share names itself so)")
        let spanOf = { (text: String) in "[...document.querySelectorAll('#shares pre span')].find(s => s.textContent.startsWith('\(text)'))" }
        XCTAssertEqual(try browser.evaluate(page, "getComputedStyle(\(spanOf("FAIL"))).color") as? String, "rgb(205, 0, 0)", "FAIL in red")
        XCTAssertEqual(try browser.evaluate(page, "getComputedStyle(\(spanOf("PASS"))).color") as? String, "rgb(0, 205, 0)", "PASS in green")
        XCTAssertEqual(try browser.evaluate(page, "getComputedStyle(\(spanOf("PASS"))).fontWeight") as? String, "700", "PASS bold")
        let dir = ProcessInfo.processInfo.environment["CALLROOM_SCREENSHOT_DIR"] ?? tmp.path
        try browser.screenshot(page).write(to: URL(fileURLWithPath: dir + "/browser-shared-terminal.png"))
        // The command ends: the share stops, and the page lets it go.
        XCTAssertEqual(share.wait(timeout: 20), 0, share.errorOutput)
        XCTAssertTrue(try browser.waitFor(page, "document.getElementById('shares').classList.contains('hidden') && !document.querySelector('#shares .share')", timeout: 10),
                      "the share stays on the page after it ended")
    }

    /// A browser shares its screen: it goes out as its video (Chromium's fake 800-pixel-wide
    /// screen replaces its camera on the same sender), the room is told (`isPresenting`: the terminal's
    /// `onParticipantStartedScreenShare`), the terminal decodes it, and the camera comes back
    /// when the share ends by the browser's own "Stop sharing" (the track's `ended`). A browser
    /// that joined with audio only shares too (a sender added, one more offer) and sends no
    /// video again once it stops (paused, as it joined).
    func testABrowserSharesItsScreenAsItsVideo() throws {
        let tmp = TemporaryDirectory("callroom-browser-screen")
        defer { tmp.remove() }
        let callroomd = try CallroomdProcess(dataDir: tmp.path + "/data")
        defer { _ = callroomd.stop() }
        let link = try XCTUnwrap(Self.invite(callroomd, session: "screens"))
        let dump = tmp.path + "/frames"
        let terminal = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "screens", "--server", callroomd.url, "--uid", "term",
                                                                           "--auth-key", callroomd.authKey, "--input", "null", "--output", "null",
                                                                           "--video", "pattern", "--video-out", dump, "--headless"])
        defer { terminal.send("leave"); _ = terminal.wait(timeout: 10) }
        XCTAssertNotNil(terminal.waitForLine { $0.contains("onSessionJoined") }, terminal.errorOutput)
        let browser = try HeadlessChromium()
        defer { browser.close() }
        let page = try browser.open(link)
        try Self.clickJoin(browser, page, name: "Presenter")
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.phase === 'call' && \(Self.mediaConnected)", timeout: 20), "the browser's media did not connect")
        let pid = try XCTUnwrap(try browser.evaluate(page, "window.callroom.me.pid") as? String)
        // (Chromium's fake screen is 800 wide; its fake camera 640.)
        let screenFrames = { Self.dumpedFrames(dump, pid: pid).filter { $0.key.contains("-800x") }.values.reduce(0, +) }
        let cameraFrames = { Self.dumpedFrames(dump, pid: pid).filter { !$0.key.contains("-800x") }.values.reduce(0, +) }
        XCTAssertTrue(eventually(15, poll: 0.2) { cameraFrames() >= 5 }, "the terminal decodes no camera from the browser: \(Self.dumpedFrames(dump, pid: pid))")
        XCTAssertTrue(try browser.evaluate(page, "!document.getElementById('share-screen').classList.contains('hidden')") as? Bool == true, "no Share screen button")
        let recording = FileManager.default.isExecutableFile(atPath: "/usr/bin/ffprobe")
        if recording {
            terminal.send("start-recording")  // (the terminal joined first: the moderator)
            XCTAssertTrue(try browser.waitFor(page, Self.says("indicators", "Recording"), timeout: 5))
        }

        _ = try browser.evaluate(page, "document.getElementById('share-screen').click(); true")
        let ownTile = "document.querySelector('.tile[data-pid=\"' + window.callroom.me.pid + '\"]')"
        XCTAssertTrue(try browser.waitFor(page, "!!window.callroom.screen && document.getElementById('share-screen').textContent === 'Stop sharing' && \(ownTile).classList.contains('presenting') && document.getElementById('camera-toggle').disabled", timeout: 10),
                      "the page does not say it shares: \(String(describing: try? browser.evaluate(page, "window.callroom.error")))")
        XCTAssertNotNil(terminal.waitForLine(timeout: 10) { $0.contains("onParticipantStartedScreenShare") && $0.contains("Presenter") }, "the room is not told")
        XCTAssertTrue(eventually(15, poll: 0.2) { screenFrames() >= 10 }, "the terminal decodes no 800-pixel screen from the browser: \(Self.dumpedFrames(dump, pid: pid))")
        let shots = ProcessInfo.processInfo.environment["CALLROOM_SCREENSHOT_DIR"] ?? tmp.path
        try browser.screenshot(page).write(to: URL(fileURLWithPath: shots + "/browser-sharing-screen.png"))
        // The browser's own "Stop sharing" ends the track: the share ends and the camera is back.
        let camera = cameraFrames()
        _ = try browser.evaluate(page, "window.callroom.screen.dispatchEvent(new Event('ended')); true")
        XCTAssertTrue(try browser.waitFor(page, "!window.callroom.screen && document.getElementById('share-screen').textContent === 'Share screen' && !\(ownTile).classList.contains('presenting') && !document.getElementById('camera-toggle').disabled", timeout: 10))
        XCTAssertNotNil(terminal.waitForLine(timeout: 10) { $0.contains("onParticipantStoppedScreenShare") && $0.contains("Presenter") }, "the share's end is not told")
        XCTAssertTrue(eventually(15, poll: 0.2) { cameraFrames() >= camera + 10 }, "the camera did not come back: \(Self.dumpedFrames(dump, pid: pid))")
        if recording {
            // The recording spans the share: one WebM whose frames change size and back, every one decoded.
            terminal.send("stop-recording")
            let admin = ["apikey": callroomd.apiKey, "appId": callroomd.appId]
            let file = eventuallyValue(10, poll: 0.2) { () -> [String: Any]? in
                let call = BlockingHTTP.request("GET", callroomd.url + "/v3/calls/screens", headers: admin).data
                let files = (call["recordings"] as? [[String: Any]])?.first?["files"] as? [[String: Any]] ?? []
                return files.first { $0["name"] as? String == "\(pid).webm" }
            }
            let got = BlockingHTTP.request("GET", try XCTUnwrap(file?["url"] as? String, "the browser's WebM in the call log"), headers: admin)
            try got.body.write(to: URL(fileURLWithPath: tmp.path + "/screen.webm"))
            let probe = try ManagedProcess("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "frame=width,height",
                                                                "-of", "csv=p=0", tmp.path + "/screen.webm"])
            XCTAssertEqual(probe.wait(timeout: 30), 0, probe.errorOutput)
            XCTAssertEqual(probe.errorOutput, "", "the decoder complained")
            var runs: [String] = []
            for size in probe.output where !size.isEmpty && runs.last != size { runs.append(size) }
            XCTAssertTrue(runs.count >= 3 && runs.first == runs.last && runs.contains { $0.hasPrefix("800,") },
                          "camera, screen, camera again: \(runs)")
        }

        // Audio only: no video until the share, a sender added for it, paused again after.
        let listener = try browser.open(link)
        try Self.clickJoin(browser, listener, name: "Listener", video: false)
        XCTAssertTrue(try browser.waitFor(listener, "window.callroom.phase === 'call' && \(Self.mediaConnected) && window.callroom.me.isVideoPaused && !window.callroom.videoSender", timeout: 20))
        let listenerPid = try XCTUnwrap(try browser.evaluate(listener, "window.callroom.me.pid") as? String)
        let answers = try XCTUnwrap(try browser.evaluate(listener, "window.callroom.answers") as? Int)
        _ = try browser.evaluate(listener, "document.getElementById('share-screen').click(); true")
        XCTAssertTrue(try browser.waitFor(listener, "!!window.callroom.videoSender && window.callroom.answers > \(answers) && !window.callroom.me.isVideoPaused && window.callroom.me.isPresenting", timeout: 10),
                      "no sender added, no new answer, or still paused: \(String(describing: try? browser.evaluate(listener, "JSON.stringify({error: window.callroom.error, me: window.callroom.me, answers: window.callroom.answers})")))")
        XCTAssertTrue(eventually(15, poll: 0.2) { (Self.dumpedFrames(dump, pid: listenerPid)["\(listenerPid).y4m"] ?? 0) >= 10 },
                      "the terminal decodes nothing of the audio-only browser's screen: \(Self.dumpedFrames(dump, pid: listenerPid))\n\(Self.stats(browser, listener))")
        _ = try browser.evaluate(listener, "document.getElementById('share-screen').click(); true")
        XCTAssertTrue(try browser.waitFor(listener, "!window.callroom.screen && window.callroom.me.isVideoPaused && !window.callroom.me.isPresenting", timeout: 10), "not paused again after the share")
        XCTAssertNotNil(terminal.waitForLine(timeout: 10) { $0.contains("onParticipantStoppedScreenShare") && $0.contains("Listener") }, "the share's end is not told")
    }

    /// A browser tells the room how it receives, as terminals do (`receiverReport` every 2 s):
    /// per sender's SSRC the share of packets lost (and for video the frames decoded a second),
    /// `red` on audio. A terminal whose only listener is a browser learns its own connection
    /// quality from it, and loses it once the browser has gone (reports older than 6 s expire).
    /// The page shows what its receivers say of it (`lossReport`) on its own tile.
    /// (No lossy link here: this kernel has no netem, and Chromium ignores its fake-network trials.)
    func testABrowsersReceptionReportsReachTheSender() throws {
        let tmp = TemporaryDirectory("callroom-browser-reports")
        defer { tmp.remove() }
        let callroomd = try CallroomdProcess(dataDir: tmp.path + "/data")
        defer { _ = callroomd.stop() }
        let terminal = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "reports", "--server", callroomd.url, "--uid", "term",
                                                                           "--auth-key", callroomd.authKey, "--input", "tone:440", "--output", "null",
                                                                           "--video", "pattern", "--headless"])
        defer { terminal.send("leave"); _ = terminal.wait(timeout: 10) }
        XCTAssertNotNil(terminal.waitForLine { $0.contains("onSessionJoined") }, terminal.errorOutput)
        /// The terminal's word on `pid`'s connection quality now (`connection-quality`).
        func quality(_ pid: String) -> String? {
            let before = terminal.output.count
            terminal.send("connection-quality")
            let line = eventuallyValue(5, poll: 0.05) { terminal.output.dropFirst(before).first { $0.contains("connectionQuality") } }
            let json = line.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            return (json?["connectionQuality"] as? [String: String])?[pid]
        }
        let browser = try HeadlessChromium()
        defer { browser.close() }
        let page = try browser.open(try XCTUnwrap(Self.invite(callroomd, session: "reports")))
        try Self.clickJoin(browser, page, name: "Listener")
        XCTAssertTrue(try browser.waitFor(page, "window.callroom.phase === 'call' && \(Self.mediaConnected)", timeout: 20))
        // What the page sends, kept as it goes.
        _ = try browser.evaluate(page, "(() => { const ws = window.callroom.ws, send = ws.send.bind(ws); window.sent = []; ws.send = (d) => { window.sent.push(JSON.parse(d)); send(d); }; return true; })()")
        let term = try XCTUnwrap(try Self.pid(browser, page, uid: "term"))
        XCTAssertTrue(eventually(10, poll: 0.5) { quality(term) == "good" }, "no report from the browser reached the terminal: \(quality(term) ?? "none")")
        let ssrcs = try XCTUnwrap(try browser.evaluate(page, "JSON.stringify((p => [p.ssrc, p.videoSsrc])(window.callroom.roster.get(\(String(reflecting: term)))))") as? String)
        let reports = try XCTUnwrap(try browser.evaluate(page, "JSON.stringify(window.sent.filter(m => m.type === 'receiverReport').flatMap(m => m.reports))") as? String)
        let list = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(reports.utf8)) as? [[String: Any]])
        let ids = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(ssrcs.utf8)) as? [Int])
        let audio = list.filter { $0["ssrc"] as? Int == ids.first }, video = list.filter { $0["ssrc"] as? Int == ids.last }
        XCTAssertFalse(audio.isEmpty, "no report on the terminal's audio: \(reports) (its SSRCs \(ssrcs))")
        XCTAssertTrue(audio.allSatisfy { ($0["lossPercent"] as? Double ?? 100) < 5 && $0["red"] as? Bool == true && $0["redBlocks"] as? Int == 8 && $0["framesPerSecond"] == nil }, reports)
        XCTAssertTrue(video.contains { ($0["framesPerSecond"] as? Double ?? 0) > 3 }, "no report on the terminal's video with its frame rate: \(reports)")
        XCTAssertTrue(video.allSatisfy { $0["red"] == nil }, reports)
        // And the page shows what it is told: a clean link says nothing; a receiver (a raw client
        // here) that hears the browser with 20 % lost makes its own tile say so, until it hears it whole.
        let qualityOf = { (pid: String) in "document.querySelector('.tile[data-pid=\"' + \(pid) + '\"] .quality')" }
        XCTAssertEqual(try browser.evaluate(page, "\(qualityOf(String(reflecting: term))).textContent") as? String, "", "a clean link said to be weak")
        let admin = ["apikey": callroomd.apiKey, "appId": callroomd.appId]
        _ = BlockingHTTP.request("POST", callroomd.url + "/v3/users", headers: admin, body: #"{"uid":"raw","name":"Raw"}"#)
        let token = try XCTUnwrap(BlockingHTTP.request("POST", callroomd.url + "/v3.0/call_tokens", headers: admin,
                                                       body: #"{"sessionId":"reports","uid":"raw"}"#).data["token"] as? String)
        let raw = try RawWebSocket(port: try XCTUnwrap(URL(string: callroomd.url)?.port), subprotocol: "callroom-signal", receiveBuffer: 1 << 20)
        try raw.send(text: #"{"type":"join","v":1,"callToken":"\#(token)","sessionId":"reports","audioMuted":true,"videoPaused":true,"sessionType":"voice"}"#)
        XCTAssertTrue(try browser.waitFor(page, "[...window.callroom.roster.values()].some(p => p.uid === 'raw')", timeout: 10), "the raw client did not join")
        let mySSRC = try XCTUnwrap(try browser.evaluate(page, "window.callroom.me.ssrc") as? Int)
        let mine = qualityOf("window.callroom.me.pid")
        try raw.send(text: #"{"type":"receiverReport","reports":[{"ssrc":\#(mySSRC),"lossPercent":20}]}"#)
        XCTAssertTrue(try browser.waitFor(page, "\(mine).textContent === 'Poor connection: others hear you with gaps' && !\(mine).classList.contains('hidden')", timeout: 5),
                      "the page does not say others hear it poorly")
        try browser.screenshot(page).write(to: URL(fileURLWithPath: (ProcessInfo.processInfo.environment["CALLROOM_SCREENSHOT_DIR"] ?? tmp.path) + "/browser-poor-connection.png"))
        try raw.send(text: #"{"type":"receiverReport","reports":[{"ssrc":\#(mySSRC),"lossPercent":0}]}"#)
        XCTAssertTrue(try browser.waitFor(page, "\(mine).classList.contains('hidden')", timeout: 5), "the warning stays once heard whole")
        _ = try browser.evaluate(page, "document.getElementById('leave').click(); true")
        XCTAssertTrue(eventually(12, poll: 0.5) { quality(term) == nil }, "its reports outlived it: \(quality(term) ?? "none")")
    }
}
