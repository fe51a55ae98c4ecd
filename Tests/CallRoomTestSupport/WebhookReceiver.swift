import Foundation

/// A real HTTP server (Python's http.server, in a child process) that records every webhook it
/// receives — headers and raw body, one JSON line each — and answers with the statuses it is
/// given in turn (then 200). Tests verify signatures and ordering against what arrived.
public final class WebhookReceiver {
    public let port: Int
    private let process: ManagedProcess
    private let log: String

    private static let script = #"""
    import http.server, json, sys, time
    log, statuses = sys.argv[1], [int(s) for s in sys.argv[2].split(",") if s]
    port = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] else 0
    down_until = time.time() + float(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] else 0
    delay = float(sys.argv[5]) if len(sys.argv) > 5 else 0
    class H(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            code = 503 if time.time() < down_until else (statuses.pop(0) if statuses else 200)
            with open(log, "a") as f:
                f.write(json.dumps({"headers": {k.lower(): v for k, v in self.headers.items()}, "body": body.decode(), "answered": code}) + "\n")
            time.sleep(delay)
            self.send_response(code); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"ok")
        def log_message(self, *a): pass
    s = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
    print(s.server_address[1], flush=True)
    s.serve_forever()
    """#

    /// Starts on a free port (or `port`), answering 503 for the first `downSeconds`, then
    /// `statuses` in turn, then 200 — each answer `answerDelaySeconds` after the request came
    /// (a slow receiver: an attempt stays in flight that long).
    public init(log: String, statuses: [Int] = [], port: Int? = nil, downSeconds: Double = 0, answerDelaySeconds: Double = 0) throws {
        self.log = log
        guard FileManager.default.createFile(atPath: log, contents: nil) else { throw TestFailure("cannot create \(log)") }
        var args = ["python3", "-c", Self.script, log, statuses.map(String.init).joined(separator: ",")]
        args.append(port.map(String.init) ?? "")
        args.append(downSeconds > 0 ? "\(downSeconds)" : "")
        args.append("\(answerDelaySeconds)")
        process = try ManagedProcess("/usr/bin/env", args)
        guard let line = process.waitForLine(timeout: 10, { Int($0) != nil }), let p = Int(line) else {
            throw TestFailure("receiver did not start: \(process.errorOutput)")
        }
        self.port = p
    }


    public var url: String { "http://127.0.0.1:\(port)/hook" }

    /// Every request so far: lowercased headers, the raw body, the status it was answered.
    public var received: [(headers: [String: String], body: String, answered: Int)] {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let h = o["headers"] as? [String: String], let b = o["body"] as? String else { return nil }
            return (h, b, o["answered"] as? Int ?? 0)
        }
    }

    /// Waits until `n` requests have arrived.
    public func waitFor(_ n: Int, timeout: TimeInterval = 15) -> Bool {
        eventually(timeout, poll: 0.05) { received.count >= n }
    }

    public func stop() {
        process.signal(SIGTERM)
        _ = process.wait(timeout: 5)
    }
}
