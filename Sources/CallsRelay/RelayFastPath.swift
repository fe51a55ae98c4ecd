import CBPF
import CallsCore
import CallsTransport
#if canImport(Glibc)
import Glibc
#endif

/// Why the kernel fast path could not start.
public enum RelayFastPathError: Error, Equatable, Sendable, CustomStringConvertible {
    case objectMissing(String)
    case load(path: String, errno: Int32)
    case noInterface(String)
    case attach(errno: Int32)

    public var description: String {
        switch self {
        case .objectMissing(let p): return "no fast-path object at \(p) (scripts/build-bpf.sh builds it)"
        case .load(let p, let e): return "cannot load \(p): \(String(cString: strerror(e))) (needs root or CAP_BPF)"
        case .noInterface(let h): return "no interface holds \(h) (the fast path needs the relay bound to one address, not 0.0.0.0)"
        case .attach(let e): return "cannot attach to the interface: \(String(cString: strerror(e))) (needs Linux ≥ 6.6 tcx and CAP_NET_ADMIN)"
        }
    }
}

/// The relay's kernel fast path: an eBPF program on the relay interface's ingress
/// (Resources/bpf/relay_fastpath.bpf.c) that forwards RTP from bound members to their rooms in
/// the kernel: audio to the room, video to the members that subscribed to it. This type owns the loaded object and its tcx link (the kernel detaches the link
/// when the process exits, however it exits) and keeps the program's maps equal to the relay's
/// membership.
///
/// Thread rules: one thread at a time after `init` — the relay keeps it behind
/// `RelayShared.fastPath`'s lock (any worker syncs it; worker 0 harvests it).
package final class RelayFastPath: @unchecked Sendable {
    /// The program's handles. The descriptors `callroom_bpf_close` closes start at -1: a zeroed
    /// struct would close fd 0 (twice) when an init that failed early deinitialises — whatever
    /// holds fd 0 by then (a database connection, once stdin is closed) lost its socket.
    private var bpf: callroom_bpf = {
        var b = callroom_bpf()
        b.link_fd = -1
        b.stats_enable_fd = -1
        return b
    }()
    /// What the maps hold now: member key → its sender entry, and room → destinations.
    private var members: [UInt64: Sender] = [:]
    private var rooms: [Int: [SocketAddress]] = [:]
    /// The member keys whose entries the maps hold, per room.
    private var roomKeys: [Int: [UInt64]] = [:]
    /// Level slots: released ones are reused first.
    private var freeSlots: [UInt32] = []
    private var nextSlot: UInt32 = 0
    private var lastLevelTime: [UInt64: UInt64] = [:]
    private var lastStats = [UInt64](repeating: 0, count: Int(CR_STATS))

    /// A member's entry in `cr_members`: what the program forwards of its packets, and where.
    private struct Sender: Equatable {
        package var address: SocketAddress
        package var room: Int
        package var ssrc: UInt32
        package var videoSSRC: UInt32
        /// `CR_AUDIO_ON` | `CR_VIDEO_ON`.
        package var flags: UInt32
        /// Bit i: entry i of the room's destination list subscribed to its video.
        package var videoMask: UInt64
        package var slot: UInt32
    }

    /// Loads `objectPath` and attaches it to the interface holding `host`, for packets to
    /// `host:port`.
    package init(objectPath: String, host: String, port: Int, senderLimits: SenderLimits = SenderLimits()) throws(RelayFastPathError) {
        guard access(objectPath, R_OK) == 0 else { throw .objectMissing(objectPath) }
        guard let address = SocketAddress(host: host, port: port), address.ip != 0,
              let ifindex = Self.interfaceIndex(holding: address.ip) else { throw .noInterface(host) }
        let rc = callroom_bpf_open(objectPath, &bpf)
        guard rc == 0 else { throw .load(path: objectPath, errno: -rc) }
        let l = senderLimits
        let attached = callroom_bpf_attach(&bpf, address.ip, UInt16(port).bigEndian, Int32(ifindex), l.audioPacketsPerSecond, l.audioBytesPerSecond,
                                           l.videoPacketsPerSecond, l.videoBytesPerSecond)
        guard attached == 0 else {
            callroom_bpf_close(&bpf)
            throw .attach(errno: -attached)
        }
    }

    deinit { callroom_bpf_close(&bpf) }

    /// Detaches the program and frees its maps (idempotent): from here on every packet goes to
    /// the relay's sockets, or nowhere once they are closed.
    package func close() { callroom_bpf_close(&bpf) }

    /// Makes the maps match `table` and `bindings`: every bound member, and for each room of at
    /// most 64 bound members its destination list (larger rooms stay with the socket relay).
    package func sync(_ table: RelayTable, _ bindings: RelayBindings) {
        for room in Set(table.rooms.keys).union(roomKeys.keys) { sync(room: room, table, bindings) }
    }

    /// The same for one room: all a bind, a mute, a paused camera or a video subscription can
    /// change, at the cost of that room's size.
    package func sync(room: Int, _ table: RelayTable, _ bindings: RelayBindings) {
        var want: [(key: UInt64, address: SocketAddress, member: RelayTable.Member)] = []
        for k in table.rooms[room] ?? [] {
            if let a = bindings.addressOf[k], let m = table.members[k] { want.append((k, a, m)) }
        }
        if want.count > Int(CR_MAX_ROOM) { want = [] }
        // No one sends here in a room with a member whose media goes over signalling: the kernel
        // cannot reach a WebSocket, so the workers forward that room.
        let tunnelled = (table.rooms[room] ?? []).contains { table.members[$0]?.tunnel != nil }
        let list = want.map(\.address)
        var senders: [UInt64: Sender] = [:]
        if !tunnelled {
            let index = Dictionary(want.enumerated().map { ($0.element.key, $0.offset) }, uniquingKeysWith: { a, _ in a })
            for w in want {
                let m = w.member
                // A muted member's audio and a paused camera go up to the workers, which drop them.
                var flags: UInt32 = m.muted ? 0 : UInt32(CR_AUDIO_ON)
                var mask: UInt64 = 0
                if m.videoSSRC != 0 && !m.videoPaused {
                    for s in m.videoSubscribers { if let i = index[s] { mask |= 1 << UInt64(i) } }
                    flags |= UInt32(CR_VIDEO_ON)
                }
                guard flags != 0 else { continue }
                senders[w.key] = Sender(address: w.address, room: room, ssrc: m.ssrc, videoSSRC: m.videoSSRC,
                                        flags: flags, videoMask: mask, slot: members[w.key]?.slot ?? 0)
            }
        }
        for k in roomKeys[room] ?? [] where senders[k] == nil || senders[k]?.address != members[k]?.address { removeMember(k) }
        if list.isEmpty {
            if rooms.removeValue(forKey: room) != nil { _ = callroom_bpf_delete_room(&bpf, UInt32(truncatingIfNeeded: room)) }
        } else if rooms[room] != list {
            // A video mask names positions in the list: until the new masks are in, no video
            // goes by the old ones (a position may now be someone who did not subscribe).
            for k in roomKeys[room] ?? [] {
                guard var old = members[k], old.videoMask != 0 else { continue }
                old.videoMask = 0
                old.flags &= ~UInt32(CR_VIDEO_ON)
                if write(old) { members[k] = old }
            }
            let ips = list.map(\.ip), ports = list.map { $0.port.bigEndian }
            _ = callroom_bpf_set_room(&bpf, UInt32(truncatingIfNeeded: room), ips, ports, UInt32(list.count))
            rooms[room] = list
        }
        // Members last: a sender enters the fast path only once its room's list is in place.
        for w in want {
            guard var entry = senders[w.key] else { continue }
            if let old = members[w.key], old == entry { continue }
            let isNew = members[w.key] == nil
            guard let slot = members[w.key]?.slot ?? takeSlot() else { continue }  // 65,536 members: the rest stay with the workers
            entry.slot = slot
            guard write(entry) else {
                if isNew { freeSlots.append(slot) }
                continue
            }
            if isNew { lastLevelTime[w.key] = level(slot).at }  // a reused slot's old level is not this member's
            members[w.key] = entry
        }
        let held = want.map(\.key).filter { members[$0] != nil }
        roomKeys[room] = held.isEmpty ? nil : held
    }

    private func write(_ s: Sender) -> Bool {
        callroom_bpf_set_member(&bpf, s.address.ip, s.address.port.bigEndian, UInt32(truncatingIfNeeded: s.room), s.ssrc,
                                s.slot, s.videoSSRC, s.flags, s.videoMask) == 0
    }

    private func removeMember(_ k: UInt64) {
        guard let old = members.removeValue(forKey: k) else { return }
        _ = callroom_bpf_delete_member(&bpf, old.address.ip, old.address.port.bigEndian)
        freeSlots.append(old.slot)
        lastLevelTime[k] = nil
    }

    private func takeSlot() -> UInt32? {
        if let s = freeSlots.popLast() { return s }
        guard nextSlot < UInt32(CR_MAX_MEMBERS) else { return nil }
        defer { nextSlot += 1 }
        return nextSlot
    }

    private func level(_ slot: UInt32) -> (level: UInt32, at: UInt64) {
        var level: UInt32 = 127, at: UInt64 = 0
        callroom_bpf_level(&bpf, slot, &level, &at)
        return (level, at)
    }

    /// Levels the program stored since the last call: (member key, RFC 6464 level, monotonic
    /// time). Reads the shared mapping: no system call.
    package func newLevels() -> [(key: UInt64, level: UInt8, at: UInt64)] {
        var out: [(key: UInt64, level: UInt8, at: UInt64)] = []
        for (k, m) in members {
            let l = level(m.slot)
            guard l.at != 0, l.at != lastLevelTime[k] else { continue }
            lastLevelTime[k] = l.at
            out.append((k, UInt8(min(l.level, 127)), l.at))
        }
        return out
    }

    /// What the program counted since the last call.
    package struct StatsDelta {
        package var received: UInt64 = 0, receivedBytes: UInt64 = 0
        /// Copies sent (audio and video), and their bytes.
        package var forwarded: UInt64 = 0, forwardedBytes: UInt64 = 0
        /// Copies it failed to send.
        package var sendFailed: UInt64 = 0
        /// Video copies sent to subscribers, and withheld from the rest of the room.
        package var videoForwarded: UInt64 = 0, videoWithheld: UInt64 = 0
        /// Packets over their sender's budget, dropped in the kernel.
        package var rateLimited: UInt64 = 0
    }

    /// Packets and bytes the program received and forwarded, copies it failed to send, video
    /// copies forwarded and withheld, since the last call.
    package func statsDelta() -> StatsDelta {
        var now = [UInt64](repeating: 0, count: Int(CR_STATS))
        guard callroom_bpf_stats(&bpf, &now) == 0 else { return StatsDelta() }
        defer { lastStats = now }
        func d(_ i: Int) -> UInt64 { now[i] &- lastStats[i] }
        return StatsDelta(received: d(CR_RECEIVED), receivedBytes: d(CR_RECEIVED_BYTES), forwarded: d(CR_FORWARDED),
                          forwardedBytes: d(CR_FORWARDED_BYTES), sendFailed: d(CR_SEND_FAILED),
                          videoForwarded: d(CR_VIDEO_FORWARDED), videoWithheld: d(CR_VIDEO_WITHHELD), rateLimited: d(CR_RATE_LIMITED))
    }

    /// The program's total run time in nanoseconds (0 when the kernel's run-time stats are off).
    package var runNanoseconds: UInt64 {
        var ns: UInt64 = 0, count: UInt64 = 0
        return callroom_bpf_run_time(&bpf, &ns, &count) == 0 ? ns : 0
    }

    /// Where the object is looked for when the configuration names none: next to the running
    /// executable, then in SwiftPM's `.build/bpf` (where scripts/build-bpf.sh puts it).
    package static func defaultObjectPath() -> String {
        var buf = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buf, buf.count - 1)
        guard n > 0 else { return "relay_fastpath.bpf.o" }
        let exe = String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let dir = exe.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let beside = dir + "/relay_fastpath.bpf.o"
        if access(beside, R_OK) == 0 { return beside }
        return dir + "/../../bpf/relay_fastpath.bpf.o"
    }

    /// The index of the interface that holds `ip` (network byte order), from getifaddrs.
    package static func interfaceIndex(holding ip: UInt32) -> UInt32? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return nil }
        defer { freeifaddrs(list) }
        var cur: UnsafeMutablePointer<ifaddrs>? = first
        while let p = cur {
            if let sa = p.pointee.ifa_addr, sa.pointee.sa_family == sa_family_t(AF_INET) {
                let sin = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
                if sin.sin_addr.s_addr == ip, let name = p.pointee.ifa_name {
                    let index = if_nametoindex(name)
                    if index != 0 { return index }
                }
            }
            cur = p.pointee.ifa_next
        }
        return nil
    }
}
