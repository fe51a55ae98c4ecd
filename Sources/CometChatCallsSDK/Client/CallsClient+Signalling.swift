import CallsAudio
import CallsCore
import CallsTransport
import Foundation

// MARK: Server messages, reconnection and teardown (on the client's state queue)
extension CallsClient {
    func received(_ bytes: [UInt8], from link: SignalLink) {
        state.async {
            guard link === self.link, let message = try? ServerMessage(json: Data(bytes)) else { return }
            self.handle(message)
        }
    }

    /// A binary frame: one SRTP packet of media over signalling (the WebSocket's thread; no
    /// hop to the state queue per packet — one from an old connection is verified like any).
    func receivedMedia(_ bytes: [UInt8], from link: SignalLink) {
        mediaPath.withLock { $0.engine }?.receiveTunnelled(bytes)
    }

    /// No UDP got through to the relay: media goes over the signalling connection from now on.
    func udpBlocked() {
        dispatchPrecondition(condition: .onQueue(state))
        guard phase == .joined || phase == .reconnecting, !mediaOverSignalling, let engine else { return }
        mediaOverSignalling = true
        engine.setTunnel { [weak self] bytes in self?.mediaPath.withLock { $0.socket }?.send(bytes, binary: true) }
        socket?.send(text: ClientMessage.setMediaOverSignalling(true).json())
        let notice = "No UDP reached the media relay within 2.5 s (blocked?): media now goes over the signalling connection"
        published.withLock { $0.notices.append(notice) }
        emit(.audioNotice(notice))
        emit(.mediaTransportChanged(transport: .signalling))
    }

    func closed(_ error: WebSocketClientError?, from link: SignalLink) {
        state.async {
            guard link === self.link else { return }
            self.feed(.closed(reason: error.map { "\($0)" } ?? "closed"))
        }
    }

    func failJoin(_ e: CometChatCallException) {
        engine?.stop()
        engine = nil
        dropSocket()
        _ = connection.handle(.joinFailed, at: monotonicNanoseconds())
        joinContinuation?.resume(throwing: e)
        joinContinuation = nil
    }

    private func dropSocket() {
        let s = socket
        socket = nil
        link = nil
        DispatchQueue.global().async { s?.disconnect() }
    }

    func participant(_ w: WireParticipant, joined: Bool = true) -> Participant {
        var p = Participant(w, sessionId: sessionID, joined: joined, leftAt: joined ? nil : epochMilliseconds())
        if !joined { p.state = "left" }
        return p
    }

    @discardableResult
    func publishRoster() -> [Participant] {
        let roster = rosterOrder.compactMap { rosterByPID[$0] }.map { participant($0) }
        engine?.setActiveSSRCs(Set(rosterByPID.values.map(\.ssrc)))
        published.withLock { $0.roster = roster }
        return roster
    }

    private func adopt(_ j: ServerMessage.Joined) {
        sessionID = j.sessionId
        me = j.you
        rosterOrder = j.participants.map(\.pid)
        rosterByPID = Dictionary(j.participants.map { ($0.pid, $0) }, uniquingKeysWith: { a, _ in a })
        published.withLock { $0.graceSeconds = j.gracePeriodSeconds ?? 30 }
        dominantPID = j.dominantSpeaker
    }

