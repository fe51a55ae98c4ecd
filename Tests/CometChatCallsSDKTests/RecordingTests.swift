import CallRoomTestSupport
import CallsCore
import CallsServer
import CallsStore
@testable import CometChatCallsSDK
import Foundation
import XCTest

/// The server's recorder end to end: a moderator starts and stops it from the SDK, everyone
/// hears of it, the call log lists the recording, and its files — the mixed room and one per
/// participant — are served with Range and read by opusinfo/opusdec from outside.
final class RecordingTests: XCTestCase {
    func testAModeratorRecordsTheRoomAndItsFilesAreServed() async throws {
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: "/usr/bin/opusinfo"), "needs opus-tools (scripts/install-deps.sh)")
        // A webhook for recording_generated (its receiver need not answer: the outbox row is what is checked).
        let t = try TestServer.forSDK { $0.webhooks = [WebhookConfig(id: "rec", url: "http://127.0.0.1:9/hook", secret: "s3cret", triggers: ["recording_generated"])] }
        defer { t.stop() }
        let modEvents = EventRecorder<CallEvent>(), guestEvents = EventRecorder<CallEvent>()
        // (Voice sessions: this test is about the audio files; VideoRecordingTests has the WebM.)
        let mod = try await t.joinedClient("mod", session: "rec", settings: SessionSettingsBuilder().setSessionType(.voice)
            .setAudioInput("tone:440").setAudioOutput("null").build(), onEvent: { modEvents.add($0) })
        let guest = try await t.joinedClient("guest", session: "rec", settings: SessionSettingsBuilder().setSessionType(.voice)
            .setAudioInput("tone:660").setAudioOutput("null").build(), onEvent: { guestEvents.add($0) })
        guest.setSessionFeature(.recording, enabled: true)
        try await waitFor("a participant may not record", guestEvents) { if case .error("ERR_NOT_MODERATOR", _) = $0 { return true }; return false }
        mod.setSessionFeature(.recording, enabled: true)
        try await waitFor("onRecordingStarted (guest)", guestEvents) { $0 == .recordingStarted }
        try await waitFor("onRecordingStarted (moderator)", modEvents) { $0 == .recordingStarted }
        try await waitFor("who started it", guestEvents) { if case .participantStartedRecording(let p) = $0 { return p.uid == "mod" }; return false }
        XCTAssertTrue(guest.isServerRecording)
        XCTAssertEqual(guest.participants.count, 2, "the recorder is no participant")
        mod.setSessionFeature(.recording, enabled: true)
        try await waitFor("one recording at a time", modEvents) { if case .error("ERR_ALREADY_RECORDING", _) = $0 { return true }; return false }
        try await Task.sleep(nanoseconds: 3_000_000_000)
        mod.setSessionFeature(.recording, enabled: false)
        try await waitFor("onRecordingStopped", guestEvents) { $0 == .recordingStopped }

        // The call log lists it once the recorder has finished its files.
        let admin = ["apikey": t.server.keys.apiKey]
        let rec = await eventuallyValue(5, poll: 0.1) { () -> [String: Any]? in
            let call = BlockingHTTP.request("GET", t.server.url + "/v3/calls/rec", headers: admin).data
            guard let r = (call["recordings"] as? [[String: Any]])?.first, r["endTime"] is NSNumber, (r["files"] as? [Any])?.count == 3 else { return nil }
            return r
        } ?? [:]
        let files = try XCTUnwrap(rec["files"] as? [[String: Any]], "\(rec)")
        XCTAssertEqual(Set(files.compactMap { $0["kind"] as? String }), ["mixed", "participant"])
        let duration = try XCTUnwrap(rec["duration"] as? Double)
        XCTAssertEqual(duration, 3.0, accuracy: 0.7, "about the 3 s recorded")
        let url = try XCTUnwrap(rec["recordingURL"] as? String)
        // recording_generated is queued for the webhook, naming the recording and where to get it.
        let deliveries = BlockingHTTP.request("GET", t.server.url + "/v3/webhooks/deliveries", headers: admin).json["data"] as? [[String: Any]]
        let hook = try XCTUnwrap(deliveries?.first { $0["trigger"] as? String == "recording_generated" }?["body"] as? String, "\(deliveries ?? [])")
        let rid = try XCTUnwrap(rec["rid"] as? String)
        XCTAssertTrue(hook.contains(#""trigger":"recording_generated""#) && hook.contains(rid), hook)
        XCTAssertTrue(hook.contains(url.replacingOccurrences(of: "/", with: "\\/")) || hook.contains(url), hook)

        // The mixed file, fetched as a participant of the call; opusinfo agrees on its length.
        let login = BlockingHTTP.request("POST", t.server.url + "/v3/sdk/login", headers: ["appId": t.appId],
                                         body: #"{"uid":"guest","authKey":"\#(t.authKey)"}"#)
        let token = try XCTUnwrap(login.data["authToken"] as? String)
        let mixed = BlockingHTTP.request("GET", url, headers: ["authToken": token, "appId": t.appId])
        XCTAssertEqual(mixed.status, 200)
        XCTAssertEqual(mixed.headers["content-type"], "audio/ogg")
        let dir = TemporaryDirectory("callroom-rec-sdk")
        defer { dir.remove() }
        try mixed.body.write(to: URL(fileURLWithPath: dir.file("mixed.opus")))
        let info = try ManagedProcess("/usr/bin/opusinfo", [dir.file("mixed.opus")])
        XCTAssertEqual(info.wait(timeout: 20), 0, info.output.joined(separator: "\n"))
        // Range.
        let part = BlockingHTTP.request("GET", url, headers: ["authToken": token, "appId": t.appId, "Range": "bytes=0-99"])
        XCTAssertEqual(part.status, 206)
        XCTAssertEqual(part.body, mixed.body.prefix(100))
        XCTAssertEqual(part.headers["content-range"], "bytes 0-99/\(mixed.body.count)")
        // (From the middle and from the end: read from the disk at their offsets.)
        let middle = BlockingHTTP.request("GET", url, headers: ["authToken": token, "appId": t.appId, "Range": "bytes=1000-1499"])
        XCTAssertEqual(middle.status, 206)
        XCTAssertEqual(middle.body, mixed.body.subdata(in: 1000..<1500))
        let tail = BlockingHTTP.request("GET", url, headers: ["authToken": token, "appId": t.appId, "Range": "bytes=-50"])
        XCTAssertEqual(tail.body, mixed.body.suffix(50))
        XCTAssertEqual(tail.headers["content-range"], "bytes \(mixed.body.count - 50)-\(mixed.body.count - 1)/\(mixed.body.count)")
        XCTAssertEqual(BlockingHTTP.request("GET", url, headers: ["authToken": token, "appId": t.appId, "Range": "bytes=\(mixed.body.count)-"]).status, 416)
        // Several ranges, or another unit: ignored, the whole file (a 416 would say none of it exists).
        for spec in ["bytes=0-1,5-6", "items=0-5"] {
            let whole = BlockingHTTP.request("GET", url, headers: ["authToken": token, "appId": t.appId, "Range": spec])
            XCTAssertEqual(whole.status, 200, spec)
            XCTAssertEqual(whole.body, mixed.body, spec)
        }
        // Each participant's own file holds their own tone.
        for (uid, tone, other) in [("mod", 440.0, 660.0), ("guest", 660.0, 440.0)] {
            let f = try XCTUnwrap(files.first { $0["uid"] as? String == uid }, "\(files)")
            let body = BlockingHTTP.request("GET", try XCTUnwrap(f["url"] as? String), headers: admin).body
            let path = dir.file("\(uid).opus")
            try body.write(to: URL(fileURLWithPath: path))
            let dec = try ManagedProcess("/usr/bin/opusdec", ["--quiet", "--rate", "48000", path, path + ".wav"])
            XCTAssertEqual(dec.wait(timeout: 20), 0, dec.errorOutput)
            let windows = SignalAnalysis.windows(try XCTUnwrap(SignalAnalysis.readWAV(path + ".wav")).samples, size: 4800)
            let heard = windows.filter { SignalAnalysis.toneDominanceDB($0, frequency: tone, others: [other]) > 20 }.count
            XCTAssertGreaterThan(heard, windows.count / 2, "\(uid)'s file is \(Int(tone)) Hz: \(heard) of \(windows.count)")
        }
        // Someone who was not in the call sees nothing.
        let stranger = BlockingHTTP.request("POST", t.server.url + "/v3/sdk/login", headers: ["appId": t.appId],
                                            body: #"{"uid":"stranger","authKey":"\#(t.authKey)"}"#)
        let st = try XCTUnwrap(stranger.data["authToken"] as? String)
        XCTAssertEqual(BlockingHTTP.request("GET", url, headers: ["authToken": st, "appId": t.appId]).status, 404)
        // A late joiner (#34): in the call now, but not while it was recorded — refused, and the
        // call log they see lists no recording; the moderator still gets it.
        let late = try await t.joinedClient("carl", session: "rec", settings: SessionSettingsBuilder()
            .setAudioInput("tone:880").setAudioOutput("null").build(), onEvent: { _ in })
        let carl = BlockingHTTP.request("POST", t.server.url + "/v3/sdk/login", headers: ["appId": t.appId],
                                        body: #"{"uid":"carl","authKey":"\#(t.authKey)"}"#)
        let ct = try XCTUnwrap(carl.data["authToken"] as? String)
        let refused = BlockingHTTP.request("GET", url, headers: ["authToken": ct, "appId": t.appId])
        XCTAssertEqual(refused.status, 403, "the late joiner gets a refusal for the earlier recording")
        XCTAssertEqual(refused.errorCode, "ERR_FORBIDDEN")
        let seen = BlockingHTTP.request("GET", t.server.url + "/v3/calls/rec", headers: ["authToken": ct, "appId": t.appId]).data
        XCTAssertEqual((seen["recordings"] as? [Any])?.count ?? 0, 0, "\(seen)")
        let listed = BlockingHTTP.request("GET", t.server.url + "/v3/calls", headers: ["authToken": ct, "appId": t.appId]).json["data"] as? [[String: Any]]
        XCTAssertEqual((listed?.first?["recordings"] as? [Any])?.count ?? 0, 0, "nor in the list of calls: \(listed ?? [])")
        let modLogin = BlockingHTTP.request("POST", t.server.url + "/v3/sdk/login", headers: ["appId": t.appId],
                                            body: #"{"uid":"mod","authKey":"\#(t.authKey)"}"#)
        let mt = try XCTUnwrap(modLogin.data["authToken"] as? String)
        XCTAssertEqual(BlockingHTTP.request("GET", url, headers: ["authToken": mt, "appId": t.appId]).status, 200, "a moderator gets every recording")
        await late.leave()
        await guest.leave()
        await mod.leave()
    }
}

/// Video in recordings (#38): a participant who sends video gets a WebM (VP8 + Opus) beside the
/// Ogg Opus files, checked from outside by ffprobe — both streams, its length, the offset between
/// them — and the call log says which file has video; one muted throughout gets the video alone.
final class VideoRecordingTests: XCTestCase {
    func testAParticipantsVideoAndAudioAreRecordedAsWebM() async throws {
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: "/usr/bin/ffprobe"), "needs ffmpeg's ffprobe (scripts/install-deps.sh)")
        let t = try TestServer.forSDK()
        defer { t.stop() }
        let events = EventRecorder<CallEvent>()
        let mod = try await t.joinedClient("mod", session: "vrec", settings: SessionSettingsBuilder().setSessionType(.video)
            .setAudioInput("tone:440").setAudioOutput("null").setVideoSource("pattern")
            .setVideoFormat(width: 320, height: 180, fps: 15, bitrateKbps: 300).build(), onEvent: { events.add($0) })
        let guest = try await t.joinedClient("guest", session: "vrec", settings: SessionSettingsBuilder().setSessionType(.voice)
            .setAudioInput("tone:660").setAudioOutput("null").build())
        let silent = try await t.joinedClient("silent", session: "vrec", settings: SessionSettingsBuilder().setSessionType(.video)
            .startAudioMuted(true).setAudioInput("tone:550").setAudioOutput("null").setVideoSource("pattern")
            .setVideoFormat(width: 160, height: 90, fps: 15, bitrateKbps: 100).build())
        mod.setSessionFeature(.recording, enabled: true)
        try await waitFor("onRecordingStarted", events) { $0 == .recordingStarted }
        // Recorded for a while: the moderator's video file grows past a few frames.
        let grown = await t.recordingFileGrows(".ivf", beyond: 60_000)
        XCTAssertTrue(grown, "the recorder writes the moderator's video")
        mod.setSessionFeature(.recording, enabled: false)
        try await waitFor("onRecordingStopped", events) { $0 == .recordingStopped }
        let admin = ["apikey": t.server.keys.apiKey]
        let rec = await eventuallyValue(10, poll: 0.1) { () -> [String: Any]? in
            let call = BlockingHTTP.request("GET", t.server.url + "/v3/calls/vrec", headers: admin).data
            guard let r = (call["recordings"] as? [[String: Any]])?.first, r["endTime"] is NSNumber else { return nil }
            return r
        } ?? [:]
        let files = try XCTUnwrap(rec["files"] as? [[String: Any]], "\(rec)")
        let modPID = try XCTUnwrap(mod.localParticipantID)
        let webm = try XCTUnwrap(files.first { $0["name"] as? String == "\(modPID).webm" }, "the moderator's WebM: \(files)")
        XCTAssertEqual(webm["video"] as? Bool, true)
        XCTAssertEqual(webm["uid"] as? String, "mod")
        XCTAssertEqual(files.filter { $0["video"] as? Bool == true }.count, 2, "the guest sent no video: \(files)")
        XCTAssertEqual(files.count, 5, "the mix, two Ogg Opus files (the muted one sent no audio), two WebMs: \(files)")
        // Muted throughout: their video alone.
        let silentPID = try XCTUnwrap(silent.localParticipantID)
        let silentFile = try XCTUnwrap(files.first { $0["name"] as? String == "\(silentPID).webm" }, "the muted one's WebM: \(files)")
        XCTAssertEqual(silentFile["uid"] as? String, "silent")
        XCTAssertGreaterThan(silentFile["duration"] as? Double ?? 0, 0.5)
        // Served as video/webm; ffprobe reads both streams from outside.
        let got = BlockingHTTP.request("GET", try XCTUnwrap(webm["url"] as? String), headers: admin)
        XCTAssertEqual(got.status, 200, got.text)
        XCTAssertEqual(got.headers["content-type"], "video/webm")
        let dir = TemporaryDirectory("callroom-vrec")
        defer { dir.remove() }
        try got.body.write(to: URL(fileURLWithPath: dir.file("m.webm")))
        let p = try ManagedProcess("/usr/bin/ffprobe", ["-v", "error", "-print_format", "json", "-show_streams", "-show_format", dir.file("m.webm")])
        XCTAssertEqual(p.wait(timeout: 20), 0, p.errorOutput)
        let info = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(p.output.joined(separator: "\n").utf8)) as? [String: Any])
        let streams = try XCTUnwrap(info["streams"] as? [[String: Any]])
        XCTAssertEqual(Set(streams.compactMap { $0["codec_name"] as? String }), ["vp8", "opus"], "\(streams)")
        let v = try XCTUnwrap(streams.first { $0["codec_name"] as? String == "vp8" })
        XCTAssertEqual(v["width"] as? Int, 320)
        XCTAssertEqual(v["height"] as? Int, 180)
        let a = try XCTUnwrap(streams.first { $0["codec_name"] as? String == "opus" })
        let duration = try XCTUnwrap(Double((info["format"] as? [String: Any])?["duration"] as? String ?? ""))
        XCTAssertEqual(duration, try XCTUnwrap(webm["duration"] as? Double), accuracy: 0.1, "the call log's length is the file's")
        // Audio and video started together in the call (both from the join): within a few frames in the file.
        let offset = abs((Double(v["start_time"] as? String ?? "") ?? 9) - (Double(a["start_time"] as? String ?? "") ?? 0))
        XCTAssertLessThan(offset, 0.3, "A/V offset \(offset) s")
        XCTAssertFalse(FileManager.default.fileExists(atPath: t.dir + "/recordings/\(rec["rid"] as? String ?? "")/\(modPID).ivf"), "the IVF is gone")
        let silentGot = BlockingHTTP.request("GET", try XCTUnwrap(silentFile["url"] as? String), headers: admin)
        XCTAssertEqual(silentGot.status, 200, silentGot.text)
        try silentGot.body.write(to: URL(fileURLWithPath: dir.file("s.webm")))
        let q = try ManagedProcess("/usr/bin/ffprobe", ["-v", "error", "-print_format", "json", "-show_streams", dir.file("s.webm")])
        XCTAssertEqual(q.wait(timeout: 20), 0, q.errorOutput)
        let silentStreams = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(q.output.joined(separator: "\n").utf8)) as? [String: Any])?["streams"] as? [[String: Any]])
        XCTAssertEqual(silentStreams.compactMap { $0["codec_name"] as? String }, ["vp8"])
        XCTAssertEqual(silentStreams.first?["width"] as? Int, 160)
        await silent.leave()
        await guest.leave()
        await mod.leave()
    }
}

