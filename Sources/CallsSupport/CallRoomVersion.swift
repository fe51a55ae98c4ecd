/// The CallRoom release this build belongs to.
public enum CallRoomVersion {
    public static let string = "0.1.0"
}
