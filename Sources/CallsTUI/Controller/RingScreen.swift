import Foundation

/// The terminal's ringing screens: online and idle, an incoming call, an outgoing call, the
/// outcome of a call, and the call history. Draws on any `TerminalDriver`; what the keys (and
/// clicks on the buttons) mean is handed to `onAction`.
///
/// Thread rules: main thread only (`dispatchPrecondition`).
@MainActor
public final class RingScreen {
    public enum State: Equatable, Sendable {
        case connecting(String)
        /// Online; `note` is what happened last ("Call with Bob ended").
        case idle(name: String, uid: String, note: String?)
        /// Logged in, but the connection that makes calls ring here is down; `note` says why
        /// and what is happening (reconnecting, or refused).
        case offline(name: String, uid: String, note: String)
        case incoming(from: String, type: String, group: String?, since: Date)
        case outgoing(to: String, type: String, since: Date)
        /// How a call ended or why it did not connect.
        case outcome(String)
        case history([String])
    }

    public enum Action: Equatable, Sendable { case accept, reject, busy, cancel, history, back, quit }

    public private(set) var state: State
    public var onAction: ((Action) -> Void)?
    private let driver: any TerminalDriver
    private var timer: DispatchSourceTimer?
    /// Clickable buttons of the last frame.
    private var buttons: [(Rect, Action)] = []

    public init(driver: any TerminalDriver, state: State) {
        self.driver = driver
        self.state = state
    }

    public func start() {
        dispatchPrecondition(condition: .onQueue(.main))
        timer = MainTimer.every(.milliseconds(100)) { [weak self] in self?.tick() }
        draw()
    }

    public func stop() {
        dispatchPrecondition(condition: .onQueue(.main))
        timer?.cancel()
        timer = nil
        driver.shutdown()
    }

    public func show(_ s: State) {
        dispatchPrecondition(condition: .onQueue(.main))
        if case .incoming = s, !(isIncoming) { driver.bell() }
        state = s
        draw()
    }

    private var isIncoming: Bool { if case .incoming = state { return true }; return false }

    /// Polls input and redraws (elapsed times move).
    public func tick() {
        dispatchPrecondition(condition: .onQueue(.main))
        while let input = driver.poll() { handle(input) }
        draw()
    }

    public func handle(_ input: TerminalInput) {
        dispatchPrecondition(condition: .onQueue(.main))
        if case .click(let x, let y) = input {
            if let hit = buttons.first(where: { $0.0.contains(x: x, y: y) }) { onAction?(hit.1) }
            return
        }
        if input == .interrupt { return onAction?(.quit) ?? () }
        let key: Unicode.Scalar? = { if case .char(let c) = input { return c }; return nil }()
        switch state {
        case .incoming:
            if input == .enter || key == "a" { onAction?(.accept) }
            if key == "r" { onAction?(.reject) }
            if key == "b" { onAction?(.busy) }
        case .outgoing:
            if key == "c" || input == .escape || key == "q" { onAction?(.cancel) }
        case .idle, .offline, .outcome:
            if key == "h" { onAction?(.history) }
            if key == "q" { onAction?(.quit) }
        case .history:
            if input == .escape || key == "q" || key == "h" { onAction?(.back) }
        case .connecting:
            if key == "q" { onAction?(.quit) }
        }
    }

    // MARK: Drawing

    public func draw() {
        let (w, h) = driver.size
        var b = ScreenBuffer(width: max(1, w), height: max(1, h), unicode: driver.supportsUnicode)
        buttons = []
        render(into: &b)
        driver.present(b)
    }

    static func elapsed(since d: Date) -> String {
        let s = max(0, Int(Date().timeIntervalSince(d)))
        return String(format: "%d:%02d", s / 60, s % 60)
    }

