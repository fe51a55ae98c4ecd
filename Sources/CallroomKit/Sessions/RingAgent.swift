import CallsCore
import CallsTUI
import CometChatCallsSDK
import CometChatSDK
import Foundation

/// The ringing client behind `callroom call` and `callroom listen`: logs in on both sides
/// (chat: presence; calls: sessions) and follows each call. Headless, every call callback is a
/// JSON line and answers are automatic (`--auto-accept`, …); on the screen, `RingScreen` shows
/// the idle, incoming and outgoing states and the keys answer, and an accepted call opens the
/// call screen (after which `listen` returns to the idle screen).
///
/// Thread rules: main queue only (the SDKs' callback queue).
@MainActor
package final class RingAgent: CometChatCallDelegate, CometChatConnectionDelegate {
    package enum Answer { case accept, reject, busy, none }

    private let options: SDKSetup.Options
    private let settings: SessionSettingsBuilder
    private let answer: Answer
    /// nil: headless.
    private var screen: RingScreen?
    private let listening: Bool
    private var me: User?
    /// The call this process is ringing, answering or in.
    private var current: Call?
    private var joined = false
    /// Watches a 1:1 call's roster for the other person leaving (nil outside one).
    private var peerWatch: PeerDepartureWatch?
    /// The other person's name in a one-to-one call (nil in a group call, or outside one).
    private var peerName: String?
    /// Why the chat connection is down (nil: up): the idle screen says offline meanwhile.
    private var offline: String?
    private static var retained: RingAgent?
    /// Runs before the process exits on quit (the demo stops its server).
    package var onExit: (@MainActor () -> Void)?

    package init(options: SDKSetup.Options, settings: SessionSettingsBuilder, answer: Answer, screen: Bool, listening: Bool) throws(TerminalError) {
        self.options = options
        self.settings = settings
        self.answer = answer
        self.listening = listening
        if screen { self.screen = RingScreen(driver: try NcursesTerminal(), state: .connecting(options.uid)) }
        Self.retained = self
    }

    // MARK: Start

    private func login() async {
        if let s = screen {
            s.onAction = { [weak self] a in self?.act(a) }
            s.start()
        }
        do throws(CometChatCallException) {
            let user = try await SDKSetup.initAndLogin(options)
            guard let calls = CometChatCalls.appSettings else { throw CometChatCallException(errorCode: "INIT_ERROR", errorDescription: "not initialised") }
            do { try CometChat.initialize(calls) } catch { fail("\(error.errorCode): \(error.errorDescription)") }
            let token = user.authToken
            let online: Result<User, CometChatException> = await withCheckedContinuation { cont in
                CometChat.login(authToken: token, onSuccess: { cont.resume(returning: .success($0)) },
                                onError: { cont.resume(returning: .failure($0)) })
            }
            switch online {
            case .success(let u):
                me = u
                emit("login", ["uid": u.uid, "name": u.name])
            case .failure(let e): fail("\(e.errorCode): \(e.errorDescription)")
            }
        } catch {
            fail("\(error.errorCode): \(error.errorDescription)")
        }
        CometChat.addCallListener("callroom", self)
        CometChat.addConnectionListener("callroom", self)
        armSignals()
    }

    /// SIGINT, SIGTERM and SIGHUP (a closed SSH connection) on the ringing screens: cancel a call
    /// ringing out, leave a call, go offline — and exit. The call screen sets its own while open.
    private func armSignals() {
        TerminationSignals.onSignal = { [weak self] _ in self?.hangUp() }
        TerminationSignals.beforeForcedExit = { [weak self] in self?.screen?.stop(); self?.onExit?() }
        // Headless, nobody reading stdout any more: the same as a signal (a session, once
        // joined, handles it itself).
        if screen == nil { Console.onOutputClosed = { [weak self] in self?.hangUp() } }
    }

    package func call(_ call: Call, timeout: Int) async {
        await login()
        let started = Date()
        screen?.show(.outgoing(to: call.receiverUid, type: call.callType.rawValue, since: started))
        CometChat.initiateCall(call: call, timeout: timeout, onSuccess: { [weak self] outgoing in
            self?.current = outgoing
            self?.emit("initiateCall", call: outgoing)
            let name = (outgoing.callReceiver as? User)?.name ?? (outgoing.callReceiver as? Group)?.name ?? outgoing.receiverUid
            self?.screen?.show(.outgoing(to: name, type: outgoing.callType.rawValue, since: started))
        }, onError: { [weak self] e in self?.failed("initiateCall", e) })
    }

    /// Stays online; `ready` runs once logged in (the demo's caller dials then).
    package func listen(ready: (@MainActor () -> Void)? = nil) async {
        await login()
        ready?()
        emit("listening", [:])
        showIdle(note: nil)
    }

    private func showIdle(note: String?) {
        guard let me else { return }
        if let offline { return screen?.show(.offline(name: me.name, uid: me.uid, note: offline)) ?? () }
        screen?.show(.idle(name: me.name, uid: me.uid, note: note))
    }

    // MARK: CometChatCallDelegate

    package nonisolated func onIncomingCallReceived(incomingCall: Call?, error: CometChatException?) {
        guard let call = incomingCall else { return }
        MainActor.assumeIsolated { incoming(call) }
    }

    package nonisolated func onOutgoingCallAccepted(acceptedCall: Call, error: CometChatException?) {
        MainActor.assumeIsolated {
            emit("onOutgoingCallAccepted", call: acceptedCall, listener: true)
            join(acceptedCall)
        }
    }

    package nonisolated func onOutgoingCallRejected(rejectedCall: Call?, error: CometChatException?) {
        MainActor.assumeIsolated {
            emit("onOutgoingCallRejected", call: rejectedCall, listener: true)
            let who = rejectedCall?.receiverUid ?? "they"
            let why: String
            switch rejectedCall?.callStatus {
            case .busy?: why = "\(who) is busy"
            case .unanswered?: why = "\(who) did not answer"
            default: why = "\(who) declined the call"
            }
            finishOutgoing(why, code: RingCommand.notConnected)
        }
    }

    package nonisolated func onIncomingCallCancelled(canceledCall: Call?, error: CometChatException?) {
        MainActor.assumeIsolated {
            emit("onIncomingCallCancelled", call: canceledCall, listener: true)
            guard canceledCall?.sessionID == current?.sessionID || current == nil else { return }
            let from = canceledCall?.callInitiator?.name ?? "someone"
            current = nil
            if screen == nil, answer == .accept { ProcessExit.now(RingCommand.notConnected) }
            let note = canceledCall?.memberOutcomes[me?.uid ?? ""] == "accepted" ? "answered on another device" : "missed call from \(from)"
            showIdle(note: note)
        }
    }

    package nonisolated func onCallEndedMessageReceived(endedCall: Call?, error: CometChatException?) {
        MainActor.assumeIsolated {
            emit("onCallEndedMessageReceived", call: endedCall, listener: true)
            if joined { leave(because: .endedBy(peerName)) } else if screen == nil { ProcessExit.now(ExitCode.ok) }
        }
    }

    // MARK: CometChatConnectionDelegate (the chat connection reconnects by itself)

    package nonisolated func disconnected() {
        MainActor.assumeIsolated {
            emit("disconnected", [:], connection: true)
            offline = "connection lost: reconnecting…"
            if current == nil { showIdle(note: nil) }
        }
    }

    package nonisolated func connecting() { MainActor.assumeIsolated { emit("connecting", [:], connection: true) } }

    package nonisolated func connected() {
        MainActor.assumeIsolated {
            emit("connected", [:], connection: true)
            offline = nil
            if current == nil { showIdle(note: "back online") }
        }
    }

    package nonisolated func onConnectionError(error: CometChatException) {
        MainActor.assumeIsolated {
            report("onConnectionError", error)
            offline = "refused: \(error.errorCode) — quit and log in again"
            if current == nil { showIdle(note: nil) }
        }
    }

    // MARK: Answering, joining, ending

    private func incoming(_ call: Call) {
        emit("onIncomingCallReceived", call: call, listener: true)
        if let screen {
            guard current == nil else { return }  // already on a call: it keeps ringing elsewhere
            current = call
            let group = (call.callReceiver as? Group)?.name
            screen.show(.incoming(from: call.callInitiator?.name ?? "?", type: call.callType.rawValue, group: group, since: Date()))
            Notifier.ring("Incoming \(call.callType.rawValue) call from \(call.callInitiator?.name ?? "?")")
            return
        }
        switch answer {
        case .none: return
        case .accept:
            guard current == nil else { return }
            current = call
            accept(call)
        case .reject, .busy:
            decline(call, busy: answer == .busy)
        }
    }

    private func accept(_ call: Call) {
        CometChat.acceptCall(sessionID: call.sessionID, onSuccess: { [weak self] accepted in
            self?.emit("acceptCall", call: accepted)
            self?.join(accepted)
        }, onError: { [weak self] e in
            guard let self else { return }
            if self.screen != nil {
                self.current = nil
                self.showIdle(note: "could not answer: \(e?.errorCode ?? "?")")
            } else {
                self.failed("acceptCall", e)
            }
        })
    }

    private func decline(_ call: Call, busy: Bool) {
        CometChat.rejectCall(sessionID: call.sessionID, status: busy ? .busy : .rejected, onSuccess: { [weak self] r in
            self?.emit("rejectCall", call: r)
        }, onError: { [weak self] e in self?.report("rejectCall", e) })
    }

    /// A key (or a click) on the ringing screen.
    private func act(_ a: RingScreen.Action) {
        switch a {
        case .accept: if let c = current { accept(c) }
        case .reject, .busy:
            if let c = current { decline(c, busy: a == .busy) }
            current = nil
            showIdle(note: a == .busy ? "answered busy" : "declined")
        case .cancel, .quit: hangUp()
        case .history: showHistory()
        case .back: showIdle(note: nil)
        }
    }

    private func join(_ call: Call) {
        guard !joined else { return }
        joined = true
        current = call
        watchPeer(in: call)
        let sessionID = call.sessionID
        let built = settings.setSessionType(call.callType == .video ? .video : .voice).build()
        let options = options
        let peer = call.callInitiator.flatMap { ($0 as? User)?.uid == me?.uid ? nil : $0.name }
            ?? (call.callReceiver as? User)?.name ?? call.receiverUid
        peerName = call.receiverType == .user ? peer : nil
        if let screen {
            screen.stop()
            Task { @MainActor in
                // Leaving ends the call for the other side at once, not when the summary goes.
                await CallScreenApp.run(options: options, sessionID: sessionID, settings: built, title: "call with \(peer)", loggedIn: true,
                                        cleanup: nil, beforeLeaving: { [weak self] leave in self?.endCall(sessionID, thenLeave: leave) },
                                        sessionOver: { [weak self] in
                                            guard self?.endedHere != sessionID else { return }
                                            CometChat.endCall(sessionID: sessionID, onSuccess: { _ in }, onError: { _ in })
                                        },
                                        finished: { [weak self] code, summary in
                                            self?.callFinished(sessionID, peer: peer, code: code, summary: summary)
                                        })
            }
            return
        }
        Task { @MainActor in
            // The session's callbacks are printed too; when it ends, so does the call. `listen`
            // stays in the call until it ends (either side hangs up, a signal, a `leave` line):
            // the end of its input leaves nothing — `listen --auto-accept < /dev/null`, as a
            // script or a service runs it, answered and hung up at once. (`call` hangs up there.)
            await HeadlessSession.run(options: options, sessionID: sessionID, settings: built, loggedIn: true,
                                      inputEndLeaves: !listening,
                                      beforeLeaving: { [weak self] leave in self?.endCall(sessionID, thenLeave: leave) }, cleanup: { [weak self] in
                self?.endCall(sessionID)
                self?.onExit?()
            })
        }
    }

    /// In a call between two people, the other one gone ends it here too (`PeerDepartureWatch`).
    private func watchPeer(in call: Call) {
        if let w = peerWatch { CallSession.shared.removeParticipantEventListener(w) }
        peerWatch = nil
        guard call.receiverType == .user, let uid = me?.uid else { return }
        let w = PeerDepartureWatch(myUID: uid) { [weak self] in
            guard let self, self.joined else { return }
            self.emit("peerGone", ["sessionId": call.sessionID])
            self.leave(because: .peerLeft(self.peerName))
        }
        CallSession.shared.addParticipantEventListener(w)
        peerWatch = w
    }

    /// Leaves the call because of something this side knows (the other person hung up), so the
    /// summary says that and not "You left".
    private func leave(because ending: SessionEnding) {
        if screen != nil { return CallScreenApp.leave(because: ending) }
        HeadlessSession.leave(because: ending)
    }

    /// The call screen closed (the call was ended as the session ended): `listen` goes back to
    /// the ringing screen, `call` prints the summary and exits.
    private func callFinished(_ sessionID: String, peer: String, code: Int32, summary: CallSummary) {
        joined = false
        current = nil
        if let w = peerWatch { CallSession.shared.removeParticipantEventListener(w) }
        peerWatch = nil
        // A signal ended the call: the process ends too (`listen` does not go back online).
        guard listening, TerminationSignals.received == nil else {
            onExit?()
            Console.out(summary.lines.joined(separator: "\n"))
            DispatchQueue.main.asyncAfter(deadline: .now() + 0.3) { ProcessExit.now(code) }
            return
        }
        armSignals()
        do {
            let s = RingScreen(driver: try NcursesTerminal(), state: .connecting(options.uid))
            s.onAction = { [weak self] a in self?.act(a) }
            screen = s
            s.start()
            showIdle(note: "call with \(peer) ended")
        } catch {
            Console.fail(error.message, code: ExitCode.usage)
        }
    }

    /// Ends the call on the chat side after a headless session ended, and waits (up to 2 s) for
    /// the server to answer before the process exits next — so the other side is told even on a
    /// loaded machine (a fixed 0.2 s for the request to leave the socket was sometimes not enough).
    private func endCall(_ sessionID: String) {
        guard endedHere != sessionID else { return }
        _ = CometChat.endCallAndWait(sessionID: sessionID, timeout: 2)
    }

    /// The call this side ended before leaving it (nothing more to end afterwards).
    private var endedHere: String?

    /// You hang up: the call is ended on the chat side first (its answer awaited off the main
    /// queue, at most 1 s), then `leave` leaves the session — so the other side is told the call
    /// ended (`onCallEndedMessageReceived`) before it sees you go, as the vendor's end button
    /// does; ending after leaving raced their own end on seeing you gone, and they were not told.
    private func endCall(_ sessionID: String, thenLeave leave: @escaping @Sendable @MainActor () -> Void) {
        DispatchQueue.global().async { [weak self] in
            let ended = CometChat.endCallAndWait(sessionID: sessionID, timeout: 1)
            DispatchQueue.main.async {
                MainActor.assumeIsolated {
                    if ended { self?.endedHere = sessionID }
                    leave()
                }
            }
        }
    }

    /// Cancel (a call still ringing out), leave (the call in progress), or quit.
    private func hangUp() {
        if joined { return CallSession.shared.leaveSession() }
        let quit: @MainActor () -> Void = { [weak self] in
            self?.screen?.stop()
            self?.onExit?()
            ProcessExit.now(ExitCode.ok)
        }
        guard let c = current, !listening else {
            // Quitting while a call rings in declines it: the caller hears at once, not at the timeout.
            if listening, let ringing = current {
                return CometChat.rejectCall(sessionID: ringing.sessionID, status: .rejected, onSuccess: { _ in quit() }, onError: { _ in quit() })
            }
            return quit()
        }
        CometChat.rejectCall(sessionID: c.sessionID, status: .cancelled, onSuccess: { [weak self] r in
            self?.emit("rejectCall", call: r)
            self?.finishOutgoing("call cancelled", code: RingCommand.notConnected)
        }, onError: { [weak self] _ in self?.finishOutgoing("call cancelled", code: RingCommand.notConnected) })
    }

    /// An outgoing call that did not connect: say why (on the screen, for a moment), then exit.
    private func finishOutgoing(_ why: String, code: Int32) {
        guard let screen, TerminationSignals.received == nil else {
            screen?.stop()
            onExit?()
            if screen != nil { Console.out("callroom: \(why)") }
            ProcessExit.now(code)
        }
        screen.show(.outcome(why))
        DispatchQueue.main.asyncAfter(deadline: .now() + 2) {
            screen.stop()
            Console.out("callroom: \(why)")
            ProcessExit.now(code)
        }
    }

    private func showHistory() {
        let request = CallLogsRequest.CallLogsBuilder().set(limit: 30).build()
        request.fetchNext(onSuccess: { [weak self] logs in
            let lines = logs.map { log -> String in
                let when = Date(timeIntervalSince1970: TimeInterval(log.initiatedAt))
                let other = log.direction == .outgoing ? log.receiver.name : log.initiator.name
                let arrow = log.direction == .outgoing ? "→" : "←"
                return "\(Self.dateFormat.string(from: when))  \(arrow) \(other)  \(log.type)  \(log.status.rawValue)  \(log.totalDuration)"
            }
            self?.screen?.show(.history(lines))
        }, onError: { [weak self] e in self?.showIdle(note: "history: \(e?.errorCode ?? "?")") })
    }

    private static let dateFormat: DateFormatter = {
        let f = DateFormatter()
        f.dateFormat = "yyyy-MM-dd HH:mm"
        return f
    }()

    // MARK: Output (headless: JSON lines)

    private func emit(_ event: String, call: Call?, listener: Bool = false) {
        var d: [String: Any] = [:]
        if let call { d["call"] = Self.json(call) }
        emit(event, d, listener: listener)
    }

    private func emit(_ event: String, _ fields: [String: Any], listener: Bool = false, connection: Bool = false) {
        guard screen == nil else { return }
        var d = fields
        d["event"] = event
        if listener { d["listener"] = "CometChatCallDelegate" }
        if connection { d["listener"] = "CometChatConnectionDelegate" }
        Console.outJSON(d)
    }

    private func report(_ event: String, _ e: CometChatException?) {
        emit(event, ["error": ["code": e?.errorCode ?? "?", "message": e?.errorDescription ?? ""]])
    }

    private func failed(_ event: String, _ e: CometChatException?) {
        report(event, e)
        fail("\(event): \(e?.errorCode ?? "?") \(e?.errorDescription ?? "")")
    }

    /// Says why on stderr (headless too: a server nobody answers on exited 1 without a word)
    /// and exits 1.
    private func fail(_ message: String) -> Never {
        screen?.stop()
        Console.fail(message, code: ExitCode.failure)
    }

    package static func json(_ c: Call) -> [String: Any] {
        var d: [String: Any] = ["sessionId": c.sessionID, "status": c.callStatus.rawValue, "type": c.callType.rawValue,
                                "receiverType": c.receiverType.rawValue, "receiver": c.receiverUid]
        if let i = c.callInitiator as? User { d["initiator"] = ["uid": i.uid, "name": i.name] }
        if !c.memberOutcomes.isEmpty { d["members"] = c.memberOutcomes }
        return d
    }
}

/// Tells the user a call rings when they may not be looking: a desktop notification where
/// `notify-send` exists, a tmux message inside tmux (the screen itself rings the bell).
package enum Notifier {
    package static func ring(_ text: String) {
        let env = ProcessInfo.processInfo.environment
        if env["TMUX"] != nil { launch("tmux", ["display-message", text]) }
        if env["DISPLAY"] != nil || env["WAYLAND_DISPLAY"] != nil || env["DBUS_SESSION_BUS_ADDRESS"] != nil {
            launch("notify-send", ["--urgency=critical", "CallRoom", text])
        }
    }

    private static func launch(_ tool: String, _ args: [String]) {
        guard let path = ChildProcess.find(tool) else { return }
        ChildProcess.launch(path, args)
    }
}
