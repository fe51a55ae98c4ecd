/// Where finished recordings and transcripts go: a bucket of an S3-compatible store (AWS S3,
/// MinIO, Ceph, …), addressed path-style (`ENDPOINT/BUCKET/KEY`). A value; any thread.
public struct ObjectStorageConfiguration: Sendable, Equatable, Codable {
    /// `https://s3.eu-west-1.amazonaws.com`, `http://127.0.0.1:9000` — scheme, host, port; no path.
    public var endpoint: String
    public var bucket: String
    /// The region requests are signed for (`us-east-1` where the store has none).
    public var region: String
    public var accessKeyID: String
    public var secretAccessKey: String
    /// Put before every key (`callroom/`, or empty): several servers or apps share a bucket.
    public var prefix: String
    /// CA bundle for an `https` endpoint with a private CA (nil: the system's).
    public var caFile: String?

    public init(endpoint: String, bucket: String, region: String, accessKeyID: String, secretAccessKey: String,
                prefix: String = "", caFile: String? = nil) {
        self.endpoint = endpoint
        self.bucket = bucket
        self.region = region
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.prefix = prefix
        self.caFile = caFile
    }

    /// What is wrong with it, if anything (checked at start, before any request).
    public var problem: String? {
        guard endpoint.hasPrefix("http://") || endpoint.hasPrefix("https://"),
              !endpoint.dropFirst(endpoint.hasPrefix("https://") ? 8 : 7).contains("/") else {
            return "objectStorage.endpoint must be http(s)://HOST[:PORT], with no path"
        }
        // S3's bucket names: 3–63 of a-z 0-9 . - (starting and ending with a letter or digit).
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789.-")
        guard (3...63).contains(bucket.count), bucket.allSatisfy(allowed.contains), bucket.first != "-", bucket.first != ".",
              bucket.last != "-", bucket.last != "." else {
            return "objectStorage.bucket must be 3–63 of a-z, 0-9, '.' and '-'"
        }
        guard !region.isEmpty, region.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) else { return "objectStorage.region is not a region name" }
        guard !accessKeyID.isEmpty, !secretAccessKey.isEmpty, !accessKeyID.contains(":") else {
            return "objectStorage needs accessKeyID and secretAccessKey"
        }
        let keyCharacters = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._/-")
        guard prefix.isEmpty || (prefix.count <= 100 && prefix.hasSuffix("/") && !prefix.hasPrefix("/") && prefix.allSatisfy(keyCharacters.contains)
                                 && !prefix.split(separator: "/").contains(where: { $0 == "." || $0 == ".." })) else {
            return "objectStorage.prefix must be empty or up to 100 of A-Z a-z 0-9 . _ / - ending in '/'"
        }
        return nil
    }
}
