#!/usr/bin/env python3
"""Reconnect after a server crash: kill -9 callroomd N times with clients in a call, restart it
on the same address each time, and measure how long each client takes to be back in the call.

  scripts/bench-reconnect.py [--restarts N] [--clients K]      (defaults: 10 restarts, 2 clients)

Release builds of callroomd and callroom; the clients are `callroom join --headless` (tone in,
null out). For each restart it records, per client, the time from the restarted server printing
"listening" to the client printing onSessionRejoined (it rejoined with a fresh call token and its
media is bound again), and prints p50/p99/max over all of them, and the number of calls the
session has in the call log at the end (1: every restart continued the same call).
"""
import argparse
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build():
    for product in ("callroomd", "callroom"):
        r = subprocess.run(["swift", "build", "-c", "release", "--product", product], cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            sys.exit(f"bench-reconnect: build of {product} failed:\n{r.stdout}")
    return subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT,
                          stdout=subprocess.PIPE, text=True, check=True).stdout.strip()


class Lines:
    """A process whose stdout (and stderr) lines are timestamped as they arrive."""

    def __init__(self, argv):
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.q = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.q.put((time.monotonic(), line.rstrip("\n")))
        self.q.put((time.monotonic(), None))

    def wait_for(self, needle, timeout):
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return None, None
            try:
                t, line = self.q.get(timeout=left)
            except queue.Empty:
                return None, None
            if line is None:
                return None, None
            if needle in line:
                return t, line


def quantile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int((len(xs) - 1) * q))] if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--restarts", type=int, default=10)
    ap.add_argument("--clients", type=int, default=2)
    a = ap.parse_args()
    if not (1 <= a.restarts <= 100 and 1 <= a.clients <= 10):
        sys.exit("bench-reconnect: --restarts must be 1…100 and --clients 1…10")
    bins = build()
    work = tempfile.mkdtemp(prefix="bench-reconnect-")
    config = os.path.join(work, "callroomd.json")
    with open(config, "w") as f:
        json.dump({"dataDir": os.path.join(work, "data"), "storeHeartbeatSeconds": 1}, f)
    server, clients = None, []
    try:
        def start(listen):
            s = Lines([os.path.join(bins, "callroomd"), "--config", config, "--listen", listen, "--auth-key", "bench-key"])
            t, line = s.wait_for("callroomd listening on http", 15)
            if line is None:
                sys.exit("bench-reconnect: callroomd did not start")
            return s, t, line.split()[3]

        server, _, url = start("127.0.0.1:0")
        port = url.rsplit(":", 1)[1]
        for i in range(a.clients):
            c = Lines([os.path.join(bins, "callroom"), "join", "reconnect-bench", "--server", url, "--uid", f"r{i}",
                       "--auth-key", "bench-key", "--input", "tone:300", "--output", "null", "--headless"])
            if c.wait_for("onSessionJoined", 15)[1] is None:
                sys.exit(f"bench-reconnect: client r{i} did not join")
            clients.append(c)
        times = []
        for n in range(a.restarts):
            time.sleep(1.5)
            server.p.send_signal(signal.SIGKILL)
            server.p.wait()
            for c in clients:
                if c.wait_for("onConnectionLost", 10)[1] is None:
                    sys.exit("bench-reconnect: a client did not notice the crash")
            server, back, _ = start(f"127.0.0.1:{port}")
            for i, c in enumerate(clients):
                t, line = c.wait_for("onSessionRejoined", 15)
                if line is None:
                    sys.exit(f"bench-reconnect: client r{i} did not rejoin after restart {n + 1}")
                times.append((t - back) * 1000)
            print(f"restart {n + 1:2d}: rejoined after " + ", ".join(f"{x:.0f}" for x in times[-a.clients:]) + " ms", flush=True)
        keys = json.load(open(os.path.join(work, "data", "keys.json")))
        req = urllib.request.Request(f"{url}/v3/calls?sessionId=reconnect-bench", headers={"apikey": keys["apiKey"]})
        calls = json.load(urllib.request.urlopen(req))["data"]
        print(f"rejoin_ms_p50={quantile(times, 0.5):.0f} rejoin_ms_p99={quantile(times, 0.99):.0f} "
              f"rejoin_ms_max={max(times):.0f} ({len(times)} rejoins, {a.restarts} kill -9 restarts, "
              f"{a.clients} clients); calls_in_log={len(calls)}")
    finally:
        for c in clients:
            c.p.send_signal(signal.SIGTERM)
        if server:
            server.p.send_signal(signal.SIGTERM)
        for p in [c.p for c in clients] + ([server.p] if server else []):
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
