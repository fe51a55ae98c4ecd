import CNice
import CallsCore
import CallsTransport
@testable import CallsWebRTC
import Glibc
import Testing

/// The browser's side of the checks is libnice's own ICE usage (a full agent, controlling): it
/// writes the requests and judges the replies, so the responder is checked by another
/// implementation of the same RFCs, not by itself.
@Suite("ICE-lite: browsers' connectivity checks answered with libnice's STUN library")
struct ICELiteResponderTests {
    let source = SocketAddress(host: "192.0.2.7", port: 50_123)!
    let peers = ["srvUfrag": "serverIcePasswordOf22ch"]

    /// A browser-side agent (controlling) that writes checks and reads their replies.
    final class Browser {
        let agent = UnsafeMutablePointer<StunAgent>.allocate(capacity: 1)
        let known = UnsafeMutablePointer<UInt16>.allocate(capacity: 11)
        let request = UnsafeMutablePointer<StunMessage>.allocate(capacity: 1)
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: 548)
        let password: String
        /// libnice keeps a pointer to the key of each check it sent, to verify the reply with it.
        let key: UnsafeMutableBufferPointer<UInt8>

        init(password: String) {
            self.password = password
            key = .allocate(capacity: password.utf8.count)
            _ = key.initialize(from: password.utf8)
            for (i, a) in [STUN_ATTRIBUTE_XOR_MAPPED_ADDRESS, STUN_ATTRIBUTE_MAPPED_ADDRESS, STUN_ATTRIBUTE_MESSAGE_INTEGRITY, STUN_ATTRIBUTE_FINGERPRINT,
                           STUN_ATTRIBUTE_USERNAME, STUN_ATTRIBUTE_ERROR_CODE, STUN_ATTRIBUTE_UNKNOWN_ATTRIBUTES, STUN_ATTRIBUTE_PRIORITY,
                           STUN_ATTRIBUTE_USE_CANDIDATE, STUN_ATTRIBUTE_ICE_CONTROLLED].enumerated() {
                known[i] = UInt16(a.rawValue)
            }
            known[10] = 0
            agent.initialize(to: StunAgent())
            stun_agent_init(agent, known, STUN_COMPATIBILITY_RFC5389,
                            StunAgentUsageFlags(rawValue: STUN_AGENT_USAGE_SHORT_TERM_CREDENTIALS.rawValue | STUN_AGENT_USAGE_USE_FINGERPRINT.rawValue))
        }
        deinit { agent.deallocate(); known.deallocate(); request.deallocate(); buffer.deallocate(); key.deallocate() }

        func check(username: String, nominate: Bool) -> [UInt8] {
            let user = Array(username.utf8)
            request.initialize(to: StunMessage())
            let n = stun_usage_ice_conncheck_create(agent, request, buffer, 548, user, user.count, key.baseAddress, key.count,
                                                    nominate, true, 0x6E7F_1EFF, 0x1234_5678_9ABC_DEF0, nil, STUN_USAGE_ICE_COMPATIBILITY_RFC5245)
            return Array(UnsafeBufferPointer(start: buffer, count: n))
        }

        /// Answers the server's own check as a browser does (controlling): the request's
        /// USERNAME must be `username` and its integrity made with this browser's password; the
        /// response carries `source` and is signed with the same password. nil: not answered.
        func answer(_ check: [UInt8], username: String, from source: SocketAddress) -> [UInt8]? {
            let user = Array(username.utf8)
            var message = StunMessage()
            let status = user.withUnsafeBufferPointer { u in
                var data = StunDefaultValidaterData(username: UnsafeMutablePointer(mutating: u.baseAddress), username_len: u.count,
                                                    password: key.baseAddress, password_len: key.count)
                return withUnsafeMutablePointer(to: &data) { stun_agent_validate(agent, &message, check, check.count, stun_agent_default_validater, $0) }
            }
            guard status == STUN_VALIDATION_SUCCESS, stun_message_get_class(&message) == STUN_REQUEST else { return nil }
            let (made, reply) = ICELiteResponder.reply(agent: agent, to: &message, from: source, controlling: true, tieBreaker: 0x1234_5678_9ABC_DEF0)
            return made == STUN_USAGE_ICE_RETURN_SUCCESS ? reply : nil
        }

