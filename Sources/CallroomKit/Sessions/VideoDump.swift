import CallsCore
import CallsVideo
import CometChatCallsSDK
import Foundation

/// `--video-out DIR`: every received participant's decoded frames as DIR/PID.y4m (YUV4MPEG2,
/// which ffmpeg, mpv and libvpx's tools read), for QA and for tests that check content (the
/// test pattern's colours and clock) without a terminal.
///
/// Thread rules: `write` on the media receive thread (the SDK's frame handler); files are
/// created on first use and closed by `close()` from any thread.
package final class VideoDump: Sendable {
    package let directory: String
    private let writers = LockedState<[String: Y4MWriter]>([:])
    private let failed = Locked<Set<String>>([])

    /// Creates DIR when missing; fails when it cannot be made or written.
    package init(directory: String) throws(VideoError) {
        var isDir: ObjCBool = false
        if !FileManager.default.fileExists(atPath: directory, isDirectory: &isDir) {
            do { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) } catch {
                throw .file(directory, "cannot create it: \(error.localizedDescription)")
            }
        } else if !isDir.boolValue {
            throw .file(directory, "is not a directory")
        }
        guard FileManager.default.isWritableFile(atPath: directory) else { throw .file(directory, "is not writable") }
        self.directory = directory
    }

    package func write(pid: String, frame: VideoFrame) {
        writers.withLock { w in
            if w[pid] == nil {
                guard !failed.withLock({ $0.contains(pid) }) else { return }
                let path = (directory as NSString).appendingPathComponent("\(pid).y4m")
                do { w[pid] = try Y4MWriter(path: path) } catch {
                    failed.withLock { _ = $0.insert(pid) }
                    Console.err("callroom: --video-out: \(error)")
                    return
                }
            }
            do { try w[pid]?.write(frame) } catch {
                Console.err("callroom: --video-out: \(error)")
                w[pid]?.close()
                w[pid] = nil
                failed.withLock { _ = $0.insert(pid) }
            }
        }
    }

    package func close() { writers.withLock { w in for x in w.values { x.close() }; w = [:] } }

    /// Routes the session's frames here.
    @MainActor package func attach() {
        CallSession.shared.setVideoFrameHandler { [weak self] pid, frame in self?.write(pid: pid, frame: frame) }
    }
}
