import Foundation

/// A network namespace joined to the host by a veth pair, for tests that need a second network
/// (root and iproute2; callers skip with a reason otherwise). `remove()` deletes the namespace and
/// the pair with it.
public struct VethNamespace {
    public let name: String
    public let hostSide: String
    public let peerSide: String
    /// `a.b.c.1` on the host side, `a.b.c.2` in the namespace, as a /30.
    public let prefix: String
    public var hostIP: String { prefix + ".1" }
    public var peerIP: String { prefix + ".2" }

    public init(name: String, hostSide: String, peerSide: String, prefix: String) {
        self.name = name; self.hostSide = hostSide; self.peerSide = peerSide; self.prefix = prefix
    }

    public static var isAvailable: Bool { getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") }

    /// Runs `ip ARGS`; its exit status.
    @discardableResult
    public static func ip(_ args: [String]) throws -> Int32? { try ManagedProcess("/usr/sbin/ip", args).wait(timeout: 10) }

    /// Creates it (after removing a leftover of the same name); the failed step, if any.
    public func create() throws -> String? {
        remove()
        for step in [["netns", "add", name],
                     ["link", "add", hostSide, "type", "veth", "peer", "name", peerSide, "netns", name],
                     ["addr", "add", hostIP + "/30", "dev", hostSide],
                     ["link", "set", hostSide, "up"],
                     ["-n", name, "addr", "add", peerIP + "/30", "dev", peerSide],
                     ["-n", name, "link", "set", peerSide, "up"],
                     ["-n", name, "link", "set", "lo", "up"]] where try Self.ip(step) != 0 {
            return "ip " + step.joined(separator: " ")
        }
        return nil
    }

    public func remove() { _ = try? Self.ip(["netns", "del", name]) }

    /// `ip netns exec NAME` before a command line.
    public func exec(_ executable: String, _ args: [String]) throws -> ManagedProcess {
        try ManagedProcess("/usr/sbin/ip", ["netns", "exec", name, executable] + args)
    }
}
