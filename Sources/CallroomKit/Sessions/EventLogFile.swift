import CallsCore
import CallsTUI
import CometChatCallsSDK
import Foundation

/// `--event-log FILE`: every listener callback as a JSON line in FILE, on the call screen and
/// headless alike. Opened before anything else takes the terminal (an unwritable path is a
/// usage error); a full disk drops lines, never the call.
///
/// Thread rules: `open` on main; lines are written on the SDK callback queue.
@MainActor
package enum EventLogFile {
    private static var bridge: ListenerBridge?
    private static var handle: FileHandle?

    /// Starts writing every callback to `path` (nil: nothing).
    package static func open(_ path: String?) {
        guard let path else { return }
        guard FileManager.default.createFile(atPath: path, contents: nil), let file = FileHandle(forWritingAtPath: path) else {
            Console.fail("cannot write the event log \(path)")
        }
        let fd = file.fileDescriptor
        let b = ListenerBridge { e in DescriptorWriter.write(fd, e.jsonLine() + "\n") }
        b.register()
        bridge = b
        handle = file
    }
}