        /// Validates a reply to the last check with the password; returns the mapped address.
        func read(_ reply: [UInt8]) -> (valid: Bool, mapped: SocketAddress?) {
            var response = StunMessage()
            var data = StunDefaultValidaterData(username: nil, username_len: 0, password: key.baseAddress, password_len: key.count)
            let status = withUnsafeMutablePointer(to: &data) { stun_agent_validate(agent, &response, reply, reply.count, stun_agent_default_validater, $0) }
            guard status == STUN_VALIDATION_SUCCESS else { return (false, nil) }
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            guard stun_usage_ice_conncheck_process(&response, &storage, &length, STUN_USAGE_ICE_COMPATIBILITY_RFC5245) == STUN_USAGE_ICE_RETURN_SUCCESS else {
                return (true, nil)
            }
            let sin = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in.self) }
            return (true, SocketAddress(sin))
        }
    }

    @Test func aBrowsersCheckIsAnsweredWithItsAddressAndIntegrityAndItsNominationSeen() {
        let responder = ICELiteResponder()
        let browser = Browser(password: peers["srvUfrag"]!)
        for nominate in [false, true] {
            let check = browser.check(username: "srvUfrag:brUf", nominate: nominate)
            #expect(check.withUnsafeBytes { ICELiteResponder.isSTUN($0) })
            guard case .reply(let reply, let ufrag, let nominated) = responder.respond(to: check, from: source, password: { peers[$0] }) else {
                Issue.record("not answered"); return
            }
            #expect(ufrag == "srvUfrag")
            #expect(nominated == nominate)
            let read = browser.read(reply)
            #expect(read.valid, "libnice refused the reply's integrity or fingerprint")
            #expect(read.mapped == source)
        }
    }

    @Test func checksWithoutTheRightCredentialsAreNotAnswered() {
        let responder = ICELiteResponder()
        let wrongPassword = Browser(password: "notTheServersPassword!!")
        #expect(responder.respond(to: wrongPassword.check(username: "srvUfrag:brUf", nominate: true), from: source, password: { peers[$0] })
                == .refused(.badIntegrity))
        let right = Browser(password: peers["srvUfrag"]!)
        #expect(responder.respond(to: right.check(username: "otherUfrag:brUf", nominate: true), from: source, password: { peers[$0] })
                == .refused(.unknownUser))
        #expect(responder.respond(to: right.check(username: "srvUfrag", nominate: true), from: source, password: { peers[$0] })
                == .refused(.unknownUser))
        // A reply is not a request: handing the server its own answer back gets nothing.
        guard case .reply(let reply, _, _) = responder.respond(to: right.check(username: "srvUfrag:brUf", nominate: false), from: source,
                                                               password: { peers[$0] }) else { Issue.record("not answered"); return }
        #expect(responder.respond(to: reply, from: source, password: { peers[$0] }) != .reply([], localUfrag: "", nominated: false))
        if case .reply = responder.respond(to: reply, from: source, password: { peers[$0] }) { Issue.record("answered a response") }
        #expect(responder.respond(to: [0x80, 0x6F] + [UInt8](repeating: 0, count: 40), from: source, password: { peers[$0] }) == .refused(.malformed))
    }

    /// Before media go to an address the server asks it itself: the check is the browser's to
    /// answer (its ufrag first, signed with its password), and only the response to a check
    /// still awaited counts — once.
    @Test func theServersOwnCheckIsAnsweredByTheBrowserAndMatchedOnce() throws {
        let responder = ICELiteResponder()
        let browser = Browser(password: "browserIcePasswordOf22c")
        let (request, transaction) = try #require(responder.check(username: "brUf:srvUfrag", password: browser.password))
        #expect(responder.outstandingChecks == 1)
        #expect(browser.answer(request, username: "srvUfrag:brUf", from: source) == nil, "the browser's ufrag comes first")
        #expect(Browser(password: "notTheBrowsersPassword!").answer(request, username: "brUf:srvUfrag", from: source) == nil,
                "signed with the browser's password")
        let response = try #require(browser.answer(request, username: "brUf:srvUfrag", from: source))
        #expect(responder.respond(to: response, from: source, password: { peers[$0] }) == .answered(transaction, success: true))
        #expect(responder.outstandingChecks == 0)
        #expect(responder.respond(to: response, from: source, password: { peers[$0] }) == .refused(.notBindingRequest), "once")
        // A check forgotten (no response in time): its late response counts for nothing.
        let (late, forgotten) = try #require(responder.check(username: "brUf:srvUfrag", password: browser.password))
        responder.forget(forgotten)
        #expect(responder.outstandingChecks == 0)
        let lateResponse = try #require(browser.answer(late, username: "brUf:srvUfrag", from: source))
        #expect(responder.respond(to: lateResponse, from: source, password: { peers[$0] }) == .refused(.notBindingRequest))
        // At most `maxOutstandingChecks` await a response at once.
        let many = (0..<ICELiteResponder.maxOutstandingChecks).compactMap { _ in responder.check(username: "brUf:srvUfrag", password: browser.password) }
        #expect(many.count == ICELiteResponder.maxOutstandingChecks)
        #expect(responder.check(username: "brUf:srvUfrag", password: browser.password) == nil)
        responder.forget(many[0].transaction)
        #expect(responder.check(username: "brUf:srvUfrag", password: browser.password) != nil)
    }

    /// 5,000 checks with bytes flipped, cut or grown: none traps, none is answered unless it is
    /// still a valid check (the integrity covers every byte before it).
    @Test func mangledChecksNeverTrapAndAreNotAnswered() {
        let responder = ICELiteResponder()
        var rng = SplitMix64(seed: 0x1CE)
        var answered = 0
        for _ in 0..<5000 {
            // (A fresh browser each time: an agent remembers a bounded number of unanswered checks.)
            var bytes = Browser(password: peers["srvUfrag"]!).check(username: "srvUfrag:brUf", nominate: true)
            switch rng.next() % 3 {
            case 0: bytes[Int(rng.next() % UInt64(bytes.count))] ^= UInt8(truncatingIfNeeded: rng.next() | 1)
            case 1: bytes.removeLast(1 + Int(rng.next() % UInt64(bytes.count - 1)))
            default: bytes += (0...Int(rng.next() % 16)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            }
            if case .reply = responder.respond(to: bytes, from: source, password: { peers[$0] }) { answered += 1 }
        }
        // Every byte up to MESSAGE-INTEGRITY is under its HMAC, the rest under FINGERPRINT's CRC.
        #expect(answered == 0, "\(answered) mangled checks answered")
    }
}
