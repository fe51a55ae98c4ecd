import CallsCore
import CometChatCallsSDK
import CometChatSDK
import Foundation

/// The headless ringing client behind `callroom call` and `callroom listen`: logs in on both
/// sides (chat: presence; calls: sessions), prints every call callback as a JSON line, answers
/// as told, and joins an accepted call as `callroom join --headless` does.
///
/// Thread rules: main queue only (the SDKs' callback queue).
@MainActor
final class RingAgent: CometChatCallDelegate {
    enum Answer { case accept, reject, busy, none }

    private let options: SDKSetup.Options
    private let settings: SessionSettingsBuilder
    private let answer: Answer
    private var current: String?
    private var joined = false
    private var signals: [DispatchSourceSignal] = []
    private static var retained: RingAgent?

    init(options: SDKSetup.Options, settings: SessionSettingsBuilder, answer: Answer) {
        self.options = options
        self.settings = settings
        self.answer = answer
        Self.retained = self
    }

    // MARK: Start

    private func login() async {
        do throws(CometChatCallException) {
            let user = try await SDKSetup.initAndLogin(options)
            guard let calls = CometChatCalls.appSettings else { throw CometChatCallException(errorCode: "INIT_ERROR", errorDescription: "not initialised") }
            do { try CometChat.initialize(calls) } catch { Console.fail("\(error.errorCode): \(error.errorDescription)", code: ExitCode.failure) }
            let token = user.authToken
            let online: Result<User, CometChatException> = await withCheckedContinuation { cont in
                CometChat.login(authToken: token, onSuccess: { cont.resume(returning: .success($0)) },
                                onError: { cont.resume(returning: .failure($0)) })
            }
            switch online {
            case .success(let u): emit("login", ["uid": u.uid, "name": u.name])
            case .failure(let e): Console.fail("\(e.errorCode): \(e.errorDescription)", code: ExitCode.failure)
            }
        } catch {
            Console.fail("\(error.errorCode): \(error.errorDescription)", code: ExitCode.failure)
        }
        CometChat.addCallListener("callroom", self)
        signals = SignalLeave.install({ [weak self] in self?.hangUp() }, giveUp: {})
    }

    func call(_ call: Call, timeout: Int) async {
        await login()
        CometChat.initiateCall(call: call, timeout: timeout, onSuccess: { [weak self] outgoing in
            self?.current = outgoing.sessionID
            self?.emit("initiateCall", call: outgoing)
        }, onError: { [weak self] e in self?.failed("initiateCall", e) })
    }

    func listen() async {
        await login()
        emit("listening", [:])
    }

    // MARK: CometChatCallDelegate

    nonisolated func onIncomingCallReceived(incomingCall: Call?, error: CometChatException?) {
        guard let call = incomingCall else { return }
        MainActor.assumeIsolated { incoming(call) }
    }

    nonisolated func onOutgoingCallAccepted(acceptedCall: Call, error: CometChatException?) {
        MainActor.assumeIsolated {
            emit("onOutgoingCallAccepted", call: acceptedCall, listener: true)
            join(acceptedCall.sessionID)
        }
    }

    nonisolated func onOutgoingCallRejected(rejectedCall: Call?, error: CometChatException?) {
        MainActor.assumeIsolated {
            emit("onOutgoingCallRejected", call: rejectedCall, listener: true)
            exit(RingCommand.notConnected)
        }
    }

    nonisolated func onIncomingCallCancelled(canceledCall: Call?, error: CometChatException?) {
        MainActor.assumeIsolated {
            emit("onIncomingCallCancelled", call: canceledCall, listener: true)
            if answer == .accept && current == canceledCall?.sessionID { exit(RingCommand.notConnected) }
        }
    }

    nonisolated func onCallEndedMessageReceived(endedCall: Call?, error: CometChatException?) {
        MainActor.assumeIsolated {
            emit("onCallEndedMessageReceived", call: endedCall, listener: true)
            if joined { CallSession.shared.leaveSession() } else { exit(ExitCode.ok) }
        }
    }

