/// The logged-in user, as `login` reports it. A value; any thread.
public struct CallsUser: Sendable, Equatable, Codable {
    public var uid: String
    public var name: String
    public var avatar: String?
    /// `online` while logged in.
    public var status: String
    /// The user's auth token (keep it secret).
    public var authToken: String

    public init(uid: String, name: String, avatar: String? = nil, status: String = "online", authToken: String) {
        self.uid = uid
        self.name = name
        self.avatar = avatar
        self.status = status
        self.authToken = authToken
    }
}
