import CallRoomTestSupport
import CallsCore
@testable import CallsObjectStorage
import CallsServer
@testable import CometChatCallsSDK
import Foundation
import XCTest

/// Recordings and transcripts in object storage (issue #38), against moto's S3 server behind a
/// proxy that sheds the first writes with S3's 503: the files are uploaded (the 503s retried
/// with back-off), the call log says where they are, the server serves them from the bucket
/// once its own copies are gone, and retention deletes the objects.
final class ObjectStorageRecordingTests: XCTestCase {
    var moto: MotoServer?
    var proxy: S3FaultProxy?

    override func tearDown() {
        proxy?.stop()
        proxy = nil
        moto?.stop()
        moto = nil
    }

    func testRecordingsAndTranscriptsAreUploadedRetriedServedFromTheBucketAndDeletedWithRetention() async throws {
        try XCTSkipUnless(MotoServer.binary != nil, "needs moto (scripts/install-python-deps.sh)")
        let moto = try MotoServer()
        self.moto = moto
        let bucket = ObjectStorageConfiguration(endpoint: moto.endpoint, bucket: "calls", region: "us-east-1",
                                                accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI", prefix: "node1/")
        try S3Client(bucket).createBucket()
        // The first two writes of files are refused with 503, as S3 sheds load.
        let proxy = try S3FaultProxy(upstream: moto.endpoint, failFirst: 2)
        self.proxy = proxy
        var viaProxy = bucket
        viaProxy.endpoint = proxy.endpoint
        let t = try TestServer.forSDK {
            $0.objectStorage = viaProxy
            $0.recordingRetentionDays = 1
        }
        defer { t.stop() }
        let events = EventRecorder<CallEvent>()
        let mod = try await t.joinedClient("mod", session: "bucket", settings: SessionSettingsBuilder()
            .setAudioInput("tone:440").setAudioOutput("null").build(), onEvent: { events.add($0) })
        mod.setSessionFeature(.recording, enabled: true)
        mod.setSessionFeature(.transcription, enabled: true)
        try await waitFor("onRecordingStarted", events) { $0 == .recordingStarted }
        // Recorded for a while: the participant's file grows past a second or so of Opus.
        let grown = await t.recordingFileGrows(".opus", beyond: 6000)
        XCTAssertTrue(grown, "the recorder writes")
        mod.setSessionFeature(.recording, enabled: false)
        mod.setSessionFeature(.transcription, enabled: false)
        try await waitFor("onRecordingStopped", events) { $0 == .recordingStopped }

        // The call log says where each file is: uploading, then in object storage.
        let admin = ["apikey": t.server.keys.apiKey]
        func recording() -> [String: Any]? {
            let call = BlockingHTTP.request("GET", t.server.url + "/v3/calls/bucket", headers: admin).data
            return (call["recordings"] as? [[String: Any]])?.first
        }
        func storages() -> Set<String> { Set((recording()?["files"] as? [[String: Any]] ?? []).compactMap { $0["storage"] as? String }) }
        // (The mix, the moderator's Ogg Opus and their WebM: the SDK sends the test pattern.)
        let stored = await eventually(30, poll: 0.2) { (recording()?["files"] as? [Any])?.count == 3 && storages() == ["objectStorage"] }
        XCTAssertTrue(stored, "every file in object storage: \(storages()) — proxy: \(proxy.lines.suffix(20))")
        XCTAssertGreaterThanOrEqual(proxy.lines.filter { $0.hasPrefix("failed PUT") }.count, 2, "\(proxy.lines)")

        // The bucket holds what the node wrote, under the prefix.
        let rec = try XCTUnwrap(recording())
        let rid = try XCTUnwrap(rec["rid"] as? String)
        let local = t.dir + "/recordings/\(rid)/mixed.opus"
        let written = try XCTUnwrap(FileManager.default.contents(atPath: local))
        XCTAssertEqual(try S3Client(bucket).get("recordings/\(rid)/mixed.opus"), [UInt8](written))
        var unprefixed = bucket
        unprefixed.prefix = ""
        XCTAssertEqual(try S3Client(unprefixed).size("node1/recordings/\(rid)/mixed.opus"), written.count)

        // The transcript's files too.
        let transcripts = await eventuallyValue(20, poll: 0.2) { () -> [[String: Any]]? in
            let list = BlockingHTTP.request("GET", t.server.url + "/v3/calls/bucket/transcriptions", headers: admin).json["data"] as? [[String: Any]]
            return list?.first?["storage"] as? String == "objectStorage" ? list : nil
        }
        let tid = try XCTUnwrap(transcripts?.first?["tid"] as? String, "\(transcripts ?? [])")
        let vtt = try XCTUnwrap(FileManager.default.contents(atPath: t.dir + "/transcripts/\(tid).vtt"))
        let metrics = t.server.metricsText()
        XCTAssertTrue(metrics.contains(#"callroom_object_storage_operations_total{outcome="failed"} 2"#), metrics)
        XCTAssertTrue(metrics.contains(#"callroom_object_storage_operations_total{outcome="uploaded"} 5"#), metrics)
        XCTAssertTrue(metrics.contains(#"callroom_object_storage_queue{state="upload"} 0"#), metrics)
        XCTAssertEqual(try S3Client(bucket).get("transcripts/\(tid).vtt"), [UInt8](vtt))

        // This node's copies gone: served from the bucket, whole and in ranges.
        try FileManager.default.removeItem(atPath: t.dir + "/recordings/\(rid)")
        try FileManager.default.removeItem(atPath: t.dir + "/transcripts/\(tid).vtt")
        let url = try XCTUnwrap(rec["recordingURL"] as? String)
        let whole = BlockingHTTP.request("GET", url, headers: admin)
        XCTAssertEqual(whole.status, 200, whole.text)
        XCTAssertEqual(whole.body, written)
        let part = BlockingHTTP.request("GET", url, headers: admin.merging(["Range": "bytes=10-29"]) { a, _ in a })
        XCTAssertEqual(part.status, 206)
        XCTAssertEqual(part.body, written.subdata(in: 10..<30))
        XCTAssertEqual(part.headers["content-range"], "bytes 10-29/\(written.count)")
        XCTAssertTrue(proxy.lines.contains { $0.hasPrefix("forwarded-206 GET") && $0.contains("/recordings/\(rid)/mixed.opus") },
                      "a range is fetched from the bucket as a range: \(proxy.lines.suffix(5))")
        let tail = BlockingHTTP.request("GET", url, headers: admin.merging(["Range": "bytes=-50"]) { a, _ in a })
        XCTAssertEqual(tail.status, 206)
        XCTAssertEqual(tail.body, written.suffix(50))
        let beyond = BlockingHTTP.request("GET", url, headers: admin.merging(["Range": "bytes=\(written.count)-"]) { a, _ in a })
        XCTAssertEqual(beyond.status, 416)
        XCTAssertEqual(beyond.headers["content-range"], "bytes */\(written.count)")
        let caption = BlockingHTTP.request("GET", t.server.url + "/v3/calls/bucket/transcriptions/\(tid).vtt", headers: admin)
        XCTAssertEqual(caption.status, 200, caption.text)
        XCTAssertEqual(caption.body, vtt)

        // A multipart upload a crash left (moto dates every one 2010-11-10): aborted, once old enough.
        let left = try S3Client(bucket).beginUpload("recordings/\(rid)/left-by-a-crash.opus", contentType: "audio/ogg")
        XCTAssertEqual(try S3Client(bucket).incompleteUploads().map(\.uploadID), [left.uploadID])
        // (The uploader's own sweep, 5 s after start, may have come first under load: either way one abort.)
        XCTAssertLessThanOrEqual(t.server.abortAbandonedUploads(olderThan: 24 * 3600), 1)
        XCTAssertEqual(try S3Client(bucket).incompleteUploads(), [])
        XCTAssertTrue(t.server.metricsText().contains(#"callroom_object_storage_operations_total{outcome="aborted"} 1"#))

        // Retention: the rows go at once, the objects on the uploader's next turn.
        let swept = t.server.sweepRecordings(now: epochMilliseconds() + 2 * 86_400_000)
        XCTAssertEqual(swept.recordings, 1)
        XCTAssertEqual(swept.transcripts, 1, "transcripts have the recordings' retention")
        let objectsGone = await eventually(10, poll: 0.2) {
            t.server.uploadDueObjects()
            return (try? S3Client(bucket).size("recordings/\(rid)/mixed.opus")) == .some(nil)
                && (try? S3Client(bucket).size("transcripts/\(tid).json")) == .some(nil)
        }
        XCTAssertTrue(objectsGone, "the recording's and the transcript's objects deleted")
        XCTAssertNil(try S3Client(bucket).size("transcripts/\(tid).vtt"))
        for suffix in [".json", ".jsonl"] {
            XCTAssertFalse(FileManager.default.fileExists(atPath: t.dir + "/transcripts/\(tid)\(suffix)"), "the local \(suffix) removed")
        }
        XCTAssertEqual(BlockingHTTP.request("GET", t.server.url + "/v3/calls/bucket/transcriptions/\(tid).vtt", headers: admin).status, 404)
        for name in (rec["files"] as? [[String: Any]] ?? []).compactMap({ $0["name"] as? String }) {
            XCTAssertNil(try S3Client(bucket).size("recordings/\(rid)/\(name)"), name)
        }
        XCTAssertEqual(BlockingHTTP.request("GET", url, headers: admin).status, 404)
        await mod.leave()
    }
}