    func handle(_ m: ServerMessage) {
        dispatchPrecondition(condition: .onQueue(state))
        feed(.heard)
        switch m {
        case .joined(let j) where phase == .reconnecting && connection.rejoin == .joinSent:
            rejoined(j)
        case .joined(let j):
            guard phase == .joining else { return }
            adopt(j)
            let host = j.mediaHost ?? serverURL.host ?? "127.0.0.1"
            guard let relay = SocketAddress.resolve(host: host, port: j.mediaPort), let token = Hex.decode(j.bindToken) else {
                return failJoin(CometChatCallException(errorCode: CometChatCallException.networkError,
                                                       errorDescription: "cannot resolve media relay \(host):\(j.mediaPort)"))
            }
            do { try engine?.start(relay: relay, ssrc: j.you.ssrc, bindToken: token, keys: j.mediaKeys ?? []) } catch {
                return failJoin(CometChatCallException(errorCode: CometChatCallException.networkError, errorDescription: "\(error)"))
            }
            feed(.joined(resumeToken: j.resumeToken, graceSeconds: j.gracePeriodSeconds))
            let roster = publishRoster()
            published.withLock {
                $0.active = true
                $0.localPID = j.you.pid
                $0.muted = j.you.isAudioMuted
                $0.inviteLink = j.inviteLink ?? self.serverURL.appendingPathComponent("call").appendingPathComponent(j.sessionId).absoluteString
                $0.notices = pendingNotices
                $0.features = Set(j.features ?? [])
                $0.locked = j.locked == true
                $0.sessionID = j.sessionId
                $0.waitingInLobby = false
            }
            startReceiverReports()
            sentVideoSubscriptions = nil
            sendVideoSubscriptions()
            emit(.sessionJoined)
            emit(.participantListChanged(participants: roster))
            // The devices' fallbacks at join (no sound card: `null`) are events too, like later ones.
            for n in pendingNotices { emit(.audioNotice(n)) }
            joinContinuation?.resume()
            joinContinuation = nil
        case .resumed(let j):
            guard phase == .reconnecting, connection.rejoin == nil else { return }
            let before = rosterOrder
            adopt(j)
            feed(.resumed(resumeToken: j.resumeToken, graceSeconds: j.gracePeriodSeconds))
            if let token = Hex.decode(j.bindToken) { engine?.rebind(token: token) }
            engine?.updateKeys(j.mediaKeys ?? [])  // keys may have rotated while we were away
            if mediaOverSignalling { socket?.send(text: ClientMessage.setMediaOverSignalling(true).json()) }
            let roster = publishRoster()
            sendVideoSubscriptions(force: true)  // a resumed participant kept them; a new connection re-states them
            emit(.connectionRestored)
            if before != rosterOrder { emit(.participantListChanged(participants: roster)) }
        case .left(let reason, let by):
            finish(SessionEnding(reason: reason, by: by), emitLeft: reason != .timedOut)
            if reason == .timedOut { emit(.sessionTimedOut) }
        case .error(let code, let message):
            if connection.claims(code) {
                feed(.refused(code: code.rawValue, message: message, canRejoin: !sessionID.isEmpty))
            } else {
                // Our unmute was refused: the microphone goes back to muted here too.
                if code == .mutedByModerator { engine?.setMuted(true); published.withLock { $0.muted = true } }
                // Media over signalling refused (a cluster whose room is on another node): the
                // tunnel would drop everything, so media goes back to UDP.
                if code == .mediaTunnelUnavailable, mediaOverSignalling {
                    mediaOverSignalling = false
                    engine?.setTunnel(nil)
                    emit(.mediaTransportChanged(transport: .udp))
                }
                emit(.error(code: code.rawValue, message: message))
            }
        case .pong(let id):
            feed(.pong(id: id))
        case .participantJoined, .participantLeft, .participantUpdated, .dominantSpeaker:
            rosterMessage(m)
        case .chat, .roomLocked, .lobbyWaiting, .lobbyRequest, .roomBans, .lobbyResolved, .screenShare, .recording, .transcription, .caption, .streaming:
            roomMessage(m)
        case .lossReport, .keyframeRequest, .videoReport, .mediaKeys:
            mediaMessage(m)
        case .welcome, .call:
            break  // presence and ringing travel on the chat side's own connection (CometChatSDK)
        case .webrtcAnswer:
            break  // browsers' (this SDK's media is native: it never offers)
        }
    }

    /// Our loss of each sender's audio since the last report (and `video`'s reports), to the server.
    private func sendReceiverReport(video: [LossReport]) {
        dispatchPrecondition(condition: .onQueue(state))
        guard let reports = engine.map({ $0.lossSinceLastReport() + video }), !reports.isEmpty else { return }
        socket?.send(text: ClientMessage.receiverReport(reports).json())
    }