/// Storage limits: a full quota refuses a recording at once, with the reason; recordings past
/// their retention are deleted, files and call-log entries both.
final class RecordingLimitsTests: XCTestCase {
    func moderator(_ t: TestServer, _ events: EventRecorder<CallEvent>) async throws -> CallsClient {
        try await t.joinedClient("boss", session: "kept", settings: SessionSettingsBuilder()
            .setAudioInput("tone:440").setAudioOutput("null").build(), onEvent: { events.add($0) })
    }

    func testAFullQuotaRefusesARecordingAtOnce() async throws {
        let t = try TestServer.forSDK { $0.recordingQuotaMB = 1 }
        defer { t.stop() }
        // 2 MB of earlier recordings already.
        let old = t.dir + "/recordings/rec_old"
        try FileManager.default.createDirectory(atPath: old, withIntermediateDirectories: true)
        try Data(count: 2_000_000).write(to: URL(fileURLWithPath: old + "/mixed.opus"))
        let events = EventRecorder<CallEvent>()
        let boss = try await moderator(t, events)
        let asked = Date()
        boss.setSessionFeature(.recording, enabled: true)
        await eventually(3) { events.all.contains(where: { if case .error("ERR_RECORDING_FAILED", _) = $0 { return true }; return false }) }
        let refusal = events.all.compactMap { e -> String? in if case .error("ERR_RECORDING_FAILED", let m) = e { return m }; return nil }.first
        XCTAssertTrue(refusal?.contains("quota") == true, "\(events.all.map(\.callback))")
        XCTAssertLessThan(Date().timeIntervalSince(asked), 2, "at once, not after the start timeout")
        XCTAssertFalse(boss.isServerRecording)
        await boss.leave()
    }

