import CallRoomTestSupport
import Foundation
import XCTest

/// `callroom join --headless` accepts every action as a kebab-case command; each has its
/// observable effect in the JSON event lines, here and at a peer. Bad commands change nothing.
final class HeadlessCommandsTests: XCTestCase {
    func testEveryCommandHasItsEffect() throws {
        let tmp = TemporaryDirectory("callroom-cmds")
        defer { tmp.remove() }
        let callroomd = try CallroomdProcess(dataDir: tmp.path)
        let server = callroomd.process, url = callroomd.url, key = callroomd.authKey
        func client(_ uid: String) throws -> ManagedProcess {
            let p = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "cmds", "--server", url, "--uid", uid, "--auth-key", key,
                                                                        "--input", "null", "--output", "null", "--headless"])
            XCTAssertNotNil(p.waitForLine { $0.contains("onSessionJoined") }, p.errorOutput)
            return p
        }
        let ann = try client("ann")  // first in: moderator
        let ben = try client("ben")
        XCTAssertNotNil(ann.waitForLine { $0.contains("onParticipantJoined") && $0.contains("ben") })

        func expect(_ p: ManagedProcess, _ needles: [String], after command: String? = nil, on sender: ManagedProcess? = nil) {
            if let command { (sender ?? p).send(command) }
            let found = p.waitForLine(timeout: 5) { l in needles.allSatisfy { l.contains($0) } }
            XCTAssertNotNil(found, "\(command ?? "") → \(needles) not seen; output tail: \(p.output.suffix(3))")
        }
        expect(ann, ["onAudioMuted"], after: "mute-audio")
        expect(ben, ["onParticipantAudioMuted", "ann"])
        expect(ann, ["onAudioUnMuted"], after: "unmute")
        expect(ann, ["onVideoPaused"], after: "pause-video")
        expect(ben, ["onParticipantVideoPaused", "ann"])
        expect(ann, ["onVideoResumed"], after: "resume-video")
        expect(ann, ["onCameraFacingChanged", "REAR"], after: "switch-camera")
        expect(ann, ["onParticipantHandRaised", "ann"], after: "raise-hand")
        expect(ben, ["onParticipantHandLowered", "ann"], after: "lower-hand", on: ann)
        expect(ann, ["onCallLayoutChanged", "SPOTLIGHT"], after: "set-layout SPOTLIGHT")
        expect(ann, ["AUDIO_MODE_UNAVAILABLE"], after: "set-audio-mode HEADPHONES")
        expect(ann, ["onPictureInPictureLayoutEnabled"], after: "enable-picture-in-picture")
        expect(ann, ["onPictureInPictureLayoutDisabled"], after: "disable-picture-in-picture-layout")
        expect(ann, ["onRecordingStarted"], after: "start-recording")
        expect(ben, ["onRecordingStarted"])
        expect(ann, ["onRecordingStopped"], after: "stop-recording")
        expect(ann, ["onTranscriptionStarted", "en-US"], after: "start-transcription")
        expect(ben, ["onTranscriptionStarted"])
        expect(ann, ["onTranscriptionStopped"], after: "stop-transcription")
        expect(ann, ["ERR_NOT_STREAMING"], after: "stop-streaming")
        expect(ben, ["onAudioMuted"], after: "mute-participant ben", on: ann)
        expect(ben, ["onVideoPaused"], after: "pause-participant-video ben", on: ann)
        expect(ben, ["onParticipantListChanged", #""isPinned":true"#], after: "pin-participant ben", on: ann)
        expect(ben, ["onChatMessage", "hello everyone"], after: "send-chat hello everyone", on: ann)
        expect(ann, [#""isCallSessionActive":true"#], after: "is-call-session-active")
        expect(ann, [#""participants""#, "ben"], after: "participants")
        // A guest invite to share: the session's link with a grant, never a key.
        expect(ann, [#""guestInvite":true"#, #""inviteLink":""# + url + "/call/cmds?invite="], after: "invite-link")
        XCTAssertFalse(ann.output.contains { $0.contains("inviteLink") && $0.contains(key) }, "the invite carries no auth key")
        // A guest who came in with it cannot mint one: the plain link, and it says so and why.
        let link = try XCTUnwrap(ann.output.last { $0.contains("inviteLink") }.flatMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))).flatMap { ($0 as? [String: Any])?["inviteLink"] as? String }
        })
        let guest = try ManagedProcess(BuiltProducts.path("callroom"), ["join", link, "--name", "Grace", "--input", "null", "--output", "null", "--headless"])
        XCTAssertNotNil(guest.waitForLine { $0.contains("onSessionJoined") }, guest.errorOutput)
        expect(guest, [#""guestInvite":false"#, #""inviteLink":""# + url + #"/call/cmds""#, #""reason":"guests cannot invite""#], after: "invite-link")
        guest.send("leave")
        XCTAssertEqual(guest.wait(), 0)
        ann.send("set-chat-button-unread-count 4")
        ann.send("hide-settings-panel")
        // Bad commands: a JSON error line each, and nothing changes.
        expect(ann, ["UNKNOWN_COMMAND"], after: "fly-away")
        expect(ann, ["BAD_ARGUMENTS"], after: "set-layout")
        expect(ann, ["BAD_ARGUMENTS"], after: "mute-audio now")
        expect(ann, ["BAD_ARGUMENTS"], after: "set-chat-button-unread-count -2")
        expect(ann, ["INVALID_LAYOUT"], after: "set-layout DIAGONAL")
        expect(ben, ["ERR_NOT_MODERATOR"], after: "remove-participant ann")
        expect(ben, ["onSessionLeft"], after: "remove-participant ben", on: ann)
        expect(ben, [#""ending":"removed""#, "You were removed by ann"])
        XCTAssertEqual(ben.wait(), 5, "removed by a moderator: exit status 5")
        ann.send("leave-session")
        XCTAssertEqual(ann.wait(), 0)
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
    }

    /// Commands a script pipes in before the join completes (`printf 'mute\nraise-hand\n' |
    /// callroom join … --headless`) run once it does, in order, and the end of input leaves after
    /// them — they were run on no session and lost (the peer saw neither the mute nor the hand).
    func testCommandsSentWhileJoiningRunOnceJoined() throws {
        let tmp = TemporaryDirectory("callroom-early")
        defer { tmp.remove() }
        let callroomd = try CallroomdProcess(dataDir: tmp.path)
        let url = callroomd.url, key = callroomd.authKey
        func client(_ uid: String) throws -> ManagedProcess {
            try ManagedProcess(BuiltProducts.path("callroom"), ["join", "early", "--server", url, "--uid", uid, "--auth-key", key,
                                                                "--input", "null", "--output", "null", "--headless"])
        }
        let ann = try client("ann")
        XCTAssertNotNil(ann.waitForLine { $0.contains("onSessionJoined") }, ann.errorOutput)
        let ben = try client("ben")
        for line in ["mute-audio", "raise-hand"] { ben.send(line) }  // (at once: before the join is through)
        ben.closeInput()
        XCTAssertEqual(ben.wait(timeout: 15), 0, ben.errorOutput)
        XCTAssertTrue(ben.output.contains { $0.contains("onSessionJoined") }, "ben joined, then left: \(ben.output.suffix(3))")
        XCTAssertNotNil(ann.waitForLine(timeout: 5) { $0.contains("onParticipantAudioMuted") && $0.contains("ben") }, "ben's mute ran")
        XCTAssertNotNil(ann.waitForLine(timeout: 5) { $0.contains("onParticipantHandRaised") && $0.contains("ben") }, "ben's hand ran")
        XCTAssertNotNil(ann.waitForLine(timeout: 5) { $0.contains("onParticipantLeft") && $0.contains("ben") }, "and ben left after them")
    }

    /// `--duration` in a script (stdin /dev/null): joined, stays its time, leaves, exits 0 —
    /// without it the end of input leaves at once.
    func testADurationKeepsAHeadlessParticipantUnderAClosedStdin() throws {
        let tmp = TemporaryDirectory("callroom-duration")
        defer { tmp.remove() }
        let callroomd = try CallroomdProcess(dataDir: tmp.path)
        let p = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "timed", "--server", callroomd.url, "--uid", "ann",
                                                                    "--auth-key", callroomd.authKey, "--input", "null", "--output", "null",
                                                                    "--headless", "--duration", "1.5"], nullInput: true)
        XCTAssertNotNil(p.waitForLine { $0.contains("onSessionJoined") }, p.errorOutput)
        let joined = Date()
        XCTAssertEqual(p.wait(timeout: 10), 0, p.errorOutput)
        let stayed = Date().timeIntervalSince(joined)
        XCTAssertGreaterThan(stayed, 1.2, "it stayed its duration, not until the end of input")
        XCTAssertTrue(p.output.contains { $0.contains("onSessionLeft") }, "and left cleanly: \(p.output.suffix(2))")
    }

    /// Audio modes on a machine with headphones (a private ALSA configuration): switching to
    /// them and back continues the speaker's `file:` output instead of rewriting it, and
    /// picking the current mode fires nothing.
    func testAudioModeSwitchKeepsTheSpeakerFile() throws {
        let tmp = TemporaryDirectory("callroom-modes")
        defer { tmp.remove() }
        let conf = tmp.file("asound.conf")
        try #"pcm.headphones { type null hint { show on description "Test Headphones" } }"#.write(toFile: conf, atomically: true, encoding: .utf8)
        let callroomd = try CallroomdProcess(dataDir: tmp.path)
        let url = callroomd.url, key = callroomd.authKey
        let talker = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "modes", "--server", url, "--uid", "tone", "--auth-key", key,
                                                                         "--input", "tone:440", "--output", "null", "--headless"])
        XCTAssertNotNil(talker.waitForLine { $0.contains("onSessionJoined") }, talker.errorOutput)
        let wav = tmp.file("heard.wav")
        let me = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "modes", "--server", url, "--uid", "ear", "--auth-key", key,
                                                                     "--input", "null", "--output", "file:" + wav, "--headless"],
                                    environment: ["ALSA_CONFIG_PATH": conf])
        XCTAssertNotNil(me.waitForLine { $0.contains("onAudioModesChanged") && $0.contains("HEADPHONES") }, "headphones offered: \(me.output.suffix(3))")
        Thread.sleep(forTimeInterval: 2)
        me.send("set-audio-mode SPEAKER")
        me.send("set-audio-mode HEADPHONES")
        XCTAssertNotNil(me.waitForLine { $0.contains("onAudioModeChanged") && $0.contains("HEADPHONES") })
        Thread.sleep(forTimeInterval: 1)
        me.send("set-audio-mode SPEAKER")
        XCTAssertNotNil(me.waitForLine { $0.contains("onAudioModeChanged") && $0.contains("SPEAKER") })
        Thread.sleep(forTimeInterval: 1)
        me.send("leave")
        XCTAssertEqual(me.wait(), 0)
        XCTAssertEqual(me.output.filter { $0.contains("onAudioModeChanged") }.count, 2, "re-picking SPEAKER fired nothing: \(me.output)")
        let audio = try XCTUnwrap(SignalAnalysis.readWAV(wav))
        // 2 s before the switch + 1 s after it: the file holds both stretches, not only the last.
        XCTAssertGreaterThan(Double(audio.samples.count) / Double(audio.rate), 2.5, "the speaker file was continued, not rewritten")
        talker.send("leave")
        XCTAssertEqual(talker.wait(), 0)
    }

    /// `--impair loss=30`: the listener's quality for the talker drops to poor, as a
    /// `onConnectionQualityChanged` line (what the call screen logs and shows on the tile).
    func testImpairedJoinReportsTheQualityChange() throws {
        let tmp = TemporaryDirectory("callroom-impair")
        defer { tmp.remove() }
        let callroomd = try CallroomdProcess(dataDir: tmp.path)
        func client(_ uid: String, _ extra: [String]) throws -> ManagedProcess {
            let p = try ManagedProcess(BuiltProducts.path("callroom"), ["join", "imp", "--server", callroomd.url, "--uid", uid, "--auth-key",
                                                                        callroomd.authKey, "--output", "null", "--headless"] + extra)
            XCTAssertNotNil(p.waitForLine { $0.contains("onSessionJoined") }, p.errorOutput)
            return p
        }
        let talker = try client("talker", ["--input", "tone:440"])
        let ear = try client("ear", ["--input", "null", "--impair", "loss=30,seed=3"])
        let line = ear.waitForLine(timeout: 8) { $0.contains("onConnectionQualityChanged") && $0.contains("talker") }
        XCTAssertNotNil(line, "quality event: \(ear.output.suffix(3))")
        XCTAssertTrue(line?.contains("\"quality\":\"poor\"") == true, line ?? "")
        for p in [ear, talker] { p.send("leave"); XCTAssertEqual(p.wait(), 0) }
    }
}