    // MARK: Answering, joining, ending

    private func incoming(_ call: Call) {
        emit("onIncomingCallReceived", call: call, listener: true)
        switch answer {
        case .none: return
        case .accept:
            guard current == nil else { return }
            current = call.sessionID
            CometChat.acceptCall(sessionID: call.sessionID, onSuccess: { [weak self] accepted in
                self?.emit("acceptCall", call: accepted)
                self?.join(accepted.sessionID)
            }, onError: { [weak self] e in self?.failed("acceptCall", e) })
        case .reject, .busy:
            CometChat.rejectCall(sessionID: call.sessionID, status: answer == .busy ? .busy : .rejected, onSuccess: { [weak self] r in
                self?.emit("rejectCall", call: r)
            }, onError: { [weak self] e in self?.report("rejectCall", e) })
        }
    }

    private func join(_ sessionID: String) {
        guard !joined else { return }
        joined = true
        let built = settings.setSessionType(.voice).build()
        let options = options
        Task { @MainActor in
            // The session's callbacks are printed too; when it ends, so does the call.
            await HeadlessSession.run(options: options, sessionID: sessionID, settings: built, loggedIn: true, cleanup: { [weak self] in
                self?.endCall(sessionID)
            })
        }
    }

    /// Ends the call on the chat side after the session ended (blocks briefly: the process exits next).
    private func endCall(_ sessionID: String) {
        guard CometChat.getActiveCall()?.sessionID == sessionID || current == sessionID else { return }
        let done = DispatchSemaphore(value: 0)
        CometChat.endCall(sessionID: sessionID, onSuccess: { _ in done.signal() }, onError: { _ in done.signal() })
        // The handlers run on main, which this waits on: wait for the request only, not its answer.
        _ = done.wait(timeout: .now() + 0.2)
    }

    /// SIGINT/SIGTERM: cancel a call still ringing, or leave (and so end) the one in progress.
    private func hangUp() {
        if joined { return CallSession.shared.leaveSession() }
        guard let sid = current else { exit(ExitCode.ok) }
        CometChat.rejectCall(sessionID: sid, status: .cancelled, onSuccess: { [weak self] c in
            self?.emit("rejectCall", call: c)
            exit(RingCommand.notConnected)
        }, onError: { _ in exit(RingCommand.notConnected) })
    }

    // MARK: Output

    private func emit(_ event: String, call: Call?, listener: Bool = false) {
        var d: [String: Any] = [:]
        if let call { d["call"] = Self.json(call) }
        emit(event, d, listener: listener)
    }

    private func emit(_ event: String, _ fields: [String: Any], listener: Bool = false) {
        var d = fields
        d["ts"] = ISO8601DateFormatter.string(from: Date(), timeZone: .gmt, formatOptions: [.withInternetDateTime, .withFractionalSeconds])
        d["event"] = event
        if listener { d["listener"] = "CometChatCallDelegate" }
        guard let data = try? JSONSerialization.data(withJSONObject: d, options: [.sortedKeys, .withoutEscapingSlashes]) else { return }
        Console.out(String(decoding: data, as: UTF8.self))
    }

    private func report(_ event: String, _ e: CometChatException?) {
        emit(event, ["error": ["code": e?.errorCode ?? "?", "message": e?.errorDescription ?? ""]])
    }

    private func failed(_ event: String, _ e: CometChatException?) {
        report(event, e)
        exit(ExitCode.failure)
    }

    static func json(_ c: Call) -> [String: Any] {
        var d: [String: Any] = ["sessionId": c.sessionID, "status": c.callStatus.rawValue, "type": c.callType.rawValue,
                                "receiverType": c.receiverType.rawValue, "receiver": c.receiverUid]
        if let i = c.callInitiator as? User { d["initiator"] = ["uid": i.uid, "name": i.name] }
        if !c.memberOutcomes.isEmpty { d["members"] = c.memberOutcomes }
        return d
    }
}
