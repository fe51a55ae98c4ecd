@testable import CallsCore
import Foundation
import Testing

@Suite("Signalling messages")
struct SignalMessageTests {
    @Test func theWireTextIsExactlyWhatItWas() {
        let lines = Self.clientSamples.map { $0.json() } + Self.serverSamples.map { $0.json() }
        #expect(lines.count == WireGolden.lines.count)
        for (got, want) in zip(lines, WireGolden.lines) { #expect(got == want) }
    }

    @Test func everyMessageCaseHasARowInItsCodec() {
        // The samples cover every case of both enums; each must find its own row.
        let client = Set(Self.clientSamples.compactMap { ClientMessage.codec.type(of: $0) })
        let server = Set(Self.serverSamples.compactMap { ServerMessage.codec.type(of: $0) })
        #expect(client == Set(ClientMessage.codec.cases.map(\.type)))
        #expect(server == Set(ServerMessage.codec.cases.map(\.type)))
        #expect(!Self.clientSamples.contains { $0.json() == "{}" } && !Self.serverSamples.contains { $0.json() == "{}" })
    }

    let alice = WireParticipant(uid: "alice", name: "Alice", pid: "p1", ssrc: 42, role: .moderator,
                                isAudioMuted: false, isVideoPaused: true, joinedAt: 1_700_000_000_000)

    static var clientSamples: [ClientMessage] {
        [
            .join(.init(callToken: "t.o.k", sessionId: "s", displayName: "A", audioMuted: true, videoPaused: false,
                        sessionType: .voice, idleTimeoutSeconds: 0)),
            .setSessionFeature(feature: .recording, enabled: true), .setCameraFacing("REAR"),
            .resume(token: "r"), .setAudioMuted(true), .setAudioMuted(false), .setVideoPaused(true), .setHandRaised(true),
            .setPresenting(false), .setRecording(true), .pin(pid: "p"), .pin(pid: nil), .muteParticipant(pid: "p"),
            .pauseParticipantVideo(pid: "p"), .removeParticipant(pid: "p"), .chat(text: "hi \"there\""), .receiverReport([LossReport(ssrc: 9, lossPercent: 4.5)]), .leave, .ping(7),
        ] + ringClientSamples
    }

    static let ringClientSamples: [ClientMessage] = [
        .hello(authToken: "tok"), .initiateCall(receiverId: "bob", receiverType: .user, type: .audio, timeoutSeconds: nil),
        .initiateCall(receiverId: "team", receiverType: .group, type: .video, timeoutSeconds: 30),
        .acceptCall(sessionId: "call_1"), .rejectCall(sessionId: "call_1", status: .busy), .endCall(sessionId: "call_1"),
        .setMediaOverSignalling(true), .allowUnmute(pid: "p"),
        .setSessionFeature(feature: .transcription, enabled: true, language: "en-US"),
        .caption(sampleCaption), .streamStatus(state: .reconnecting, detail: "connection refused"),
        .memberStopped(reason: "disk full"),
        .subscribeVideo(pids: ["p2", "p3"]), .requestKeyframe(pid: "p2"),
        .receiverReport([LossReport(ssrc: 10, lossPercent: 1.5, framesPerSecond: 14.5)]),
        .receiverReport([LossReport(ssrc: 9, lossPercent: 3, red: true)]),
        .receiverReport([LossReport(ssrc: 9, lossPercent: 21, red: true, burst: 5, redBlocks: 8)]),
        .screenShare(sampleShare),
        .setRoomLocked(true), .admitFromLobby(pid: "w1"), .denyFromLobby(pid: "w2"), .allowRejoin(uid: "eve"), .setBan(uid: "eve", banned: true),
        .webrtcOffer(sdp: "v=0\r\n"),
    ]

    static let sampleShare: ScreenShareFrame = {
        var red = GridStyle(fg: 1)
        red.bold = true
        return ScreenShareFrame(seq: 3, full: false, columns: 80, rows: 24, cursor: GridPoint(x: 4, y: 1), styles: [red, .plain],
                                runs: [.init(x: 0, y: 1, text: "FAIL", style: 0), .init(x: 4, y: 1, text: "", style: 1)])
    }()

    static let sampleCaption = WireCaption(tid: "tr_1", pid: "p1", uid: "alice", name: "Alice", id: 2, text: "hello there",
                                           final: true, start: 1200, end: 2400)

    static let sampleCall = WireCall(sessionId: "call_1", initiator: .init(id: "ann", name: "Ann"), receiverType: .user,
                                     receiver: .init(id: "bob", name: "Bob"), type: .video, status: .ongoing,
                                     members: [.init(uid: "bob", name: "Bob", outcome: .accepted)], timeoutSeconds: 45,
                                     initiatedAt: 1_700_000_000_000, startedAt: 1_700_000_003_000)

    @Test func clientMessagesRoundTrip() throws {
        for m in Self.clientSamples {
            #expect(try ClientMessage(json: Data(m.json().utf8)) == m)
        }
    }

    static var serverSamples: [ServerMessage] {
        let alice = WireParticipant(uid: "alice", name: "Alice", pid: "p1", ssrc: 42, role: .moderator,
                                    isAudioMuted: false, isVideoPaused: true, joinedAt: 1_700_000_000_000)
        return [
            .joined(.init(sessionId: "s", you: alice, participants: [alice], mediaPort: 4000, bindToken: "00ff")),
            .resumed(.init(sessionId: "s", you: alice, participants: [alice], mediaPort: 4000, bindToken: "00ff",
                           resumeToken: "r", gracePeriodSeconds: 30, dominantSpeaker: "p1")),
            .dominantSpeaker(pid: "p1"), .dominantSpeaker(pid: nil), .lossReport(fromPid: "p2", lossPercent: 12, redundancy: false), .lossReport(fromPid: "p2", lossPercent: 12, redundancy: true),
            .lossReport(fromPid: "p2", lossPercent: 20, redundancy: true, burst: 6, redBlocks: 8),
            .chat(ChatMessage(id: 1, pid: "p1", uid: "alice", name: "Alice", text: "hello", sentAt: 5)),
            .participantJoined(alice), .participantLeft(alice, reason: .left), .participantLeft(alice, reason: .serverShuttingDown),
            .participantUpdated(alice, change: .audioMuted), .left(reason: .removed),
            .left(reason: LeaveReason(rawValue: "a reason from a newer server")),
            .error(code: .notModerator, message: "why \"quoted\""), .error(code: SignalErrorCode(rawValue: "ERR_FROM_THE_FUTURE"), message: ""),
            .pong(3),
        ] + ParticipantChange.allCases.map { .participantUpdated(alice, change: $0) } + [
            .welcome(uid: "ann", name: "Ann"), .call(event: .accepted, call: sampleCall, reason: nil),
            .call(event: .cancelled, call: sampleCall, reason: .answeredElsewhere),
            .mediaKeys([WireMediaKey(ssrc: 42, epoch: 3, key: "a2V5")]),
            .recording(active: true, by: "p1", rid: "rec_1"), .recording(active: false, by: nil, rid: "rec_1"),
            .transcription(active: true, by: "p1", tid: "tr_1", language: "en-US"), .transcription(active: false, by: nil, tid: "tr_1", language: "en-US"),
            .caption(sampleCaption), .streaming(state: .live, by: "p1", detail: nil), .streaming(state: .reconnecting, by: "p1", detail: "icecast dropped"),
            .keyframeRequest(fromPid: "p2"), .videoReport(fromPid: "p2", lossPercent: 12, framesPerSecond: 7.5),
            .mediaKeys([WireMediaKey(ssrc: 42, epoch: 3, key: "a2V5", videoSsrc: 43)]),
            .screenShare(pid: "p1", frame: sampleShare),
            .roomLocked(true, by: "p1"), .roomLocked(false, by: nil), .lobbyWaiting, .lobbyRequest(alice), .lobbyResolved(pid: "w1", admitted: true),
            .joined(.init(sessionId: "s", you: alice, participants: [alice], mediaPort: 4000, bindToken: "00ff", locked: true)),
            .roomBans(["eve", "mallory"]),
            .webrtcAnswer(sdp: "v=0\r\na=ice-lite\r\n"),
        ]
    }

    @Test func serverMessagesRoundTrip() throws {
        for m in Self.serverSamples {
            #expect(try ServerMessage(json: Data(m.json().utf8)) == m)
        }
    }

    /// The typed values encode as the strings docs/protocol.md names (the wire is unchanged).
    @Test func typedValuesKeepTheirWireSpelling() throws {
        func object(_ s: String) throws -> [String: Any] { try #require(try JSONSerialization.jsonObject(with: Data(s.utf8)) as? [String: Any]) }
        #expect(try object(ServerMessage.participantUpdated(alice, change: .presentingStarted).json())["change"] as? String == "presentingStarted")
        #expect(try object(ServerMessage.left(reason: .serverShuttingDown).json())["reason"] as? String == "server shutting down")
        #expect(try object(ServerMessage.error(code: .tokenExpired, message: "m").json())["code"] as? String == "AUTH_ERR_TOKEN_EXPIRED")
        let p = try object(ServerMessage.participantJoined(alice).json())["participant"] as? [String: Any]
        #expect(p?["role"] as? String == "moderator")
        let j = try object(ClientMessage.join(.init(callToken: "x", sessionType: .video)).json())
        #expect(j["sessionType"] as? String == "video")
        #expect(try object(ClientMessage.setSessionFeature(feature: .transcription, enabled: true).json())["feature"] as? String == "transcription")
        // Closed sets refuse what they do not know; open ones carry it.
        #expect(throws: (any Error).self) { try ClientMessage(json: Data(#"{"type":"setSessionFeature","feature":"teleport","value":true}"#.utf8)) }
        #expect(throws: (any Error).self) {
            try ServerMessage(json: Data(#"{"type":"participantUpdated","change":"levitating","participant":{}}"#.utf8))
        }
        #expect(try ServerMessage(json: Data(#"{"type":"left","reason":"new"}"#.utf8)) == .left(reason: LeaveReason(rawValue: "new")))
    }

    @Test func wireShapeHasTypeField() throws {
        let obj = try JSONSerialization.jsonObject(with: Data(ClientMessage.setAudioMuted(true).json().utf8)) as? [String: Any]
        #expect(obj?["type"] as? String == "setAudioMuted")
        #expect(obj?["value"] as? Bool == true)
        let join = try JSONSerialization.jsonObject(with: Data(ClientMessage.join(.init(callToken: "x")).json().utf8)) as? [String: Any]
        #expect(join?["v"] as? Int == signallingProtocolVersion)
    }

    @Test func decodeErrors() {
        #expect(throws: SignalDecodeError.notJSON) { try ClientMessage(json: Data("nope".utf8)) }
        #expect(throws: SignalDecodeError.missingType) { try ClientMessage(json: Data("{}".utf8)) }
        #expect(throws: SignalDecodeError.unknownType("dance")) { try ClientMessage(json: Data(#"{"type":"dance"}"#.utf8)) }
    }

    /// A message that does not fit its type says which field is wrong and how — what a client
    /// written from docs/protocol.md needs to mend it — and never echoes the value.
    @Test(arguments: [
        (#"{"type":"setAudioMuted"}"#, "setAudioMuted: value is required."),
        (#"{"type":"setAudioMuted","value":"yes"}"#, "setAudioMuted: value must be true or false."),
        (#"{"type":"join","v":1,"callToken":5}"#, "join: callToken must be a string."),
        (#"{"type":"join","v":1}"#, "join: callToken is required."),
        (#"{"type":"muteParticipant"}"#, "muteParticipant: pid is required."),
        (#"{"type":"ping","id":"x"}"#, "ping: id must be a whole number."),
        (#"{"type":"ping","id":1.5}"#, "ping: a number is not whole, or too large for its field."),
        (#"{"type":"ping","id":null}"#, "ping: id must be a whole number."),
        (#"{"type":"chat","text":["hi"]}"#, "chat: text must be a string."),
        (#"{"type":"subscribeVideo","pids":[1]}"#, "subscribeVideo: pids[0] must be a string."),
        (#"{"type":"receiverReport","reports":[{"ssrc":1,"lossPercent":0},{"ssrc":"a","lossPercent":0}]}"#,
         "receiverReport: reports[1].ssrc must be a whole number."),
        (#"{"type":"receiverReport","reports":[{"ssrc":1,"lossPercent":"lots"}]}"#, "receiverReport: reports[0].lossPercent must be a number."),
        (#"{"type":"setSessionFeature","feature":"<script>","value":true}"#, "setSessionFeature: feature has a value it cannot take."),
        (#"{"type":"initiateCall","receiverId":"bob","receiverType":"user","callType":{}}"#, "initiateCall: callType must be a string."),
    ])
    func badFieldsAreNamed(json: String, message: String) {
        #expect(throws: SignalDecodeError.badFields(message)) { try ClientMessage(json: Data(json.utf8)) }
    }

    /// A key the client made up (a dictionary's) is named only when it looks like a field: the
    /// message never carries what the client wrote elsewhere.
    @Test func madeUpKeysAreNotEchoed() throws {
        struct Body: Decodable { var counts: [String: Int] }
        for (json, said) in [(#"{"counts":{"plain_key":"x"}}"#, "counts.plain_key must be a whole number."),
                             (#"{"counts":{"<b>\u001b[31m":"x"}}"#, "counts.… must be a whole number.")] {
            let data = Data(json.utf8)
            do { _ = try JSONDecoder().decode(Body.self, from: data); Issue.record("decoded \(json)") } catch let e as DecodingError {
                #expect(JSONFieldProblem.describe(e, in: data) == said)
            }
        }
    }

    @Test func bindDatagramsRoundTripAndRejectGarbage() {
        let proof = Array(UInt8(0)..<16), nonce = Array(UInt8(100)..<116), mac = Array(UInt8(200)..<216)
        let bind = MediaBinding.encodeBind(.init(ssrc: 0xA1B2C3D4, proof: proof))
        #expect(bind.count == MediaBinding.bindLength)
        #expect(bind[0] >> 6 != 2, "never looks like RTP")
        #expect(bind.withUnsafeBytes { MediaBinding.parseBind($0) } == MediaBinding.Bind(ssrc: 0xA1B2C3D4, proof: proof))
        #expect(bind.dropLast().withUnsafeBytes { MediaBinding.parseBind(UnsafeRawBufferPointer(rebasing: $0[...])) } == nil)
        let challenge = MediaBinding.encodeChallenge(.init(ssrc: 7, nonce: nonce))
        #expect(challenge.count == MediaBinding.challengeLength)
        #expect(challenge.count <= bind.count, "a challenge never amplifies its bind")
        #expect(challenge.withUnsafeBytes { MediaBinding.parseChallenge($0) } == MediaBinding.Challenge(ssrc: 7, nonce: nonce))
        let response = MediaBinding.encodeResponse(.init(ssrc: 7, nonce: nonce, mac: mac))
        #expect(response.count == MediaBinding.responseLength)
        #expect(response.withUnsafeBytes { MediaBinding.parseResponse($0) } == MediaBinding.Response(ssrc: 7, nonce: nonce, mac: mac))
        #expect(response.withUnsafeBytes { MediaBinding.parseChallenge($0) } == nil)
        let ack = MediaBinding.encodeAck(ssrc: 5)
        #expect(ack.withUnsafeBytes { MediaBinding.parseAck($0) } == 5)
        #expect(bind.withUnsafeBytes { MediaBinding.parseAck($0) } == nil)
        #expect(challenge.withUnsafeBytes { MediaBinding.parseBind($0) } == nil, "same length, other magic")
    }

    @Test func hexRoundTrip() {
        #expect(Hex.encode([0, 15, 255]) == "000fff")
        #expect(Hex.decode("000fFF") == [0, 15, 255])
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
    }
}

@Suite("Argument scanner")
struct ArgumentScannerTests {
    @Test func parsesValuesFlagsAndPositionals() throws {
        let a = try ArgumentScanner(["s1", "--uid", "bob", "--headless", "--input=tone:440"], valued: ["uid", "input"], boolean: ["headless"])
        #expect(a["uid"] == "bob")
        #expect(a["input"] == "tone:440")
        #expect(a.has("headless"))
        #expect(a.positionals == ["s1"])
    }

    @Test func rejectsUnknownAndMissing() {
        #expect(throws: ArgumentScanner.UsageError("unknown option --nope")) { try ArgumentScanner(["--nope"], valued: [], boolean: []) }
        #expect(throws: ArgumentScanner.UsageError("option --uid needs a value")) { try ArgumentScanner(["--uid"], valued: ["uid"], boolean: []) }
        #expect(throws: ArgumentScanner.UsageError("option --x takes no value")) { try ArgumentScanner(["--x=1"], valued: [], boolean: ["x"]) }
    }

    @Test func hostPort() throws {
        #expect(try ArgumentScanner.hostPort("127.0.0.1:0") == ("127.0.0.1", 0))
        #expect(throws: ArgumentScanner.UsageError.self) { try ArgumentScanner.hostPort("localhost") }
        #expect(throws: ArgumentScanner.UsageError.self) { try ArgumentScanner.hostPort(":80") }
        #expect(throws: ArgumentScanner.UsageError.self) { try ArgumentScanner.hostPort("h:70000") }
    }
}

@Suite("Network impairment")
struct NetworkImpairmentTests {
    @Test func parsesSpecs() throws {
        #expect(try NetworkImpairment(spec: "loss=5,jitter=30") == NetworkImpairment(lossPercent: 5, jitterMs: 30, seed: 1))
        #expect(try NetworkImpairment(spec: "jitter=10,seed=9,loss=0.5") == NetworkImpairment(lossPercent: 0.5, jitterMs: 10, seed: 9))
        for bad in ["loss=101", "loss=-1", "jitter=x", "seed=-3", "speed=5", "loss"] {
            #expect(throws: ArgumentScanner.UsageError.self, "\(bad)") { try NetworkImpairment(spec: bad) }
        }
    }

    @Test func seededGeneratorIsDeterministic() {
        var a = SplitMix64(seed: 42), b = SplitMix64(seed: 42), c = SplitMix64(seed: 43)
        let xs = (0..<5).map { _ in a.next() }
        #expect(xs == (0..<5).map { _ in b.next() })
        #expect(xs != (0..<5).map { _ in c.next() })
    }
}
