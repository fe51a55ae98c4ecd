import CallRoomTestSupport
@testable import CallsObjectStorage
import Foundation
import XCTest

/// The S3 client against a real S3-compatible server (moto's, started here): objects stored,
/// read back, sized and removed; a file over one part goes up as a multipart upload and comes
/// back byte for byte; the store's refusals and an unreachable store are told apart.
final class S3ClientTests: XCTestCase {
    var moto: MotoServer!

    override func setUpWithError() throws {
        guard MotoServer.binary != nil else { throw XCTSkip("moto_server is not installed (scripts/install-python-deps.sh)") }
        moto = try MotoServer()
    }

    override func tearDown() {
        moto?.stop()
        moto = nil
    }

    func client(bucket: String = "callroom-recordings", partSize: Int = 5 << 20) throws -> S3Client {
        try S3Client(ObjectStorageConfiguration(endpoint: moto.endpoint, bucket: bucket, region: "us-east-1",
                                                accessKeyID: "testing", secretAccessKey: "testing-secret"), partSize: partSize)
    }

    func testAnObjectIsStoredReadSizedAndRemoved() throws {
        let s3 = try client()
        try s3.createBucket()
        try s3.createBucket()  // (ours already: fine)
        let bytes = Array("OggS and then some".utf8)
        try s3.put("recordings/s1/rec_1.ogg", bytes: bytes, contentType: "audio/ogg")
        XCTAssertEqual(try s3.get("recordings/s1/rec_1.ogg"), bytes)
        XCTAssertEqual(try s3.size("recordings/s1/rec_1.ogg"), bytes.count)
        try s3.delete("recordings/s1/rec_1.ogg")
        XCTAssertNil(try s3.size("recordings/s1/rec_1.ogg"))
        XCTAssertThrowsError(try s3.get("recordings/s1/rec_1.ogg")) { error in
            guard case ObjectStorageError.refused(404, "NoSuchKey", _) = error else { return XCTFail("\(error)") }
        }
    }

    func testAFileOverOnePartGoesUpInPartsAndComesBackWhole() throws {
        let s3 = try client()
        try s3.createBucket()
        let tmp = TemporaryDirectory("callroom-s3")
        defer { tmp.remove() }
        var bytes = [UInt8](repeating: 0, count: 11 << 20 + 12_345)  // three parts of 5 MiB at most
        var x: UInt32 = 2_463_534_242
        for i in bytes.indices { x ^= x << 13; x ^= x >> 17; x ^= x << 5; bytes[i] = UInt8(truncatingIfNeeded: x) }
        try Data(bytes).write(to: URL(fileURLWithPath: tmp.file("big.ogg")))
        try s3.upload("recordings/s2/big.ogg", file: tmp.file("big.ogg"), contentType: "audio/ogg")
        XCTAssertEqual(try s3.size("recordings/s2/big.ogg"), bytes.count)
        XCTAssertEqual(try s3.get("recordings/s2/big.ogg"), bytes, "the parts, in order, make the file")
        // A small file: one request.
        try Data("vtt".utf8).write(to: URL(fileURLWithPath: tmp.file("small.vtt")))
        try s3.upload("transcripts/s2/t.vtt", file: tmp.file("small.vtt"), contentType: "text/vtt")
        XCTAssertEqual(try s3.get("transcripts/s2/t.vtt"), Array("vtt".utf8))
        XCTAssertThrowsError(try s3.upload("x/missing", file: tmp.file("none"), contentType: "audio/ogg")) { error in
            guard case ObjectStorageError.file = error else { return XCTFail("\(error)") }
        }
    }

    /// Multipart uploads a crash left: listed under the prefix (keys relative to it, with their
    /// start), and gone once aborted; others' under another prefix are not ours to see.
    func testIncompleteUploadsAreListedUnderThePrefixAndAborted() throws {
        var configuration = try client().configuration
        configuration.prefix = "node1/"
        let s3 = try S3Client(configuration)
        try s3.createBucket()
        var other = configuration
        other.prefix = "elsewhere/"
        let theirs = try S3Client(other).beginUpload("recordings/r9/mixed.opus", contentType: "audio/ogg")
        let a = try s3.beginUpload("recordings/r1/mixed.opus", contentType: "audio/ogg")
        let b = try s3.beginUpload("transcripts/t1.json", contentType: "application/json")
        let listed = try s3.incompleteUploads()
        XCTAssertEqual(Set(listed.map(\.key)), ["recordings/r1/mixed.opus", "transcripts/t1.json"])
        XCTAssertEqual(Set(listed.map(\.uploadID)), [a.uploadID, b.uploadID])
        // (moto says every upload began on 2010-11-10: a date is all that can be checked here.)
        XCTAssertTrue(listed.allSatisfy { $0.initiated != nil }, "the store says when each began")
        try s3.abort(try XCTUnwrap(listed.first { $0.uploadID == a.uploadID }))
        XCTAssertEqual(try s3.incompleteUploads().map(\.uploadID), [b.uploadID])
        XCTAssertEqual(try S3Client(other).incompleteUploads().map(\.uploadID), [theirs.uploadID])
        XCTAssertEqual(S3Client.date("2026-12-06T01:02:03.000Z"), Date(timeIntervalSince1970: 1_796_518_923))
        XCTAssertEqual(S3Client.date("2026-12-06T01:02:03Z"), Date(timeIntervalSince1970: 1_796_518_923))
        XCTAssertNil(S3Client.date("yesterday"))
    }

