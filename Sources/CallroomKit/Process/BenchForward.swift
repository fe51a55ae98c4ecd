import Foundation

/// Benchmarks and the load generator are not in the shipped `callroom`: they are the
/// `callroom-bench` executable built beside it. `callroom bench …` and `callroom bots --rooms …`
/// hand their arguments to it (`execv`: the same process, the same pid, its exit status).
package enum BenchForward {
    /// Runs `callroom-bench` from `callroom`'s own directory with `arguments`; fails with a
    /// clear message (status 1, a failure — not a usage error) when it is not there.
    package static func exec(_ arguments: [String]) -> Never {
        let me = ownPath
        let path = sibling("callroom-bench")
        guard FileManager.default.isExecutableFile(atPath: path) else {
            Console.fail("callroom-bench is not installed beside \(me): build it with 'swift build --product callroom-bench' "
                         + "(benchmarks and the load generator are not part of the shipped callroom)", code: ExitCode.failure)
        }
        let argv = [path] + arguments
        var cArgs = argv.map { strdup($0) } + [nil]
        execv(path, &cArgs)
        let why = String(cString: strerror(errno))
        Console.fail("cannot run \(path): \(why)", code: ExitCode.failure)
    }

    /// This executable's path.
    package static var ownPath: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// The executable `name` in this one's directory (`callroom` for the benchmarks that run calls).
    package static func sibling(_ name: String) -> String {
        ((ownPath as NSString).deletingLastPathComponent as NSString).appendingPathComponent(name)
    }
}
