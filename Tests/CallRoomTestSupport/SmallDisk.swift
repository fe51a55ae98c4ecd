import Foundation
import XCTest

/// A small tmpfs mounted for one test (root only): a data directory whose disk the test fills
/// and empties again. Unmounted (lazily) and removed by `remove()`.
public final class SmallDisk {
    /// The mounted directory.
    public let path: String
    private let dir: TemporaryDirectory

    /// Mounts a tmpfs of `size` (`4m`); skips the test where it cannot (not root).
    public init(size: String, prefix: String = "callroom-small-disk") throws {
        try XCTSkipUnless(getuid() == 0, "needs root to mount a small tmpfs")
        dir = TemporaryDirectory(prefix)
        path = dir.file("disk")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let m = try ManagedProcess("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", path])
        guard m.wait(timeout: 10) == 0 else {
            dir.remove()
            throw XCTSkip("cannot mount a tmpfs here: \(m.errorOutput)")
        }
    }

    /// Fills the disk to its last byte (`dd` until it stops: ENOSPC).
    public func fill() throws {
        let dd = try ManagedProcess("/bin/dd", ["if=/dev/zero", "of=\(path)/filler", "bs=64k"])
        XCTAssertNotEqual(dd.wait(timeout: 30), 0, "dd stops when the disk is full")
    }

    /// Makes room again (what `fill` wrote goes).
    public func makeRoom() throws { try FileManager.default.removeItem(atPath: path + "/filler") }

    public func remove() {
        _ = try? ManagedProcess("/usr/bin/umount", ["-l", path]).wait(timeout: 10)
        dir.remove()
    }
}
