import CallroomKit
import CallsCore
import CallsTransport
import Foundation
import Synchronization

/// `callroom bench udp-floor`: what the kernel charges to send one RTP-sized datagram to each
/// of D loopback sockets, with nothing else in the loop — the floor under the relay's "server
/// CPU per forwarded packet". The sender uses the relay's own `UDPBatchSender` (one `sendmmsg`
/// per datagram for all destinations), then one `sendto` per destination for comparison; a
/// second thread drains the destination sockets (`epoll` + `recvmmsg`), as the load generator
/// does. Only the sending thread's CPU time is counted; on loopback it includes delivery into the
/// destination sockets, as the relay's does.
enum UDPFloorBench {
    static func run(destinations: Int, datagrams: Int) {
        guard let sender = try? UDPSocket(host: "127.0.0.1", port: 0),
              let sinks = try? (0..<destinations).map({ _ in try UDPSocket(host: "127.0.0.1", port: 0) }),
              let poller = ReadinessPoller() else { Console.fail("cannot open loopback UDP sockets", code: ExitCode.failure) }
        for (i, s) in sinks.enumerated() { poller.add(s.fd, tag: UInt64(i)) }
        let running = Atomic<Bool>(true)
        let drained = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        let drainer = Thread {
            let batch = UDPBatchReceiver(capacity: 32)
            while running.load(ordering: .acquiring) {
                poller.wait(timeoutMs: 20) { tag in
                    while case let n = batch.receive(on: sinks[Int(tag)].fd), n > 0 { drained.add(n, ordering: .relaxed) }
                }
            }
            done.signal()
        }
        drainer.start()
        var datagram = [UInt8](repeating: 0, count: 120)
        datagram[0] = 0x80
        let batch = UDPBatchSender()
        // The two methods alternate in 10 slices each, and the medians are reported: this
        // machine's noise moves whole seconds, so interleaving keeps the comparison fair.
        let slices = 10
        let rounds = max(1, datagrams / destinations / (2 * slices))
        let pacingEvery = 64  // let the drainer keep up, as real traffic arrives spread out
        func measure(_ send: () -> Int) -> (usPerDatagram: Double, sent: Int) {
            var sent = 0
            let t0 = CPUBench.threadCPU()
            for r in 0..<rounds {
                sent += send()
                if r % pacingEvery == 0 { sched_yield() }
            }
            return (Double(CPUBench.threadCPU() - t0) / 1000 / Double(max(1, sent)), sent)
        }
        var mmsg: [Double] = [], single: [Double] = [], sent = 0
        datagram.withUnsafeBytes { d in
            for _ in 0..<slices {
                let a = measure {
                    for s in sinks { batch.add(s.localAddress) }
                    return batch.send(d, on: sender.fd)
                }
                let b = measure { sinks.reduce(0) { $0 + (sender.send(d, to: $1.localAddress) ? 1 : 0) } }
                mmsg.append(a.usPerDatagram)
                single.append(b.usPerDatagram)
                sent += a.sent + b.sent
            }
        }
        Thread.sleep(forTimeInterval: 0.1)
        running.store(false, ordering: .releasing)
        done.wait()
        func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }
        Console.out("callroom bench udp-floor: 120-byte datagrams to \(destinations) loopback sockets, \(slices) alternating slices of \(rounds) rounds per method")
        Console.out(String(format: "sent %d, drained %d; sendmmsg per-slice range %.2f…%.2f µs, sendto %.2f…%.2f µs", sent,
                           drained.load(ordering: .relaxed), mmsg.min() ?? 0, mmsg.max() ?? 0, single.min() ?? 0, single.max() ?? 0))
        Console.out(String(format: "udp_floor_us_per_datagram sendmmsg=%.2f sendto=%.2f", median(mmsg), median(single)))
    }
}
