import Foundation

/// How many descriptors this process has open (`/proc/self/fd`), for the tests that check a
/// teardown lets go of everything it held; -1 when it cannot be read.
public func openDescriptorCount() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1 }
