import CallsTransport
import CallsCore
import CometChatCallsSDK
import Foundation

/// The chat side of CallRoom: who you are online, and ringing calls (initiate, accept,
/// reject, end). The documented order works as written: `CometChat.initFromSettings` →
/// `CometChat.login` → `CometChatCalls` init and login → `addCallListener` → `initiateCall`;
/// once a call is accepted both ends join the session `call.sessionID` with `CometChatCalls`.
///
/// Thread rules: every method may be called from any thread. Completion handlers and listener
/// callbacks run on the callback queue (main unless the settings say otherwise); because the
/// documented handlers are not `@Sendable`, call these methods from that queue.
public enum CometChat {
    public enum CallType: String, Sendable { case audio, video }
    public enum ReceiverType: String, Sendable { case user, group }
    /// A call's status (the vendor's lower-case name).
    public enum callStatus: String, Sendable {
        case initiated, ongoing, ended, unanswered, rejected, busy, cancelled

        init(_ s: CallsCore.CallStatus) { self = callStatus(rawValue: s.rawValue) ?? .initiated }
    }

    struct State: Sendable {
        var settings: CallAppSettings?
        var serverURL: URL?
        var user: User?
        var authToken: String?
        var connection: ChatConnection?
        var listeners: [String: WeakListener] = [:]
        var connectionListeners: [String: WeakListener] = [:]
        var activeCall: Call?
    }

    /// A listener held weakly (the documented `add…Listener` calls do not retain); read back
    /// as its protocol (`object as? any …Delegate`).
    /// Unchecked: `object` is set once at init; a weak load is atomic in the Swift runtime.
    final class WeakListener: @unchecked Sendable { weak var object: AnyObject?; init(_ o: AnyObject) { object = o } }

    static let state = Locked<State>(State())

    // MARK: Init and login

    /// Initialises from `cometchat-settings.json` (the same file and search order as
    /// `CometChatCalls.initFromSettings`).
    public static func initFromSettings(path: String? = nil, onSuccess: @escaping (Bool) -> Void,
                                        onError: @escaping (CometChatException?) -> Void) {
        let box = Handlers<Bool>(success: onSuccess, failure: { onError($0) })
        do throws(CometChatCallException) {
            let settings = try SettingsFile.load(path: path)
            let url = try settings.resolvedServerURL()
            state.withLock { $0.settings = settings; $0.serverURL = url }
            settings.callbackQueue.async { box.success(true) }
        } catch {
            let e = CometChatException(errorCode: error.errorCode, errorDescription: error.errorDescription)
            DispatchQueue.main.async { box.failure(e) }
        }
    }

    /// Initialises from built settings (the calls SDK's `CallAppSettingsBuilder`).
    public static func initialize(_ settings: CallAppSettings) throws(CometChatException) {
        do throws(CometChatCallException) {
            let url = try settings.resolvedServerURL()
            state.withLock { $0.settings = settings; $0.serverURL = url }
        } catch {
            throw CometChatException(errorCode: error.errorCode, errorDescription: error.errorDescription)
        }
    }

    /// Logs in with the app's auth key (development servers may create the user).
    public static func login(UID: String, authKey: String, onSuccess: @escaping (User) -> Void, onError: @escaping (CometChatException) -> Void) {
        authenticate(onSuccess: onSuccess, onError: onError) { (rest) async throws(CometChatCallException) in
            struct Body: Decodable, Sendable { var uid: String; var name: String; var avatar: String?; var authToken: String }
            let b = try await rest.call("POST", "/v3/sdk/login", body: ["uid": UID, "authKey": authKey], as: Body.self)
            return (User(uid: b.uid, name: b.name, avatar: b.avatar), b.authToken)
        }
    }

    /// Logs in with an auth token from your backend.
    public static func login(authToken: String, onSuccess: @escaping (User) -> Void, onError: @escaping (CometChatException) -> Void) {
        authenticate(onSuccess: onSuccess, onError: onError) { (rest) async throws(CometChatCallException) in
            struct Body: Decodable, Sendable { var uid: String; var name: String; var avatar: String? }
            let b = try await rest.call("GET", "/v3/me", headers: ["authToken": authToken], as: Body.self)
            return (User(uid: b.uid, name: b.name, avatar: b.avatar), authToken)
        }
    }

    /// Goes offline (the connection closes; ringing stops reaching this process).
    public static func logout(onSuccess: @escaping (String) -> Void, onError: @escaping (CometChatException) -> Void) {
        let (connection, queue) = state.withLock { s -> (ChatConnection?, DispatchQueue) in
            let c = s.connection
            s.connection = nil
            s.user = nil
            s.authToken = nil
            s.activeCall = nil
            return (c, s.settings?.callbackQueue ?? .main)
        }
        connection?.close()
        let box = Handlers<String>(success: onSuccess, failure: onError)
        queue.async { box.success("logged out") }
    }

