import CSocketBatch
#if canImport(Glibc)
import Glibc
#endif

/// Receives up to `capacity` datagrams with one `recvmmsg` system call into preallocated buffers
/// (no allocation per receive). Owned by one thread; the views it hands out are valid until the
/// next `receive`.
public final class UDPBatchReceiver: @unchecked Sendable {
    public let capacity: Int
    public let datagramCapacity: Int
    private let messages: UnsafeMutablePointer<callroom_mmsghdr>
    private let vectors: UnsafeMutablePointer<iovec>
    private let sources: UnsafeMutablePointer<sockaddr_in>
    private let buffers: UnsafeMutableRawPointer
    private let control: UnsafeMutableRawPointer?
    private let controlSize: Int
    /// How many datagrams the last `receive` filled.
    public private(set) var count = 0

    /// `capacity` datagrams of at most `datagramCapacity` bytes each (longer ones are truncated,
    /// which RTP over a 1,500-byte path never needs). With `timestamps`, room is kept for each
    /// datagram's kernel arrival time (the socket must have `enableReceiveTimestamps()`).
    public init(capacity: Int = 32, datagramCapacity: Int = 2048, timestamps: Bool = false) {
        self.capacity = max(1, capacity)
        self.datagramCapacity = max(64, datagramCapacity)
        messages = .allocate(capacity: self.capacity)
        vectors = .allocate(capacity: self.capacity)
        sources = .allocate(capacity: self.capacity)
        sources.initialize(repeating: sockaddr_in(), count: self.capacity)
        buffers = .allocate(byteCount: self.capacity * self.datagramCapacity, alignment: 16)
        controlSize = timestamps ? callroom_timestamp_control_size() : 0
        control = timestamps ? .allocate(byteCount: self.capacity * controlSize, alignment: 16) : nil
        callroom_prepare_receive(messages, vectors, sources, buffers.assumingMemoryBound(to: UInt8.self),
                                 self.datagramCapacity, UInt32(self.capacity),
                                 control?.assumingMemoryBound(to: UInt8.self), controlSize)
    }

    deinit {
        messages.deallocate()
        vectors.deallocate()
        sources.deallocate()
        buffers.deallocate()
        control?.deallocate()
    }

    /// Receives what is waiting on `fd` without blocking; returns how many datagrams (0 when none).
    @discardableResult
    public func receive(on fd: Int32) -> Int {
        count = Int(callroom_receive_many(fd, messages, UInt32(capacity), controlSize))
        return count
    }

    /// The bytes of datagram `i` (< `count`).
    /// The length of datagram `i` (< `count`), from its message header.
    @inline(__always) public func length(_ i: Int) -> Int { min(Int(messages[i].msg_len), datagramCapacity) }

    public func datagram(_ i: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: buffers + i * datagramCapacity,
                               count: min(Int(messages[i].msg_len), datagramCapacity))
    }

    /// Datagram `i`'s whole slot, writable (in-place SRTP unprotect); its length is `length(i)`.
    public func mutableDatagram(_ i: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: buffers + i * datagramCapacity, count: datagramCapacity)
    }

    /// When datagram `i` (< `count`) reached the socket, in `CLOCK_REALTIME` nanoseconds
    /// (compare with `UDPBatchReceiver.realtimeNanoseconds()`); 0 without timestamps.
    public func arrivalNanoseconds(_ i: Int) -> Int64 { Int64(callroom_message_timestamp_ns(messages + i)) }

    /// `CLOCK_REALTIME` now, in nanoseconds: the clock of `arrivalNanoseconds`.
    public static func realtimeNanoseconds() -> Int64 { Int64(callroom_realtime_ns()) }

    /// The sender of datagram `i` (< `count`).
    public func source(_ i: Int) -> SocketAddress { SocketAddress(sources[i]) }
}