    /// Every 2 s, tells the server how much of each sender's audio we lost (it forwards each
    /// report to that sender, whose FEC and redundancy follow the worst receiver). A sender's
    /// first report goes as soon as half a second of its audio has been heard (checked every
    /// 250 ms), so a call that starts on a lossy path, or someone joining over one, is covered
    /// within about 0.75 s instead of up to 2.
    func startReceiverReports() {
        let t = DispatchSource.makeTimerSource(queue: state)
        t.schedule(deadline: .now() + 0.25, repeating: 0.25)
        var tick = 0
        t.setEventHandler { [weak self] in
            guard let self, self.phase == .joined else { return }
            tick += 1
            guard tick % 8 == 0 else {
                if let first = self.engine?.firstLossReportsDue(), !first.isEmpty {
                    self.socket?.send(text: ClientMessage.receiverReport(first).json())
                }
                return
            }
            // The heartbeat: a ping per report interval (the round trip to the server), or, after
            // 5 s of silence, the connection is lost.
            self.feed(.heartbeat)
            guard self.phase == .joined else { return }
            self.sendReceiverReport(video: self.engine?.video?.reportSinceLast(seconds: 2) ?? [])
            self.announceQualityChanges()
        }
        t.resume()
        reportTimer = t
    }

    /// Emits `connectionQualityChanged` for each participant whose quality moved since the last
    /// interval (not for the first measurement of a good connection). State queue.
    func announceQualityChanges() {
        dispatchPrecondition(condition: .onQueue(state))
        let now = qualities()
        let roster = participants
        for (pid, q) in now where lastQualities[pid] != q {
            if lastQualities[pid] == nil && q == .good { continue }
            if let p = roster.first(where: { $0.pid == pid }) { emit(.connectionQualityChanged(participant: p, quality: q)) }
        }
        lastQualities = now
    }

    // MARK: Connection effects

    /// Feeds one input to the connection's state (now) and carries out what it asks.
    func feed(_ input: ClientConnection.Input) {
        dispatchPrecondition(condition: .onQueue(state))
        run(connection.handle(input, at: monotonicNanoseconds()))
    }

    /// Carries out the connection's effects, in order (state queue).
    func run(_ effects: [ClientConnection.Effect]) {
        dispatchPrecondition(condition: .onQueue(state))
        for effect in effects {
            switch effect {
            case .failJoin(let code, let message):
                failJoin(CometChatCallException(errorCode: code, errorDescription: message))
            case .announceLost:
                emit(.connectionLost)
            case .drop:
                dropSocket()
            case .openResume(let token):
                open(sending: .resume(token: token))
            case .fetchRejoinToken:
                fetchRejoinToken()
            case .openRejoin(let callToken):
                let s = settings
                open(sending: .join(.init(callToken: callToken, sessionId: sessionID, displayName: s.displayName,
                                          audioMuted: engine?.isMuted ?? s.startAudioMuted, videoPaused: s.startVideoPaused,
                                          sessionType: s.sessionType == .voice ? .voice : .video,
                                          idleTimeoutSeconds: max(0, s.idleTimeoutPeriod), passcode: s.passcode)))
            case .after(let seconds, let input):
                state.asyncAfter(deadline: .now() + seconds) { [weak self] in self?.feed(input) }
            case .ping(let id):
                socket?.send(text: ClientMessage.ping(id).json())
            case .sendLeave:
                socket?.send(text: ClientMessage.leave.json())
            case .finishLeaving:
                finish(.left, emitLeft: true)
            case .giveUp:
                finish(.connectionLost, emitLeft: false)
                emit(.connectionClosed)
            case .rejoinFailed(let code, let message):
                emit(.error(code: code, message: "rejoining failed: \(message)"))
            }
        }
    }

