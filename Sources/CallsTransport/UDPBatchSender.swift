import CSocketBatch
#if canImport(Glibc)
import Glibc
#endif

/// Sends one datagram to many addresses with a single `sendmmsg` system call, from a
/// preallocated address table (no allocation per send). Owned by one thread (the relay's).
public final class UDPBatchSender {
    public static let capacity = 64
    private let addresses: UnsafeMutablePointer<sockaddr_in>
    private var count = 0

    public init() {
        addresses = .allocate(capacity: Self.capacity)
        addresses.initialize(repeating: sockaddr_in(), count: Self.capacity)
    }

    deinit { addresses.deallocate() }

    /// Queues a destination; returns false when the batch is full (call `send` first).
    @discardableResult
    public func add(_ address: SocketAddress) -> Bool {
        guard count < Self.capacity else { return false }
        addresses[count] = address.sockaddr
        count += 1
        return true
    }

    /// Sends `datagram` to every queued destination; returns how many sends succeeded and
    /// empties the batch.
    @discardableResult
    public func send(_ datagram: UnsafeRawBufferPointer, on fd: Int32) -> Int {
        defer { count = 0 }
        guard count > 0, let base = datagram.baseAddress else { return 0 }
        return Int(callroom_send_to_many(fd, addresses, Int32(count), base, datagram.count))
    }
}
