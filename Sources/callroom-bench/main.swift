import CallroomKit
import CallsCore
import Foundation

// `callroom-bench`: the benchmarks and the load generator, apart from the shipped `callroom`
// (which forwards `callroom bench …` and `callroom bots --rooms …` here).
TerminationSignals.install()
let argv = Array(CommandLine.arguments.dropFirst())
switch argv.first {
case "load": LoadCommand.run(Array(argv.dropFirst()))
case "--version": Console.out("callroom-bench \(CallRoomVersion.string)")
default: BenchCommand.run(argv)
}