    func testRefusalsAndAnUnreachableStoreAreToldApart() throws {
        let s3 = try client(bucket: "no-such-bucket")
        XCTAssertThrowsError(try s3.put("a/b", bytes: [1], contentType: "application/octet-stream")) { error in
            guard case ObjectStorageError.refused(404, "NoSuchBucket", _) = error else { return XCTFail("\(error)") }
            XCTAssertFalse((error as? ObjectStorageError)?.isTransient ?? true)
        }
        for key in ["../etc/passwd", "/abs", "a//b", "a b", "", String(repeating: "k", count: 513)] {
            XCTAssertThrowsError(try s3.put(key, bytes: [1], contentType: "x/y"), key) { error in
                guard case ObjectStorageError.badKey = error else { return XCTFail("\(key): \(error)") }
            }
        }
        moto.stop()
        XCTAssertThrowsError(try s3.get("a/b")) { error in
            guard case ObjectStorageError.unreachable = error, (error as? ObjectStorageError)?.isTransient == true else { return XCTFail("\(error)") }
        }
        for (bad, why) in [(ObjectStorageConfiguration(endpoint: "ftp://x", bucket: "abc", region: "r", accessKeyID: "a", secretAccessKey: "s"), "endpoint"),
                           (ObjectStorageConfiguration(endpoint: "http://x/path", bucket: "abc", region: "r", accessKeyID: "a", secretAccessKey: "s"), "endpoint"),
                           (ObjectStorageConfiguration(endpoint: "http://x", bucket: "AB", region: "r", accessKeyID: "a", secretAccessKey: "s"), "bucket"),
                           (ObjectStorageConfiguration(endpoint: "http://x", bucket: "abc", region: "r", accessKeyID: "", secretAccessKey: "s"), "accessKeyID")] {
            XCTAssertTrue(bad.problem?.contains(why) == true, "\(bad.endpoint) \(bad.bucket): \(String(describing: bad.problem))")
        }
    }

    /// With a store that checks credentials (moto's IAM mode): the key it issued works; a wrong
    /// secret and an unknown key are refused, each with S3's own code — and neither carries the secret.
    func testWrongCredentialsAreRefusedSayingWhich() throws {
        moto.stop()
        moto = try MotoServer(checkingCredentials: true)
        let key = try moto.createCredentials()
        func client(id: String, secret: String) throws -> S3Client {
            try S3Client(ObjectStorageConfiguration(endpoint: moto.endpoint, bucket: "checked", region: "us-east-1", accessKeyID: id, secretAccessKey: secret))
        }
        let good = try client(id: key.id, secret: key.secret)
        try good.createBucket()
        try good.put("a/b", bytes: [1, 2, 3], contentType: "application/octet-stream")
        XCTAssertEqual(try good.get("a/b"), [1, 2, 3])
        // A multipart upload signs its queries too (uploads=, partNumber=, uploadId=).
        let tmp = TemporaryDirectory("callroom-s3-signed")
        defer { tmp.remove() }
        try Data(repeating: 7, count: 6 << 20).write(to: URL(fileURLWithPath: tmp.file("six.ogg")))
        try good.upload("a/six.ogg", file: tmp.file("six.ogg"), contentType: "audio/ogg")
        XCTAssertEqual(try good.size("a/six.ogg"), 6 << 20)
        for (id, secret, code) in [(key.id, "not-the-secret", "SignatureDoesNotMatch"), ("AKIAUNKNOWNKEY000000", key.secret, "InvalidAccessKeyId")] {
            XCTAssertThrowsError(try client(id: id, secret: secret).get("a/b")) { error in
                guard case ObjectStorageError.refused(403, let got, _) = error else { return XCTFail("\(error)") }
                XCTAssertEqual(got, code)
                XCTAssertFalse("\(error)".contains(secret), "the error carries the secret")
                XCTAssertFalse((error as? ObjectStorageError)?.isTransient ?? true, "wrong credentials are not worth retrying")
            }
        }
    }
}
