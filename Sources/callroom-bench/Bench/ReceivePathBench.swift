import CallroomKit
import CallsAudio
import CallsCore
import Foundation

/// Allocation counts from `libcallroom-alloc-counter.so` when it is preloaded (nil otherwise).
enum AllocationCounter {
    private typealias Count = @convention(c) () -> UInt64
    private static let threadCount: Count? = {
        // RTLD_DEFAULT (nil): the preloaded library's symbol, if any.
        guard let sym = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "callroom_alloc_thread_count") else { return nil }
        return unsafeBitCast(sym, to: Count.self)
    }()

    /// Allocations the calling thread has made so far.
    static func thread() -> UInt64? { threadCount?() }
}

/// The client's receive chain as the engine runs it — RTP datagrams read in place, into the
/// `ReceiveMixer` (jitter buffers, decode, levels, mix) — fed real Opus packets of `senders`
/// streams, one per sender per 20 ms frame, on this thread. Reports thread CPU per mixed frame
/// and per decoded stream, and (preloaded counter) allocations per packet and per frame in
/// steady state, after `warmup` frames.
enum ReceivePathBench {
    static func run(senders: Int, frames: Int, streams: [[[UInt8]]], warmup: Int = 50) {
        guard senders > 0 else { return }
        let n = 960
        let mixer = ReceiveMixer(frameSamples: n, jitterTargetFrames: 2, loudest: .max)  // every stream decoded: the chain's cost per stream
        let out = UnsafeMutableBufferPointer<Int16>.allocate(capacity: n)
        let datagram = UnsafeMutableRawBufferPointer.allocate(byteCount: 1500, alignment: 8)
        defer { out.deallocate(); datagram.deallocate() }
        var insertNs: UInt64 = 0, mixNs: UInt64 = 0
        var insertAllocs: UInt64 = 0, mixAllocs: UInt64 = 0
        var measured = 0
        let setupAllocs0 = AllocationCounter.thread() ?? 0
        var setupAllocs: UInt64 = 0
        let start = monotonicNanoseconds()
        for f in 0..<(frames + warmup) {
            let steady = f >= warmup
            let arrival = start + UInt64(f) * 20_000_000
            let a0 = AllocationCounter.thread() ?? 0, t0 = CPUBench.threadCPU()
            for s in 0..<senders {
                let payload = streams[s % streams.count][f % streams[s % streams.count].count]
                let h = RTPPacket.writeHeader(into: datagram, sequenceNumber: UInt16(truncatingIfNeeded: f),
                                              timestamp: UInt32(truncatingIfNeeded: f * n), ssrc: UInt32(1000 + s),
                                              audioLevel: .init(level: 30, voiceActivity: true))
                payload.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: datagram[h...]).copyMemory(from: $0) }
                let d = UnsafeRawBufferPointer(rebasing: datagram[0..<(h + payload.count)])
                guard let header = try? RTPHeader(parsing: d) else { continue }
                mixer.insert(header, datagram: d, arrival: arrival)
            }
            let t1 = CPUBench.threadCPU(), a1 = AllocationCounter.thread() ?? 0
            mixer.mixNext(into: out, now: arrival + 1_000_000)
            let t2 = CPUBench.threadCPU(), a2 = AllocationCounter.thread() ?? 0
            guard steady else {
                setupAllocs = (AllocationCounter.thread() ?? 0) - setupAllocs0
                continue
            }
            measured += 1
            insertNs += t1 - t0
            mixNs += t2 - t1
            insertAllocs += a1 - a0
            mixAllocs += a2 - a1
        }
        let perFrameUs = Double(insertNs + mixNs) / Double(measured) / 1000
        Console.out(String(format: "receive path (%d streams): %.1f µs per mixed frame (insert %.1f, decode + mix %.1f), %.1f µs per decoded stream",
                           senders, perFrameUs, Double(insertNs) / Double(measured) / 1000, Double(mixNs) / Double(measured) / 1000,
                           perFrameUs / Double(senders)))
        if AllocationCounter.thread() != nil {
            Console.out(String(format: "receive_allocs_per_packet=%.3f playback_allocs_per_frame=%.3f (steady state, %d frames; %d allocations while the first %d frames set up)",
                               Double(insertAllocs) / Double(measured * senders), Double(mixAllocs) / Double(measured), measured,
                               Int(setupAllocs), warmup))
        } else {
            Console.out("allocations: not counted (run with LD_PRELOAD=…/libcallroom-alloc-counter.so)")
        }
    }
}