    func testRecordingsPastTheirRetentionAreDeleted() async throws {
        let t = try TestServer.forSDK { $0.recordingRetentionDays = 7 }
        defer { t.stop() }
        let events = EventRecorder<CallEvent>()
        let boss = try await moderator(t, events)
        boss.setSessionFeature(.recording, enabled: true)
        await eventually(3) { events.all.contains(.recordingStarted) }
        try await Task.sleep(nanoseconds: 1_200_000_000)
        boss.setSessionFeature(.recording, enabled: false)
        let admin = ["apikey": t.server.keys.apiKey]
        var rid: String?
        rid = await eventuallyValue(5, poll: 0.1) { () -> String? in
            let r = (BlockingHTTP.request("GET", t.server.url + "/v3/calls/kept", headers: admin).data["recordings"] as? [[String: Any]])?.first
            return r?["endTime"] is NSNumber ? r?["rid"] as? String : nil
        }
        let id = try XCTUnwrap(rid)
        XCTAssertEqual(t.server.sweepRecordings().recordings, 0, "a fresh recording stays")
        XCTAssertTrue(FileManager.default.fileExists(atPath: t.dir + "/recordings/\(id)"))
        XCTAssertEqual(t.server.sweepRecordings(now: epochMilliseconds() + 8 * 86_400_000).recordings, 1, "eight days on, it goes")
        XCTAssertFalse(FileManager.default.fileExists(atPath: t.dir + "/recordings/\(id)"))
        let call = BlockingHTTP.request("GET", t.server.url + "/v3/calls/kept", headers: admin).data
        XCTAssertEqual(call["hasRecording"] as? Bool, false)
        XCTAssertEqual(BlockingHTTP.request("GET", t.server.url + "/v3/calls/kept/recordings/\(id)", headers: admin).status, 404)
        await boss.leave()
    }
}

