import CallsObjectStorage
import CallsTransport
import Dispatch
import Foundation
import Synchronization

/// One download from object storage streamed to one HTTP response: a thread of its own runs
/// the GET (`S3Client.stream`) and holds at most `bufferBytes` the client has not taken yet.
/// While that is full the GET waits; a client that takes less than its `ReaderPace` floor
/// meanwhile, or a store that sends nothing for `stallSeconds`, ends it, and the client's
/// connection is cut. Whatever ends it — sent, cut, the client gone — the thread ends and
/// `finished` runs once with how (the caller's count of bucket reads, its log).
///
/// Thread rules: `open` on a request's thread (it waits for the store's first answer, so a
/// missing object is a 404 before any head is written); `start` and `read` on the web server's
/// service thread, `cancel` from any (`HTTPBodyStream`); the GET on its own thread. State under
/// one `Mutex`.
final class BucketDownload: HTTPBodyStream {
    let count: Int
    /// How a download ended.
    enum End: Sendable {
        /// Every byte came from the store.
        case complete
        /// The response was over first (the client left, or it was refused before its head).
        case cancelled(received: Int)
        /// The store failed, stalled or sent other than `count` bytes.
        case failed(ObjectStorageError, received: Int)
        /// The client took less than the floor while the store waited on it (`took` in the
        /// window that judged it); its connection was cut.
        case tooSlow(received: Int, took: Int)
    }
    /// How long `open` waits for the store's first answer (the client waits for the head meanwhile).
    static let firstAnswerSeconds = 15
    /// Most bytes held for one download (what came from the store, not yet sent).
    static let bufferBytes = 1 << 20

    private struct State {
        var chunks: [[UInt8]] = []
        /// Bytes of `chunks[0]` already sent.
        var sentOfFirst = 0
        var held = 0
        var received = 0
        /// The store answered (bytes came, or the GET ended).
        var answered = false
        /// The GET is over: `error` says how, nil when every byte came.
        var over = false
        var error: ObjectStorageError?
        var cancelled = false
        /// Whether the client keeps up while the buffer is full; `slow`: it did not (cut).
        var pace: ReaderPace
        var slow: Int?
        /// The GET waits for room (`room` is to be signalled when there is).
        var waiting = false
        var wake: (@Sendable () -> Void)?
    }
    private let state: Mutex<State>
    /// Signalled when the store first answers, and when the GET is over.
    private let answered = DispatchSemaphore(value: 0)
    /// Signalled when the reader took bytes or cancelled (the GET may go on).
    private let room = DispatchSemaphore(value: 0)

    private init(count: Int, floor: ReaderPace.Floor) {
        self.count = count
        state = Mutex(State(pace: ReaderPace(floor: floor)))
    }

    /// Starts the GET of `key` (`range`, or the whole object) from the bucket `storage` names
    /// and waits for the store's first answer. `count`: the bytes the response's head will
    /// promise; more or fewer from the store cut the connection. `floor`: the least the client
    /// takes while the store waits on it. `finished` runs once on the GET's thread when it is over.
    /// - Throws: the store's refusal or an unreachable store (nothing was sent to the client yet).
    static func open(_ storage: ObjectStorageConfiguration, key: String, range: Range<Int>?, count: Int, stallSeconds: Int = 60,
                     floor: ReaderPace.Floor = .standard,
                     finished: @escaping @Sendable (End) -> Void) throws(ObjectStorageError) -> BucketDownload {
        let d = BucketDownload(count: count, floor: floor)
        let t = Thread {
            var error: ObjectStorageError?
            do throws(ObjectStorageError) {
                let client = try S3Client(storage)
                try client.stream(key, range: range, stallSeconds: stallSeconds) { d.arrived($0) }
            } catch let e { error = e }
            finished(d.ended(error))
        }
        t.name = "callroom.objects.download"
        t.start()
        if d.answered.wait(timeout: .now() + .seconds(firstAnswerSeconds)) == .timedOut {
            d.cancel()
            throw .unreachable("no answer in \(firstAnswerSeconds) s")
        }
        if let error = d.state.withLock({ $0.received == 0 ? $0.error : nil }) {
            d.cancel()
            throw error
        }
        return d
    }

