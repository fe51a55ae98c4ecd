import CallsAudio

/// CallRoom diagnostics: timing hooks for benchmarks (`callroom bench latency`). Called on the
/// media threads with monotonic nanoseconds; implementations must be quick and must not block.
public protocol MediaProbe: AnyObject, Sendable {
    /// A frame left the input (the end of its capture period).
    func captured(_ frame: UnsafeBufferPointer<Int16>, sequence: UInt16, at: UInt64)
    /// The frame's packet was handed to the socket.
    func sent(sequence: UInt16, at: UInt64)
    /// A packet arrived (after any impairment), entering the jitter buffer.
    func received(ssrc: UInt32, sequence: UInt16, at: UInt64)
    /// A mixed frame is about to be written to the output.
    func played(_ frame: UnsafeBufferPointer<Int16>, at: UInt64)
}

/// A `MediaProbe` as a link of the engine's filter chain.
final class ProbeFilter: AudioFilter {
    let probe: any MediaProbe
    init(_ probe: any MediaProbe) { self.probe = probe }
    func captured(_ frame: UnsafeMutableBufferPointer<Int16>, _ info: FrameInfo) {
        probe.captured(UnsafeBufferPointer(frame), sequence: info.sequence, at: info.at)
    }
    func played(_ frame: UnsafeBufferPointer<Int16>, _ info: FrameInfo) { probe.played(frame, at: info.at) }
}
