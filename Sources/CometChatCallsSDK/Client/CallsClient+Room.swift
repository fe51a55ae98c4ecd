import CallsAudio
import CallsCore
import CallsTransport
import Foundation

// MARK: The room's shared state: chat, lock, lobby, bans, shares, recording, captions, stream
extension CallsClient {
    /// Chat, the room's lock, lobby and bans, screen shares, and what the server's members do.
    func roomMessage(_ m: ServerMessage) {
        dispatchPrecondition(condition: .onQueue(state))
        switch m {
        case .chat(let m):
            guard phase == .joined else { return }
            published.withLock { $0.chat.append(m); if $0.chat.count > 500 { $0.chat.removeFirst() } }
            emit(.chatMessage(m))
        case .roomLocked(let locked, _):
            guard phase == .joined else { return }
            published.withLock { $0.locked = locked }
            emit(.roomLockChanged(locked: locked))
        case .lobbyWaiting:
            guard phase == .joining else { return }
            published.withLock { $0.waitingInLobby = true }
            emit(.waitingInLobby)
        case .lobbyRequest(let w):
            guard phase == .joined else { return }
            let p = participant(w, joined: false)
            published.withLock { l in if !l.lobby.contains(where: { $0.pid == w.pid }) { l.lobby.append(p) } }
            emit(.lobbyRequest(participant: p))
        case .roomBans(let uids):
            published.withLock { $0.bans = uids }
        case .lobbyResolved(let pid, let admitted):
            guard phase == .joined, let p = published.withLock({ l -> Participant? in
                defer { l.lobby.removeAll { $0.pid == pid } }
                return l.lobby.first { $0.pid == pid }
            }) else { return }
            emit(.lobbyRequestResolved(participant: p, admitted: admitted))
        case .screenShare(let pid, let frame):
            guard phase == .joined, rosterByPID[pid] != nil else { return }
            published.withLock { p in
                var g = p.screens[pid] ?? TerminalGrid(columns: frame.columns, rows: frame.rows)
                // A diff for a grid we do not have (joined mid-share past the kept frames) waits for a full one.
                guard frame.full || p.screens[pid] != nil else { return }
                if g.apply(frame) { p.screens[pid] = g }
            }
        case .recording(let active, let by, _):
            guard phase == .joined else { return }
            published.withLock { $0.serverRecording = active }
            emit(active ? .recordingStarted : .recordingStopped)
            if active, let by, let w = rosterByPID[by] { emit(.participantStartedRecording(participant: participant(w))) }
        case .transcription(let active, _, _, let language):
            guard phase == .joined else { return }
            published.withLock { $0.transcriptionLanguage = active ? (language ?? "en-US") : nil }
            emit(active ? .transcriptionStarted(language: language ?? "en-US") : .transcriptionStopped)
        case .caption(let c):
            guard phase == .joined else { return }
            emit(.captionReceived(c))
        case .streaming(let s, _, let detail):
            guard phase == .joined else { return }
            let before = published.withLock { p -> StreamState? in
                defer { p.stream = s == .stopped ? nil : s }
                return p.stream
            }
            switch s {
            case .live where before == nil: emit(.streamingStarted)
            case .live: emit(.streamingReconnected)
            case .reconnecting: emit(.streamingReconnecting(reason: detail ?? "the streaming server dropped"))
            case .stopped where before != nil: emit(.streamingStopped)
            case .stopped: break
            }
        default:
            break
        }
    }
}
