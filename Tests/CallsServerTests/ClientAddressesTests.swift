import CallsTransport
import Testing

/// Which client a request comes from, for the per-address limits: the `X-Forwarded-For` of a
/// trusted proxy, read from the right; and an IPv6 client counted by its /64.
@Suite struct ClientAddressesTests {
    let proxies = ClientAddresses(trustedProxies: ["127.0.0.2", "10.0.0.0/8", "2001:db8:ff::/48"].compactMap(IPNetwork.init))

    @Test(arguments: [
        ("10.0.0.0/8", "10.0.0.0/8"), ("192.0.2.7", "192.0.2.7/32"), ("::1", "::1/128"),
        ("2001:DB8::/32", "2001:db8::/32"), ("::ffff:10.0.0.0/8", "10.0.0.0/8"), ("0.0.0.0/0", "0.0.0.0/0"),
    ])
    func networksAreRead(text: String, read: String) {
        #expect(IPNetwork(text)?.description == read)
    }

    @Test(arguments: ["10.0.0.1/8", "10.0.0.0/33", "10.0.0.0/", "/8", "10.0.0.0/+8", "10.0.0.0/8/8", "fe80::1%eth0",
                      "proxy.example", "", " 10.0.0.1", "10.0.0.0/ 8", "2001:db8::/129", "[::1]"])
    func whatIsNoNetworkIsRefused(text: String) {
        #expect(IPNetwork(text) == nil)
    }

    @Test func aNetworkHoldsItsOwnFamilyOnly() throws {
        let ten = try #require(IPNetwork("10.0.0.0/8"))
        #expect(ten.contains(try #require(IPAddress("10.255.0.1"))))
        #expect(ten.contains(try #require(IPAddress("::ffff:10.1.2.3"))), "an IPv4 address written as IPv6 is the IPv4 address")
        #expect(!ten.contains(try #require(IPAddress("11.0.0.1"))))
        #expect(!ten.contains(try #require(IPAddress("a00::1"))), "IPv6 bytes that begin as 10.x are not in it")
        #expect(try #require(IPNetwork("::/0")).contains(try #require(IPAddress("2001:db8::1"))))
        #expect(!(try #require(IPNetwork("::/0")).contains(try #require(IPAddress("192.0.2.1")))))
    }

    @Test(arguments: [
        // peer, X-Forwarded-For, the client
        ("127.0.0.2", nil, "127.0.0.2"),                                           // no header: the proxy itself
        ("127.0.0.2", "203.0.113.7", "203.0.113.7"),
        ("127.0.0.2", "198.51.100.1, 203.0.113.7", "203.0.113.7"),                // what the client wrote is left of it
        ("127.0.0.2", "198.51.100.1,203.0.113.7, 10.1.1.1", "203.0.113.7"),       // two proxies
        ("127.0.0.2", "10.9.9.9, 10.1.1.1", "10.9.9.9"),                          // all proxies: the furthest
        ("127.0.0.2", "203.0.113.7, unknown", "127.0.0.2"),                       // unreadable where the client should be
        ("127.0.0.2", "203.0.113.7:51234", "203.0.113.7"),
        ("127.0.0.2", "[2001:DB8::7]:443", "2001:db8::7"),
        ("127.0.0.2", "2001:db8::7", "2001:db8::7"),
        ("127.0.0.2", "::ffff:203.0.113.7", "203.0.113.7"),
        ("127.0.0.2", "", "127.0.0.2"),
        ("127.0.0.3", "203.0.113.7", "127.0.0.3"),                                 // not a proxy: the header is ignored
        ("::ffff:127.0.0.2", "203.0.113.7", "203.0.113.7"),                        // the proxy as a v6 socket spells it
        ("2001:db8:ff:1::9", "203.0.113.7", "203.0.113.7"),
    ] as [(String, String?, String)])
    func theClientIsTheRightmostEntryNotAProxy(peer: String, forwardedFor: String?, client: String) {
        #expect(proxies.client(peer: peer, forwardedFor: forwardedFor) == client)
    }

    @Test func proxiesAndLoopback() {
        #expect(proxies.isTrustedProxy("127.0.0.2") && proxies.isTrustedProxy("10.2.3.4") && !proxies.isTrustedProxy("127.0.0.1"))
        #expect(!proxies.isTrustedProxy("?") && !ClientAddresses().isTrustedProxy("127.0.0.2"))
        #expect(ClientAddresses().isExempt("127.0.0.1") && ClientAddresses().isExempt("::1"))
        #expect(!ClientAddresses(exemptLoopback: false).isExempt("127.0.0.1"))
        #expect(!ClientAddresses().isExempt("203.0.113.7"))
    }

    @Test(arguments: [
        ("203.0.113.7", "203.0.113.7"), ("::ffff:203.0.113.7", "203.0.113.7"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"), ("2001:DB8:1:2:ffff::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:3::1", "2001:db8:1:3::/64"), ("::1", "::/64"), ("?", "?"),
    ])
    func anIPv6ClientIsCountedByItsSlash64(peer: String, key: String) {
        #expect(IPAddress.limitKey(peer) == key)
    }

    /// What a stream's target resolves to, for the check of where the server may connect: an
    /// address literal is itself (bracketed or not, an IPv4-mapped one its IPv4), a name goes to
    /// the resolver, and one it cannot resolve says so.
    @Test func namesAndLiteralsResolve() throws {
        #expect(try IPAddress.resolve("[fd00:ec2::254]").map(\.description) == ["fd00:ec2::254"])
        #expect(try IPAddress.resolve("::ffff:169.254.169.254").map(\.description) == ["169.254.169.254"])
        #expect(try IPAddress.resolve("localhost").map(\.description).contains("127.0.0.1"))
        #expect(try IPAddress.resolve("2852039166").map(\.description) == ["169.254.169.254"], "one number, as inet_aton reads it")
        #expect(throws: IPAddress.ResolveError.self) { try IPAddress.resolve("no-such-host.invalid") }
        #expect(throws: IPAddress.ResolveError.self) { try IPAddress.resolve("") }
    }
}