    // MARK: HTTPBodyStream (service thread)

    func start(wake: @escaping @Sendable () -> Void) {
        let now = state.withLock { s -> Bool in
            s.wake = wake
            return !s.chunks.isEmpty || s.over
        }
        if now { wake() }
    }

    func read(into buffer: UnsafeMutableRawPointer, max: Int) -> Int? {
        let got = state.withLock { s -> Int? in
            var n = 0
            while n < max, !s.chunks.isEmpty {
                let first = s.chunks[0]
                let take = min(max - n, first.count - s.sentOfFirst)
                first.withUnsafeBytes { chunk in
                    if let base = chunk.baseAddress { (buffer + n).copyMemory(from: base + s.sentOfFirst, byteCount: take) }
                }
                n += take
                s.sentOfFirst += take
                if s.sentOfFirst == first.count {
                    s.chunks.removeFirst()
                    s.sentOfFirst = 0
                }
            }
            s.held -= n
            s.pace.took(n, emptied: s.held == 0)
            if n == 0, s.over { return nil }  // (all sent is `count` bytes: the server stops asking first)
            return n
        }
        if let got, got > 0, resume() { room.signal() }
        return got
    }

    /// Whether the GET waits for room (it is told once).
    private func resume() -> Bool {
        state.withLock { s in
            defer { s.waiting = false }
            return s.waiting
        }
    }

    func cancel() {
        state.withLock { s in
            s.cancelled = true
            s.chunks = []
            s.held = 0
        }
        if resume() { room.signal() }
    }

    // MARK: The GET's thread

    /// Bytes from the store: kept for the reader (waiting while `bufferBytes` are held); false
    /// ends the GET (cancelled, the reader too slow, or more than `count`).
    private func arrived(_ bytes: UnsafeRawBufferPointer) -> Bool {
        while true {
            enum Next { case kept(wake: (@Sendable () -> Void)?, first: Bool), wait(untilMs: Int64), stop }
            let next = state.withLock { s -> Next in
                if s.cancelled || s.received + bytes.count > count { return .stop }
                if s.held > 0, s.held + bytes.count > Self.bufferBytes {
                    switch s.pace.full(nowMs: Self.nowMs) {
                    case .wait(let until):
                        s.waiting = true
                        return .wait(untilMs: until)
                    case .tooSlow(let took):
                        s.slow = took
                        return .stop
                    }
                }
                s.chunks.append(Array(bytes))
                s.held += bytes.count
                s.received += bytes.count
                defer { s.answered = true }
                // (The reader waits for a wake only when it found nothing; with bytes left it
                // asks for the next chance to write itself.)
                return .kept(wake: s.held == bytes.count ? s.wake : nil, first: !s.answered)
            }
            switch next {
            case .stop:
                return false
            case .wait(let until):
                // (Woken by the reader, or at the window's end to be judged.)
                _ = room.wait(timeout: DispatchTime(uptimeNanoseconds: UInt64(max(0, until)) * 1_000_000))
            case .kept(let wake, let first):
                if first { answered.signal() }
                wake?()
                return true
            }
        }
    }

    private static var nowMs: Int64 { Int64(DispatchTime.now().uptimeNanoseconds / 1_000_000) }

    private func ended(_ error: ObjectStorageError?) -> End {
        let (wake, first, end) = state.withLock { s -> ((@Sendable () -> Void)?, Bool, End) in
            s.over = true
            if error == nil, s.received != count {
                s.error = .badReply("the store sent \(s.received) bytes of \(count)")
            } else {
                s.error = error
            }
            // (Short or failed: what is held is not sent — the client sees the body cut.)
            if s.error != nil {
                s.chunks = []
                s.held = 0
            }
            defer { s.answered = true }
            let end: End
            if s.cancelled {
                end = .cancelled(received: s.received)
            } else if let took = s.slow {
                end = .tooSlow(received: s.received, took: took)
            } else {
                end = s.error.map { .failed($0, received: s.received) } ?? .complete
            }
            return (s.wake, !s.answered, end)
        }
        if first { answered.signal() }
        wake?()
        return end
    }
}
