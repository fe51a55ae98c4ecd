import CallsObjectStorage
import CallsStore
import Foundation

/// A finished recording's or transcript's file, read where it is: this node's data directory
/// first, else the bucket (any node serves what any node uploaded). A value; any thread (each
/// read from the bucket makes its own client).
struct StoredFileReader {
    let dataDir: String
    let store: CallStore
    /// Nil: no object storage (files are only on the node that made them).
    let objectStorage: ObjectStorageConfiguration?
    /// The largest object served from the bucket (bodies are held in memory).
    static let maxObjectBytes = 1 << 30

    /// The bytes of `key` (relative to the data directory and the bucket's prefix); nil when it
    /// is nowhere. `gone` words the 404.
    /// - Throws: `ServerError` 503 while the file waits for its upload on another node, or when
    ///   the bucket cannot be read (the message names the store's code, never a credential).
    func read(_ key: String, gone: String) throws(ServerError) -> [UInt8] {
        let path = (dataDir as NSString).appendingPathComponent(key)
        if let data = FileManager.default.contents(atPath: path) { return [UInt8](data) }
        guard let objectStorage else { throw ServerError(.notFound, gone) }
        let row: StoredObject?
        do { row = try store.storedObject(key: key) } catch { throw .databaseUnavailable }
        guard let row else { throw ServerError(.notFound, gone) }
        switch row.state {
        case .upload:
            throw ServerError(.unavailable, "The file is on node '\(row.nodeID ?? "?")' and not yet in object storage "
                              + "(\(row.attempts) failed attempts so far); try again shortly.")
        case .delete:
            throw ServerError(.notFound, gone)
        case .stored:
            do throws(ObjectStorageError) {
                return try S3Client(objectStorage).get(key, limit: Self.maxObjectBytes)
            } catch .refused(let status, let code, _) where status == 404 || code == "NoSuchKey" {
                throw ServerError(.notFound, gone)
            } catch {
                // (The store's code, not its message: nothing of the store's reply beyond that reaches a client.)
                let cause: String
                switch error {
                case .refused(let status, let code, _): cause = "\(status) \(code)"
                case .unreachable: cause = "unreachable"
                case .badReply, .file, .badKey: cause = "an answer it could not use"
                }
                throw ServerError(.unavailable, "The file is in object storage, which cannot be read now (\(cause)); try again shortly.")
            }
        }
    }
}