    public static func getLoggedInUser() -> User? { state.withLock { $0.user } }

    private static func authenticate(onSuccess: @escaping (User) -> Void, onError: @escaping (CometChatException) -> Void,
                                     _ body: @escaping @Sendable (RESTClient) async throws(CometChatCallException) -> (User, String)) {
        let (url, settings) = state.withLock { ($0.serverURL, $0.settings) }
        let queue = settings?.callbackQueue ?? .main
        let deliver = Deliver(queue: queue)
        let box = Handlers(success: onSuccess, failure: onError)
        guard let url, let settings else {
            return deliver { box.failure(CometChatException(errorCode: CometChatException.notInitialized, errorDescription: "Call CometChat.initFromSettings first.")) }
        }
        let rest = RESTClient(baseURL: url, appID: settings.appID, trust: settings.trust)
        Task {
            do throws(CometChatCallException) {
                let (user, token) = try await body(rest)
                let connection = ChatConnection(url: url, trust: settings.trust)
                connection.onCall = { kind, call in dispatch(kind, call) }
                connection.onState = { change in dispatchConnection(change) }
                connection.open(authToken: token) { result in
                    switch result {
                    case .success:
                        let old = state.withLock { s -> ChatConnection? in
                            let o = s.connection
                            s.connection = connection
                            s.user = user
                            s.authToken = token
                            return o
                        }
                        old?.close()
                        deliver { box.success(user) }
                    case .failure(let e):
                        deliver { box.failure(e) }
                    }
                }
            } catch {
                let e = CometChatException(errorCode: error.errorCode, errorDescription: error.errorDescription)
                deliver { box.failure(e) }
            }
        }
    }

    // MARK: Listeners

    public static func addCallListener(_ id: String, _ delegate: any CometChatCallDelegate) {
        state.withLock { $0.listeners[id] = WeakListener(delegate) }
    }

    public static func removeCallListener(_ id: String) { state.withLock { $0.listeners[id] = nil } }

    /// Hears the chat connection's losses and reconnects (held weakly, like call listeners).
    public static func addConnectionListener(_ id: String, _ delegate: any CometChatConnectionDelegate) {
        state.withLock { $0.connectionListeners[id] = WeakListener(delegate) }
    }

    public static func removeConnectionListener(_ id: String) { state.withLock { $0.connectionListeners[id] = nil } }

    /// A change of the chat connection: tell the connection listeners (from the connection's queue).
    static func dispatchConnection(_ change: ChatConnectionState) {
        let (listeners, queue) = state.withLock { s in (s.connectionListeners.values.compactMap { $0.object as? any CometChatConnectionDelegate }, s.settings?.callbackQueue ?? .main) }
        let box = UncheckedBox(listeners)
        queue.async {
            for l in box.value {
                switch change {
                case .disconnected: l.disconnected()
                case .connecting: l.connecting()
                case .connected: l.connected()
                case .failed(let e): l.onConnectionError(error: e)
                }
            }
        }
    }

    /// The call you are in (accepted, not yet ended), if any.
    public static func getActiveCall() -> Call? { state.withLock { $0.activeCall } }

    // MARK: Calls

    /// Rings `call`'s receiver for `timeout` seconds (default 45); `onSuccess` gets the call with
    /// its session id once it rings. What happens next arrives through the call listener.
    public static func initiateCall(call: Call, timeout: Int = 45, onSuccess: @escaping (Call) -> Void,
                                    onError: @escaping (CometChatException?) -> Void) {
        send(.initiateCall(receiverId: call.receiverUid, receiverType: call.receiverType == .group ? .group : .user,
                           type: call.callType == .video ? .video : .audio, timeoutSeconds: timeout),
             expect: .initiated, onSuccess: onSuccess, onError: { onError($0) })
    }

    /// Answers a ringing call; then join `sessionID` with `CometChatCalls`.
    public static func acceptCall(sessionID: String, onSuccess: @escaping (Call) -> Void, onError: @escaping (CometChatException?) -> Void) {
        send(.acceptCall(sessionId: sessionID), expect: .event(.accepted, sessionId: sessionID), onSuccess: { call in
            state.withLock { $0.activeCall = call }
            onSuccess(call)
        }, onError: { onError($0) })
    }

    /// Declines a ringing call (`.rejected`, `.busy`), or, as its caller, cancels it (`.cancelled`).
    public static func rejectCall(sessionID: String, status: callStatus, onSuccess: @escaping (Call) -> Void,
                                  onError: @escaping (CometChatException?) -> Void) {
        let wire: CallsCore.CallStatus = status == .busy ? .busy : status == .cancelled ? .cancelled : .rejected
        let answer: CallEventKind = status == .busy ? .busy : status == .cancelled ? .cancelled : .rejected
        send(.rejectCall(sessionId: sessionID, status: wire), expect: .event(answer, sessionId: sessionID),
             onSuccess: onSuccess, onError: { onError($0) })
    }

