import CSpeexDSP

/// Sample-rate conversion of mono Int16 audio with SpeexDSP's resampler. Owns its state.
/// Thread rules: one thread at a time.
public final class Resampler {
    private let state: OpaquePointer
    public let inputRate: Int
    public let outputRate: Int

    /// - Parameter quality: 0 (fastest) … 10 (best); 5 is SpeexDSP's VoIP default.
    public init(from inputRate: Int, to outputRate: Int, quality: Int32 = 5) throws(AudioError) {
        var err: Int32 = 0
        guard inputRate > 0, outputRate > 0,
              let s = speex_resampler_init(1, spx_uint32_t(inputRate), spx_uint32_t(outputRate), quality, &err), err == 0 else {
            throw .codec("cannot resample \(inputRate) Hz to \(outputRate) Hz")
        }
        state = s
        self.inputRate = inputRate
        self.outputRate = outputRate
        speex_resampler_skip_zeros(s)
    }

    deinit { speex_resampler_destroy(state) }

    /// Converts one block into `output` without allocating; returns the samples written
    /// (`output` should hold `input.count * outputRate / inputRate + 16`).
    public func process(_ input: UnsafeBufferPointer<Int16>, into output: UnsafeMutableBufferPointer<Int16>) -> Int {
        guard let i = input.baseAddress, let o = output.baseAddress else { return 0 }
        var inLen = spx_uint32_t(input.count)
        var outLen = spx_uint32_t(output.count)
        _ = speex_resampler_process_int(state, 0, i, &inLen, o, &outLen)
        return Int(outLen)
    }

    /// Converts a whole buffer (allocates the output; not for real-time threads): the filter's
    /// tail is flushed with silence, so the output is exactly `input.count × outputRate /
    /// inputRate` samples (rounded) and lines up with the input from its first sample to its
    /// last — a file looped after conversion stays in step with the original.
    public func process(_ input: [Int16]) -> [Int16] {
        let expected = Int((Int64(input.count) * Int64(outputRate) + Int64(inputRate) / 2) / Int64(inputRate))
        // The input, then enough silence to push its last samples through the filter.
        let tail = [Int16](repeating: 0, count: max(0, Int(speex_resampler_get_input_latency(state))) + 1)
        var out = [Int16](repeating: 0, count: expected + tail.count * outputRate / inputRate + 64)
        var produced = 0
        out.withUnsafeMutableBufferPointer { o in
            guard let ob = o.baseAddress else { return }
            for block in [input, tail] {
                block.withUnsafeBufferPointer { i in
                    guard let ib = i.baseAddress else { return }
                    var consumed = 0
                    while consumed < i.count && produced < o.count {
                        var inLen = spx_uint32_t(i.count - consumed)
                        var outLen = spx_uint32_t(o.count - produced)
                        _ = speex_resampler_process_int(state, 0, ib + consumed, &inLen, ob + produced, &outLen)
                        consumed += Int(inLen)
                        produced += Int(outLen)
                        if outLen == 0 && inLen == 0 { break }
                    }
                }
            }
        }
        // (Anything the flush left short stays silent: `out` starts zeroed.)
        out.removeLast(out.count - expected)
        return out
    }
}
