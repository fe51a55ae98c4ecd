import CallsCore
import CallsVideo
import CometChatCallsSDK
import Foundation

/// `--video-out DIR`: every received participant's decoded frames as DIR/PID.y4m (YUV4MPEG2,
/// which ffmpeg, mpv and libvpx's tools read), for QA and for tests that check content (the
/// test pattern's colours and clock) without a terminal. A Y4M file holds one frame size: when a
/// participant's size changes (a browser sharing its screen, a sender scaling down under load)
/// its frames of that size go to DIR/PID-WIDTHxHEIGHT.y4m, and back to the earlier file when the
/// size returns — at most `maxFilesPerParticipant` files each (frames of further sizes are not
/// written, said once).
///
/// Thread rules: `write` on the media receive thread (the SDK's frame handler); files are
/// created on first use and closed by `close()` from any thread.
package final class VideoDump: Sendable {
    package let directory: String
    package static let maxFilesPerParticipant = 8
    /// Open files by participant, then by frame size.
    private let writers = LockedState<[String: [Size: Y4MWriter]]>([:])
    private let failed = Locked<Set<String>>([])

    struct Size: Hashable { var width: Int, height: Int }

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

    /// The file for `pid`'s frames of `size`: PID.y4m for its first size, PID-WxH.y4m after.
    private func path(pid: String, width: Int, height: Int, first: Bool) -> String {
        (directory as NSString).appendingPathComponent(first ? "\(pid).y4m" : "\(pid)-\(width)x\(height).y4m")
    }

    package func write(pid: String, frame: VideoFrame) {
        let size = Size(width: frame.width, height: frame.height)
        writers.withLock { w in
            var files = w[pid] ?? [:]
            if files[size] == nil {
                guard !failed.withLock({ $0.contains(pid) }) else { return }
                guard files.count < Self.maxFilesPerParticipant else {
                    failed.withLock { _ = $0.insert(pid) }
                    Console.err("callroom: --video-out: \(pid) changed its frame size more than \(Self.maxFilesPerParticipant) times: its frames of further sizes are not written")
                    return
                }
                let path = path(pid: pid, width: size.width, height: size.height, first: files.isEmpty)
                do { files[size] = try Y4MWriter(path: path) } catch {
                    failed.withLock { _ = $0.insert(pid) }
                    Console.err("callroom: --video-out: \(error)")
                    return
                }
                w[pid] = files
            }
            do { try files[size]?.write(frame) } catch {
                Console.err("callroom: --video-out: \(error)")
                for x in files.values { x.close() }
                w[pid] = nil
                failed.withLock { _ = $0.insert(pid) }
            }
        }
    }

    package func close() { writers.withLock { w in for files in w.values { for x in files.values { x.close() } }; w = [:] } }

    /// Routes the session's frames here.
    @MainActor package func attach() {
        CallSession.shared.setVideoFrameHandler { [weak self] pid, frame in self?.write(pid: pid, frame: frame) }
    }
}