    func render(into b: inout ScreenBuffer) {
        let w = b.width, h = b.height
        guard w >= 24, h >= 6 else {
            _ = b.put("window too small", x: 0, y: 0, maxWidth: w)
            return
        }
        let boxW = min(w, 60), boxH = min(h, 9)
        let frame = Rect(x: (w - boxW) / 2, y: max(0, (h - boxH) / 2), width: boxW, height: boxH)
        let g = b.glyphs
        switch state {
        case .connecting(let who):
            b.box(frame, title: "CallRoom")
            center(&b, "connecting as \(who)…", y: frame.y + 3, in: frame, style: .init(dim: true))
        case .idle(let name, let uid, let note):
            b.box(frame, title: "CallRoom")
            center(&b, "\(g.recording) online as \(name) (\(uid))", y: frame.y + 2, in: frame, style: .init(fg: .green, bold: true))
            center(&b, "waiting for calls", y: frame.y + 3, in: frame, style: .init(dim: true))
            if let note { center(&b, note, y: frame.y + 5, in: frame) }
            buttonRow(&b, [("h", "History", .history), ("q", "Quit", .quit)], y: frame.maxY - 2, in: frame)
        case .offline(let name, let uid, let note):
            b.box(frame, title: "CallRoom")
            center(&b, "offline: \(name) (\(uid))", y: frame.y + 2, in: frame, style: .init(fg: .red, bold: true))
            center(&b, "calls cannot ring here", y: frame.y + 3, in: frame, style: .init(dim: true))
            center(&b, note, y: frame.y + 5, in: frame)
            buttonRow(&b, [("h", "History", .history), ("q", "Quit", .quit)], y: frame.maxY - 2, in: frame)
        case .incoming(let from, let type, let group, let since):
            b.box(frame, title: "Incoming call", style: .init(fg: .yellow, bold: true))
            center(&b, "\(from)", y: frame.y + 2, in: frame, style: .init(bold: true))
            center(&b, "\(type) call\(group.map { " · \($0)" } ?? "") · ringing \(Self.elapsed(since: since))", y: frame.y + 3, in: frame)
            buttonRow(&b, [("a", "Accept", .accept), ("r", "Reject", .reject), ("b", "Busy", .busy)], y: frame.maxY - 2, in: frame)
        case .outgoing(let to, let type, let since):
            b.box(frame, title: "Calling")
            center(&b, "\(to)", y: frame.y + 2, in: frame, style: .init(bold: true))
            center(&b, "\(type) call · ringing \(Self.elapsed(since: since))", y: frame.y + 3, in: frame)
            buttonRow(&b, [("c", "Cancel", .cancel)], y: frame.maxY - 2, in: frame)
        case .outcome(let text):
            b.box(frame, title: "CallRoom")
            center(&b, text, y: frame.y + 3, in: frame, style: .init(bold: true))
        case .history(let lines):
            let full = Rect(x: 0, y: 0, width: w, height: h)
            b.box(full, title: "Call history")
            if lines.isEmpty { center(&b, "no calls yet", y: 2, in: full, style: .init(dim: true)) }
            for (i, line) in lines.prefix(h - 3).enumerated() { _ = b.put(line, x: 2, y: 1 + i, maxWidth: w - 4) }
            _ = b.put("Esc back", x: 2, y: h - 1, style: .init(dim: true), maxWidth: w - 4)
        }
    }

    private func center(_ b: inout ScreenBuffer, _ text: String, y: Int, in r: Rect, style: CellStyle = .plain) {
        let width = min(DisplayWidth.of(text), r.width - 4)
        _ = b.put(text, x: r.x + (r.width - width) / 2, y: y, style: style, maxWidth: r.width - 4)
    }

    private func buttonRow(_ b: inout ScreenBuffer, _ items: [(String, String, Action)], y: Int, in r: Rect) {
        let labels = items.map { "[\($0.0)] \($0.1)" }
        let total = labels.reduce(0) { $0 + $1.count } + 3 * (labels.count - 1)
        var x = r.x + max(1, (r.width - total) / 2)
        for (label, item) in zip(labels, items) {
            let n = b.put(label, x: x, y: y, style: .init(reverse: true), maxWidth: r.maxX - 1 - x)
            buttons.append((Rect(x: x, y: y, width: n, height: 1), item.2))
            x += n + 3
        }
    }
}
