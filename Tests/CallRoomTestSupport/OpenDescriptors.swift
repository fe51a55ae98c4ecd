import Foundation

/// How many descriptors this process has open (`/proc/self/fd`), for the tests that check a
/// teardown lets go of everything it held; -1 when it cannot be read.
public func openDescriptorCount() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1 }

/// The paths of the files this process has open (`/proc/self/fd`'s links), for tests that wait
/// until a writer has let go of its file.
public func openFilePaths() -> [String] {
    let dir = "/proc/self/fd"
    return ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: dir + "/" + $0) }
}