    /// A new signalling connection (the old one dropped first) with `message` as its first.
    private func open(sending message: ClientMessage) {
        dropSocket()
        let link = SignalLink(client: self)
        let socket = WebSocketClient(url: serverURL.appendingPathComponent("v1/signal"), trust: trust, delegate: link)
        self.link = link
        self.socket = socket
        do { try socket.connect() } catch { return feed(.connectFailed) }
        socket.send(text: message.json())
    }

    /// The server no longer knows our session (it restarted, or the grace period passed there):
    /// a fresh call token for it, to join again keeping devices and threads.
    private func fetchRejoinToken() {
        let session = sessionID
        Task { [weak self] in
            guard let self else { return }
            do throws(CometChatCallException) {
                let token = try await self.generateToken(sessionID: session)
                self.state.async { self.feed(.rejoinToken(token)) }
            } catch {
                let code = error.errorCode, text = error.errorDescription
                self.state.async { self.feed(.rejoinTokenFailed(code: code, message: text)) }
            }
        }
    }

    /// The rejoin was admitted: the engine moves to the new participant; peers saw us leave
    /// (when the old server's state went) and join again.
    private func rejoined(_ j: ServerMessage.Joined) {
        let host = j.mediaHost ?? serverURL.host ?? "127.0.0.1"
        guard let relay = SocketAddress.resolve(host: host, port: j.mediaPort), let token = Hex.decode(j.bindToken) else {
            emit(.error(code: CometChatCallException.networkError, message: "cannot resolve media relay \(host):\(j.mediaPort)"))
            return run([.giveUp])
        }
        do { try engine?.retarget(relay: relay, ssrc: j.you.ssrc, bindToken: token, keys: j.mediaKeys ?? []) } catch {
            emit(.error(code: CometChatCallException.networkError, message: "\(error)"))
            return run([.giveUp])
        }
        adopt(j)
        feed(.rejoined(resumeToken: j.resumeToken, graceSeconds: j.gracePeriodSeconds))
        if mediaOverSignalling { socket?.send(text: ClientMessage.setMediaOverSignalling(true).json()) }
        let roster = publishRoster()
        published.withLock { $0.localPID = j.you.pid; $0.rejoins += 1 }
        sendVideoSubscriptions(force: true)
        emit(.connectionRestored)
        emit(.sessionRejoined(participant: participant(j.you)))
        emit(.participantListChanged(participants: roster))
        // The server that lost the session lost its recording, transcription and stream with it:
        // what ran before is over (no "● REC" with nothing recording). One that runs on this
        // server says so right after `joined`, and starts again here.
        let (recording, transcribing, streaming) = published.withLock { p -> (Bool, Bool, Bool) in
            defer { p.serverRecording = false; p.transcriptionLanguage = nil; p.stream = nil }
            return (p.serverRecording, p.transcriptionLanguage != nil, p.stream != nil)
        }
        if recording { emit(.recordingStopped) }
        if transcribing { emit(.transcriptionStopped) }
        if streaming { emit(.streamingStopped) }
    }

    /// Tests: drop the signalling connection abruptly, as a network failure would.
    func simulateConnectionDrop() {
        state.async { self.socket?.abortInBackground() }
    }

    /// Tears the session down once (stop media, close the socket, emit `sessionLeft`), keeping
    /// how it ended for `sessionEnding`.
    func finish(_ ending: SessionEnding, emitLeft: Bool) {
        dispatchPrecondition(condition: .onQueue(state))
        guard [.joined, .leaving, .reconnecting].contains(phase) else { return }
        feed(.ended)
        reportTimer?.cancel()
        reportTimer = nil
        lossReports = [:]
        lastQualities = [:]
        parkedSpeaker?.close()
        parkedSpeaker = nil
        engine?.stop()
        engine = nil
        dropSocket()
        published.withLock {
            $0.active = false
            $0.roster = []
            $0.localPID = nil
            $0.ending = ending
        }
        rosterByPID = [:]
        rosterOrder = []
        if emitLeft { emit(.sessionLeft) }
        leaveContinuation?.resume()
        leaveContinuation = nil
    }
}
