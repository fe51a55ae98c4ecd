import CallsSupport

/// The sending side of redundant audio (`RedundantAudio`, RFC 2198): the Opus packets of the
/// last frames sent, and the payload that repeats them before this frame's packet.
///
/// ```
///  capture thread: encode ─▶ payload(into:primary:…distance:) ─▶ [headers | frame n-d … n-1 | frame n] ─▶ RTP
///                                     └──── remember(primary, n) ◀──┘
/// ```
/// Only frames sent with consecutive sequence numbers right before this one are repeated
/// (after a pause in sending — muted, push-to-talk — the older ones are not), and only while
/// their timestamp offset fits the format's 14 bits. Storage is preallocated: nothing is
/// allocated per frame.
///
/// Thread rules: one thread at a time (the capture thread).
public final class RedundancyHistory {
    private let storage: UnsafeMutableRawBufferPointer
    private var sequences = [UInt16](repeating: 0, count: RedundantAudio.maxDistance)
    private var timestamps = [UInt32](repeating: 0, count: RedundantAudio.maxDistance)
    private var lengths = [Int](repeating: 0, count: RedundantAudio.maxDistance)
    /// Frames held (≤ maxDistance) and the ring position of the newest.
    private var held = 0
    private var newest = -1

    public init() {
        storage = .allocate(byteCount: RedundantAudio.maxDistance * RedundantAudio.maxBlockBytes, alignment: 8)
    }

    deinit { storage.deallocate() }

    /// Keeps this frame's packet (sent as `sequence`, `timestamp`) to repeat in the next ones.
    /// A packet too large for a block is not kept (the next packets repeat nothing before it).
    public func remember(_ primary: UnsafeRawBufferPointer, sequence: UInt16, timestamp: UInt32) {
        guard primary.count <= RedundantAudio.maxBlockBytes else { reset(); return }
        newest = (newest + 1) % RedundantAudio.maxDistance
        let base = newest * RedundantAudio.maxBlockBytes
        if primary.count > 0 { UnsafeMutableRawBufferPointer(rebasing: storage[base..<(base + primary.count)]).copyMemory(from: primary) }
        sequences[newest] = sequence
        timestamps[newest] = timestamp
        lengths[newest] = primary.count
        held = min(held + 1, RedundantAudio.maxDistance)
    }

    /// Forgets every frame (a new stream: new SSRC, or a packet that could not be kept).
    public func reset() { held = 0; newest = -1 }

    /// How many previous frames a packet `sequence` at `timestamp` can repeat, up to `distance`.
    public func available(sequence: UInt16, timestamp: UInt32, distance: Int) -> Int {
        var k = 0
        while k < min(distance, held) {
            let slot = slot(back: k + 1)
            guard sequences[slot] == sequence &- UInt16(k + 1) else { break }
            let offset = timestamp &- timestamps[slot]
            guard offset > 0, offset <= RedundantAudio.maxTimestampOffset else { break }
            k += 1
        }
        return k
    }

    /// Writes into `out` the redundant-audio payload for the frame `sequence`/`timestamp`
    /// (its packet `primary`, of `payloadType`) repeating up to `distance` previous frames — the
    /// oldest left out while they do not fit (large packets at high bitrates). Returns the bytes
    /// written and the frames repeated; nil only when `primary` alone does not fit.
    public func payload(into out: UnsafeMutableRawBufferPointer, payloadType: UInt8, primary: UnsafeRawBufferPointer,
                        sequence: UInt16, timestamp: UInt32, distance: Int) -> (bytes: Int, repeated: Int)? {
        var k = available(sequence: sequence, timestamp: timestamp, distance: distance)
        func size(_ k: Int) -> Int { (0..<k).reduce(RedundantAudio.headerBytes(blocks: k) + primary.count) { $0 + lengths[slot(back: k - $1)] } }
        while k > 0 && size(k) > out.count { k -= 1 }
        guard size(k) <= out.count else { return nil }
        var at = 0
        // Oldest first: block i repeats the frame k - i back.
        for i in 0..<k {
            let s = slot(back: k - i)
            RedundantAudio.writeBlockHeader(into: out, at: at, payloadType: payloadType, offset: timestamp &- timestamps[s], length: lengths[s])
            at += 4
        }
        out[at] = payloadType & 0x7F
        at += 1
        for i in 0..<k {
            let s = slot(back: k - i), n = lengths[s], base = s * RedundantAudio.maxBlockBytes
            if n > 0 { UnsafeMutableRawBufferPointer(rebasing: out[at..<(at + n)]).copyMemory(from: UnsafeRawBufferPointer(rebasing: storage[base..<(base + n)])) }
            at += n
        }
        if primary.count > 0 { UnsafeMutableRawBufferPointer(rebasing: out[at..<(at + primary.count)]).copyMemory(from: primary) }
        return (at + primary.count, k)
    }

    /// The ring slot of the frame `back` frames before the next (1 = the newest).
    private func slot(back: Int) -> Int { (newest - (back - 1) + RedundantAudio.maxDistance) % RedundantAudio.maxDistance }
}