    /// Ends an accepted call for everyone (in a group, the caller ends it; a member leaves it).
    /// Leave the session too (`CallSession.shared.leaveSession()`).
    public static func endCall(sessionID: String, onSuccess: @escaping (Call?) -> Void, onError: @escaping (CometChatException?) -> Void) {
        send(.endCall(sessionId: sessionID), expect: .event(.ended, sessionId: sessionID), onSuccess: { call in
            ended(sessionID)
            onSuccess(call)
        }, onError: { onError($0) })
    }

    /// The server ended call `sessionID` at our request: it is no longer the active call.
    private static func ended(_ sessionID: String) {
        state.withLock { s in if s.activeCall?.sessionID == sessionID { s.activeCall = nil } }
    }

    /// `endCall` for a process about to exit on the callback queue's thread, which cannot wait
    /// for `endCall`'s callbacks there: waits up to `timeout` seconds for the server's answer
    /// (delivered on the connection's own queue). True when it answered — the other side has
    /// been told — false when it did not in time, or there is no connection. Any thread but the
    /// connection's.
    package static func endCallAndWait(sessionID: String, timeout: Double) -> Bool {
        guard let connection = state.withLock({ $0.connection }) else { return false }
        let answered = DispatchSemaphore(value: 0)
        connection.request(.endCall(sessionId: sessionID), expect: .event(.ended, sessionId: sessionID)) { result in
            if case .success = result { ended(sessionID) }
            answered.signal()
        }
        return answered.wait(timeout: .now() + timeout) == .success
    }

    private static func send(_ m: ClientMessage, expect: ChatConnection.Expect, onSuccess: @escaping (Call) -> Void,
                             onError: @escaping (CometChatException) -> Void) {
        let (connection, queue) = state.withLock { ($0.connection, $0.settings?.callbackQueue ?? .main) }
        let deliver = Deliver(queue: queue)
        let box = Handlers(success: onSuccess, failure: onError)
        guard let connection else {
            return deliver { box.failure(CometChatException(errorCode: CometChatException.notLoggedIn, errorDescription: "Log in first (CometChat.login).")) }
        }
        connection.request(m, expect: expect) { result in
            switch result {
            case .success(.call(_, let wire, _)):
                let call = Call(wire)
                deliver { box.success(call) }
            case .success: break
            case .failure(let e): deliver { box.failure(e) }
            }
        }
    }

    // MARK: Events to listeners

    /// A `call` message nobody was waiting for: tell the listeners (on the connection's queue).
    static func dispatch(_ kind: CallEventKind, _ wire: WireCall) {
        let call = Call(wire)
        let (me, listeners, queue) = state.withLock { s -> (String?, [any CometChatCallDelegate], DispatchQueue) in
            if kind == .accepted, s.user.map({ $0.uid == wire.initiator.id }) == true { s.activeCall = call }
            if kind == .ended, s.activeCall?.sessionID == wire.sessionId { s.activeCall = nil }
            return (s.user?.uid, s.listeners.values.compactMap { $0.object as? any CometChatCallDelegate }, s.settings?.callbackQueue ?? .main)
        }
        let mine = me == wire.initiator.id
        let box = UncheckedBox(listeners)
        queue.async {
            for l in box.value {
                switch kind {
                case .incoming: l.onIncomingCallReceived(incomingCall: call, error: nil)
                case .accepted: if mine { l.onOutgoingCallAccepted(acceptedCall: call, error: nil) }
                case .rejected, .busy: if mine { l.onOutgoingCallRejected(rejectedCall: call, error: nil) }
                case .unanswered:
                    if mine { l.onOutgoingCallRejected(rejectedCall: call, error: nil) } else { l.onIncomingCallCancelled(canceledCall: call, error: nil) }
                case .cancelled: if !mine { l.onIncomingCallCancelled(canceledCall: call, error: nil) }
                case .ended: l.onCallEndedMessageReceived(endedCall: call, error: nil)
                case .initiated: break
                }
            }
        }
    }
}

/// Documented-style handlers are not `@Sendable`; they are only ever called on the callback
/// queue they were given for (the thread rule above), which these boxes carry them to.
struct Handlers<T>: Sendable {
    private let box: UncheckedBox<(success: (T) -> Void, failure: (CometChatException) -> Void)>
    init(success: @escaping (T) -> Void, failure: @escaping (CometChatException) -> Void) { box = UncheckedBox((success, failure)) }
    func success(_ value: T) { box.value.success(value) }
    func failure(_ error: CometChatException) { box.value.failure(error) }
}

/// Runs a closure on the callback queue.
struct Deliver: Sendable {
    let queue: DispatchQueue
    func callAsFunction(_ body: @escaping @Sendable () -> Void) { queue.async(execute: body) }
}
