/// Puts one sender's VP8 frames back together from RTP packets (RFC 7741 §4.5): a frame is
/// complete when its first packet (S bit), its last (marker) and every sequence number between
/// are in. Packets may arrive out of order; a frame older than one already delivered is late
/// and dropped. A frame whose picture ID does not follow the last delivered one means frames
/// were lost: from there only a keyframe is delivered (`needsKeyframe`; the receiver asks the
/// sender for one), so the decoder never draws from a broken reference.
///
/// A value owned by the thread that receives the sender's packets.
public struct VP8FrameAssembler: Sendable {
    public struct Frame: Sendable, Equatable {
        public var data: [UInt8]
        public var isKeyframe: Bool
        public var pictureID: Int
        public var timestamp: UInt32
    }

    public enum Outcome: Sendable, Equatable {
        /// Nothing to deliver yet.
        case pending
        case frame(Frame)
        /// Frames were lost (or none came yet): drop until a keyframe, and ask for one.
        case needKeyframe
    }

    private struct Pending: Sendable {
        var chunks: [UInt16: [UInt8]] = [:]
        var start: UInt16?
        var end: UInt16?
        var pictureID: Int?
        var keyframe = false
    }

    private var pending: [UInt32: Pending] = [:]
    private var lastTimestamp: UInt32?
    private var lastPictureID: Int?
    public private(set) var needsKeyframe = true
    public private(set) var framesDelivered = 0
    public private(set) var framesDropped = 0
    /// At most this many frames wait for their missing packets.
    static let maxPending = 8
    /// Packets one frame may have.
    static let maxChunksPerFrame = 512

    public init() {}

    /// One packet's payload (descriptor + data) with its RTP fields.
    public mutating func insert(sequence: UInt16, timestamp: UInt32, marker: Bool, payload: UnsafeRawBufferPointer) -> Outcome {
        guard let d = VP8Payload.parse(payload) else { return .pending }
        if let last = lastTimestamp, Int32(bitPattern: timestamp &- last) <= 0 { return .pending }  // late
        var p = pending[timestamp] ?? Pending()
        guard p.chunks[sequence] == nil else { return .pending }  // duplicate
        // (Bounded: a frame of more packets than any real one — 512 × ≤ 1500 bytes — is not kept
        // growing; with `maxPending` frames that is ≤ 6 MB a sender, on the server's recorder too.)
        guard p.chunks.count < Self.maxChunksPerFrame else { return .pending }
        let data = Array(payload[d.length...])
        p.chunks[sequence] = data
        if d.startOfFrame && d.partition == 0 {
            p.start = sequence
            p.pictureID = d.pictureID
            if let first = data.first { p.keyframe = VP8Payload.isKeyframe(firstByteOfFrame: first) }
        }
        if marker { p.end = sequence }
        pending[timestamp] = p
        if pending.count > Self.maxPending, let oldest = pending.keys.min(by: { Int32(bitPattern: $0 &- $1) < 0 }) {
            pending[oldest] = nil
            framesDropped += 1
        }
        guard let start = p.start, let end = p.end, case let n = Int(end &- start) + 1, n <= Self.maxChunksPerFrame, p.chunks.count == n else { return .pending }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(p.chunks.values.reduce(0) { $0 + $1.count })
        for i in 0..<n {
            guard let c = p.chunks[start &+ UInt16(i)] else { return .pending }
            bytes += c
        }
        // Complete: everything older is lost for good.
        let older = pending.keys.filter { Int32(bitPattern: $0 &- timestamp) < 0 }
        framesDropped += older.count
        for k in older { pending[k] = nil }
        pending[timestamp] = nil
        lastTimestamp = timestamp
        let pictureID = p.pictureID ?? 0
        let follows = lastPictureID.map { (pictureID - $0) & 0x7FFF == 1 } ?? false
        lastPictureID = pictureID
        if !follows || needsKeyframe {
            guard p.keyframe else {
                needsKeyframe = true
                framesDropped += 1
                return .needKeyframe
            }
            needsKeyframe = false
        }
        framesDelivered += 1
        return .frame(Frame(data: bytes, isKeyframe: p.keyframe, pictureID: pictureID, timestamp: timestamp))
    }
}
