import CallsSupport
import CallsTransport

/// How many users `POST /v3/sdk/login` may create from one address: the auth key ships in every
/// app, so on a server that creates users on login anyone may log in as one new uid after
/// another — a row each, for ever. `perHour` at once, then `perHour` an hour, per address,
/// counted across the cluster when there is one (Redis) and on this node always; loopback (the
/// operator's own: tests, demos) is exempt when `addresses` says so. Logins of users who exist
/// are not counted.
///
/// Thread rules: any thread (the REST queue); its state is under its lock.
final class SignupLimiter: Sendable {
    let perHour: Int
    private let addresses: ClientAddresses
    private let local: Locked<PeerLimiter>
    private let shared: SharedRateLimiter?

    init(perHour: Int, addresses: ClientAddresses, redis: String?) {
        self.perHour = perHour
        self.addresses = addresses
        let capacity = Double(perHour), rate = Double(perHour) / 3600
        local = Locked(PeerLimiter(capacity: capacity, perSecond: rate))
        shared = perHour > 0 ? redis.map { SharedRateLimiter(redis: $0, name: "signup", capacity: capacity, perSecond: rate) } : nil
    }

    convenience init(_ c: ServerConfiguration) {
        self.init(perHour: c.autoCreateUsersPerHour, addresses: c.clientAddresses, redis: c.redisURL)
    }

    /// Whether `peer` may have one more user made for it now (and it is counted when so).
    func allow(_ peer: String, now: UInt64 = monotonicNanoseconds()) -> Bool {
        if addresses.isExempt(peer) { return true }
        guard perHour > 0 else { return false }
        guard local.withLock({ $0.allow(peer, now: now) }) else { return false }
        return shared?.allow(peer) != false
    }
}