/// A full disk under a running recording, end to end: the recorder stops cleanly, the
/// moderator is told, the room hears the recording stopped, and what fitted is kept, finalised
/// and served.
final class RecordingFullDiskTests: XCTestCase {
    func testAFullDiskStopsTheRecordingTellsTheModeratorAndKeepsWhatWasWritten() async throws {
        try XCTSkipUnless(getuid() == 0, "needs root to mount a small tmpfs")
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: "/usr/bin/opusinfo"), "needs opus-tools (scripts/install-deps.sh)")
        let dir = TemporaryDirectory("callroom-full")
        defer { dir.remove() }
        let data = dir.file("data")
        try FileManager.default.createDirectory(atPath: data + "/recordings", withIntermediateDirectories: true)
        // 96 KiB for recordings: two participants at ≈ 4 KB/s fill it in about 10 s.
        let m = try ManagedProcess("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=96k", "tmpfs", data + "/recordings"])
        try XCTSkipUnless(m.wait(timeout: 10) == 0, "cannot mount a tmpfs here: \(m.errorOutput)")
        defer { _ = try? ManagedProcess("/usr/bin/umount", ["-l", data + "/recordings"]).wait(timeout: 10) }
        let t = try TestServer.forSDK { $0.dataDir = data }
        defer { t.stop() }
        let modEvents = EventRecorder<CallEvent>(), guestEvents = EventRecorder<CallEvent>()
        let mod = try await t.joinedClient("mod", session: "full", settings: SessionSettingsBuilder()
            .setAudioInput("tone:440").setAudioOutput("null").build(), onEvent: { modEvents.add($0) })
        let guest = try await t.joinedClient("guest", session: "full", settings: SessionSettingsBuilder()
            .setAudioInput("tone:660").setAudioOutput("null").build(), onEvent: { guestEvents.add($0) })
        mod.setSessionFeature(.recording, enabled: true)
        await eventually(5) { guestEvents.all.contains(.recordingStarted) }
        XCTAssertTrue(guestEvents.all.contains(.recordingStarted))
        // The disk fills: the moderator hears why, everyone that it stopped.
        await eventually(30) { modEvents.all.contains(where: { if case .error("ERR_RECORDING_FAILED", _) = $0 { return true }; return false }) }
        XCTAssertTrue(modEvents.all.contains { if case .error("ERR_RECORDING_FAILED", let m) = $0 { return m.contains("the server's disk is full") && !m.contains("/") }; return false },
                      "the moderator is told why, and not the server's paths: \(modEvents.all)")
        await eventually(5) { guestEvents.all.contains(.recordingStopped) }
        XCTAssertTrue(guestEvents.all.contains(.recordingStopped))
        XCTAssertFalse(guest.isServerRecording)
        // What fitted is in the call log, finished, and plays.
        let admin = ["apikey": t.server.keys.apiKey]
        let files: [[String: Any]] = await eventuallyValue(10, poll: 0.1) { () -> [[String: Any]]? in
            let call = BlockingHTTP.request("GET", t.server.url + "/v3/calls/full", headers: admin).data
            guard let r = (call["recordings"] as? [[String: Any]])?.first, r["endTime"] is NSNumber else { return nil }
            return r["files"] as? [[String: Any]] ?? []
        } ?? []
        let tracks = files.filter { $0["kind"] as? String == "participant" }
        XCTAssertEqual(tracks.count, 2, "both participants' files: \(files)")
        for f in tracks {
            XCTAssertGreaterThan(f["duration"] as? Double ?? 0, 2, "seconds of it kept: \(f)")
            let body = BlockingHTTP.request("GET", try XCTUnwrap(f["url"] as? String), headers: admin).body
            let path = dir.file("got-\(f["pid"] as? String ?? "x").opus")
            try body.write(to: URL(fileURLWithPath: path))
            let info = try ManagedProcess("/usr/bin/opusinfo", [path])
            XCTAssertEqual(info.wait(timeout: 20), 0, info.output.joined(separator: "\n"))
        }
        // No room for the mix when it stopped: made from what was written once there is.
        XCTAssertFalse(files.contains { $0["kind"] as? String == "mixed" }, "no part-written mix: \(files)")
        let grow = try ManagedProcess("/usr/bin/mount", ["-o", "remount,size=8m", data + "/recordings"])
        XCTAssertEqual(grow.wait(timeout: 10), 0, grow.errorOutput)
        XCTAssertEqual(t.server.mixPendingRecordings(), 1, "the held-back mix is made")
        let after = BlockingHTTP.request("GET", t.server.url + "/v3/calls/full", headers: admin).data
        let all = ((after["recordings"] as? [[String: Any]])?.first?["files"] as? [[String: Any]]) ?? []
        let mixed = try XCTUnwrap(all.first { $0["kind"] as? String == "mixed" }, "\(all)")
        let longest = tracks.compactMap { $0["duration"] as? Double }.max() ?? 0
        XCTAssertEqual(mixed["duration"] as? Double ?? 0, longest, accuracy: 0.5, "the mix spans what was written")
        let body = BlockingHTTP.request("GET", try XCTUnwrap(mixed["url"] as? String), headers: admin).body
        try body.write(to: URL(fileURLWithPath: dir.file("mixed.opus")))
        let info = try ManagedProcess("/usr/bin/opusinfo", [dir.file("mixed.opus")])
        XCTAssertEqual(info.wait(timeout: 20), 0, info.output.joined(separator: "\n"))
        XCTAssertEqual(t.server.mixPendingRecordings(), 0, "once")
        // The call goes on, and the moderator may record again once there is room.
        XCTAssertTrue(mod.isSessionActive)
        await guest.leave()
        await mod.leave()
    }

    /// The whole data directory full — the database too: the recording's end row, refused when
    /// it stopped, is written once there is room (tried every 5 s), with what was recorded;
    /// the call log does not keep a recording that never ends.
    func testARecordingEndTheDatabaseRefusedIsWrittenOnceThereIsRoom() async throws {
        let disk = try SmallDisk(size: "4m")
        defer { disk.remove() }
        let data = disk.path
        let t = try TestServer.forSDK { $0.dataDir = data }
        defer { t.stop() }
        let modEvents = EventRecorder<CallEvent>()
        let mod = try await t.joinedClient("mod", session: "dbfull", settings: SessionSettingsBuilder()
            .setAudioInput("tone:440").setAudioOutput("null").build(), onEvent: { modEvents.add($0) })
        let guest = try await t.joinedClient("guest", session: "dbfull", settings: SessionSettingsBuilder()
            .setAudioInput("tone:660").setAudioOutput("null").build())
        mod.setSessionFeature(.recording, enabled: true)
        await eventually(5) { modEvents.all.contains(.recordingStarted) }
        // Both voices on disk (a few pages each) before it fills.
        func trackBytes() -> [Int] {
            let root = data + "/recordings"
            let dirs = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
            return dirs.flatMap { d in ((try? FileManager.default.contentsOfDirectory(atPath: root + "/" + d)) ?? []).filter { $0.hasSuffix(".opus") }
                .map { (try? FileManager.default.attributesOfItem(atPath: root + "/" + d + "/" + $0)[.size] as? NSNumber)?.intValue ?? 0 } }
        }
        await eventually(10) { trackBytes().filter { $0 > 4000 }.count == 2 }
        XCTAssertEqual(trackBytes().filter { $0 > 4000 }.count, 2, "\(trackBytes())")
        try disk.fill()
        // (The room hears it stopped; the moderator's error comes on its own, either side of that.)
        func failure() -> String? {
            modEvents.all.lazy.compactMap { if case .error("ERR_RECORDING_FAILED", let m) = $0 { return m }; return nil }.first
        }
        await eventually(30) { failure() != nil && modEvents.all.contains(.recordingStopped) }
        XCTAssertTrue(failure()?.contains("the server's disk is full") == true, "\(failure() ?? "no ERR_RECORDING_FAILED"): \(modEvents.all.count) events")
        let admin = ["apikey": t.server.keys.apiKey]
        func recording() -> [String: Any]? {
            (BlockingHTTP.request("GET", t.server.url + "/v3/calls/dbfull", headers: admin).data["recordings"] as? [[String: Any]])?.first
        }
        XCTAssertNil(recording()?["endTime"], "the end row was refused: \(recording() ?? [:])")
        // (The recorder's thread takes the retry on as it finishes, which the room may hear of first.)
        await eventually(5) { t.server.writeRetries.pending == 1 }
        XCTAssertEqual(t.server.writeRetries.pending, 1, "tried again")
        try disk.makeRoom()
        let ended = await eventuallyValue(15, poll: 0.2) { () -> [String: Any]? in
            guard let r = recording(), r["endTime"] is NSNumber else { return nil }
            return r
        }
        let files = try XCTUnwrap(ended?["files"] as? [[String: Any]], "the recording ends in the call log once there is room")
        let tracks = files.filter { $0["kind"] as? String == "participant" }
        XCTAssertEqual(tracks.count, 2, "\(files)")
        XCTAssertTrue(tracks.allSatisfy { ($0["duration"] as? Double ?? 0) > 0.5 }, "what was recorded: \(tracks)")
        XCTAssertEqual(t.server.writeRetries.pending, 0)
        await guest.leave()
        await mod.leave()
    }

    /// A server stopped while it tries a refused write again stops trying: the recording's end
    /// is the next start's crash recovery's (which finishes it from its files).
    func testAServerStoppedWhileItRetriesAWriteStopsTrying() async throws {
        let disk = try SmallDisk(size: "4m")
        defer { disk.remove() }
        let data = disk.path
        let t = try TestServer.forSDK { $0.dataDir = data }
        defer { t.stop() }
        let modEvents = EventRecorder<CallEvent>()
        let mod = try await t.joinedClient("mod", session: "stopfull", settings: SessionSettingsBuilder()
            .setAudioInput("tone:440").setAudioOutput("null").build(), onEvent: { modEvents.add($0) })
        mod.setSessionFeature(.recording, enabled: true)
        await eventually(5) { modEvents.all.contains(.recordingStarted) }
        XCTAssertTrue(modEvents.all.contains(.recordingStarted))
        try disk.fill()
        await eventually(30) { t.server.writeRetries.pending == 1 }
        XCTAssertEqual(t.server.writeRetries.pending, 1, "the end row refused, tried again: \(modEvents.all.count) events")
        t.server.stop()
        XCTAssertEqual(t.server.writeRetries.pending, 0, "stopped with the server")
        await mod.leave()
    }
}
