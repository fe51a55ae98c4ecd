import Synchronization

/// Which frame a filter is looking at: its RTP sequence number (captured frames) and when it
/// passed (monotonic nanoseconds).
public struct FrameInfo: Sendable {
    public var sequence: UInt16
    public var at: UInt64
    public init(sequence: UInt16 = 0, at: UInt64) { self.sequence = sequence; self.at = at }
}

/// One stage of the engine's frame processing, as baresip's `aufilt`: it sees every captured
/// frame on its way to the encoder (and may change it) and every mixed frame on its way to the
/// output. Echo cancellation, noise suppression and gain (`CaptureProcessor`), level metering
/// (`LevelFilter`) and benchmark probes are filters; a recorder or a caption tap can be one.
///
/// Thread rules: `captured` on the capture thread, `played` on the playback thread; each must
/// be quick, must not block and must not allocate per frame.
public protocol AudioFilter: AnyObject, Sendable {
    func captured(_ frame: UnsafeMutableBufferPointer<Int16>, _ info: FrameInfo)
    func played(_ frame: UnsafeBufferPointer<Int16>, _ info: FrameInfo)
}

extension AudioFilter {
    public func captured(_ frame: UnsafeMutableBufferPointer<Int16>, _ info: FrameInfo) {}
    public func played(_ frame: UnsafeBufferPointer<Int16>, _ info: FrameInfo) {}
}

/// Filters in order: capture runs them first to last, so a meter after a noise suppressor
/// measures what is sent. Fixed at creation (no locking on the media threads).
public struct FilterChain: Sendable {
    public let filters: [any AudioFilter]
    public init(_ filters: [any AudioFilter]) { self.filters = filters }

    public func captured(_ frame: UnsafeMutableBufferPointer<Int16>, _ info: FrameInfo) {
        for f in filters { f.captured(frame, info) }
    }

    public func played(_ frame: UnsafeBufferPointer<Int16>, _ info: FrameInfo) {
        for f in filters { f.played(frame, info) }
    }
}

/// Measures each captured frame's RMS level (what the RTP level extension and the meters show).
/// Thread rules: written by the capture thread, read from any thread.
public final class LevelFilter: AudioFilter {
    private let bits = Atomic<UInt32>(LevelMeter.silenceDBFS.bitPattern)
    private let measured = Atomic<Bool>(false)
    public init() {}

    public func captured(_ frame: UnsafeMutableBufferPointer<Int16>, _ info: FrameInfo) {
        bits.store(LevelMeter.rmsDBFS(UnsafeBufferPointer(frame)).bitPattern, ordering: .relaxed)
        measured.store(true, ordering: .relaxed)
    }

    /// The last captured frame's level (dBFS); nil before the first frame.
    public var lastDBFS: Float? {
        measured.load(ordering: .relaxed) ? Float(bitPattern: bits.load(ordering: .relaxed)) : nil
    }
}

extension CaptureProcessor: AudioFilter {
    public func captured(_ frame: UnsafeMutableBufferPointer<Int16>, _ info: FrameInfo) { process(frame) }
    public func played(_ frame: UnsafeBufferPointer<Int16>, _ info: FrameInfo) { played(frame) }
}
