import CometChatCallsSDK
import Foundation

// MARK: Your terminal share (main thread)
extension CallScreenController {
    /// The share key: stops your share, or opens the picker (a new shell, or a pane of your tmux).
    func toggleShare() {
        dispatchPrecondition(condition: .onQueue(.main))
        if terminalShare != nil { return stopShare("You stopped sharing your terminal") }
        guard session.isCallSessionActive() else { return model.toast("Not in a session: nothing to share into", kind: .error) }
        guard TmuxPane.available else { return model.toast(TerminalShareError.noTmux.description, kind: .error, seconds: 8) }
        model.shareChoices = TerminalShare.choices()
        model.shareSelection = 0
        model.overlay = .sharePicker
    }

    /// Keys and clicks while the picker is open: ↑ ↓ select, a digit or Enter picks, Esc (or d)
    /// cancels, a click on a row picks it.
    func handleSharePicker(_ input: TerminalInput) {
        let n = model.shareChoices.count
        switch input {
        case .up: model.shareSelection = max(0, model.shareSelection - 1)
        case .down: model.shareSelection = min(n - 1, model.shareSelection + 1)
        case .enter: pickShare(model.shareSelection)
        case .char(let c) where c.properties.numericType != nil && c.value >= 49 && c.value <= 57:
            let i = Int(c.value) - 49
            guard i < n else { return model.toast("No choice \(c)") }
            pickShare(i)
        case .click(let x, let y):
            let l = currentLayout
            if let i = OverlayRenderer.sharePickerChoice(model, area: l.tiles.union(l.panel), x: x, y: y) { pickShare(i) } else { model.overlay = nil }
        case .escape, .char("d"), .char("D"), .char("q"):
            model.overlay = nil
            model.toast("Nothing shared")
        default: break
        }
    }

    private func pickShare(_ index: Int) {
        model.overlay = nil
        guard model.shareChoices.indices.contains(index) else { return }
        let choice = model.shareChoices[index]
        let session = self.session
        do {
            let share = try TerminalShare.start(choice, send: { session.sendScreenShare($0) }, ended: { [weak self] in
                DispatchQueue.main.async { MainActor.assumeIsolated { self?.stopShare("Your shared terminal closed: sharing stopped") } }
            })
            terminalShare = share
            session.setPresenting(true)
            model.sharing = share.what
            model.toast("Sharing \(share.what). d stops.", seconds: 12)
        } catch {
            model.toast("Cannot share: \(error.description)", kind: .error, seconds: 8)
        }
        dirty = true
    }

    /// Ends your share (the key, the pane closing, leaving): no more frames, not presenting.
    func stopShare(_ message: String?) {
        dispatchPrecondition(condition: .onQueue(.main))
        guard let share = terminalShare else { return }
        terminalShare = nil
        share.stop()
        if session.isCallSessionActive() { session.setPresenting(false) }
        model.sharing = nil
        if let message { model.toast(message) }
        dirty = true
    }
}
