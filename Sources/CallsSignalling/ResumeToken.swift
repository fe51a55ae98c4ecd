import CallsCore

/// The shape of a resume token: a secret, then the session it belongs to (hex), so that in a
/// cluster the node a client reconnects to can find the room's node without asking anyone.
/// The secret alone is what the room checks; the session part only routes. A value; any thread.
package enum ResumeToken {
    package static func make(secret: String, session: String) -> String { secret + "." + Hex.encode(session.utf8) }

    /// The session a token names; nil for one that is not of this shape.
    package static func session(of token: String) -> String? {
        guard let dot = token.firstIndex(of: "."), let bytes = Hex.decode(String(token[token.index(after: dot)...])), !bytes.isEmpty else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }
}
