import CallsSupport

/// A signalling connection anywhere in a deployment: the node that holds its socket and that
/// node's own id for it. On a single node every connection carries this server's node id; a
/// multi-node router (Redis, later) forwards by `node`. A value; any thread.
public struct ConnectionID: Hashable, Sendable, CustomStringConvertible {
    public var node: String
    public var local: UInt64
    public init(node: String, local: UInt64) { self.node = node; self.local = local }
    public var description: String { "\(node)/\(local)" }
}
