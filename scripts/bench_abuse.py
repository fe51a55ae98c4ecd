#!/usr/bin/env python3
"""Issue #34's resource benchmarks against a running callroomd (scripts/bench-abuse.sh starts it).

  bench_abuse.py idle-sockets URL APP_ID AUTH_KEY [--sockets N] [--addresses A]
      /healthz and a join's latency idle, then under N WebSockets from A loopback addresses
      (127.0.0.1 … 127.0.0.A) that never authenticate; then how long until the server closed them.
  bench_abuse.py slow-consumers URL APP_ID AUTH_KEY PID [--members M] [--seconds S]
      the server's resident memory while a presenter shares 60 KB frames to M members that never
      read (their receive buffers 4 KB), and after.

Only loopback; every loop is bounded in count and time.
"""
import base64, json, os, resource, select, socket, statistics, sys, time, urllib.request

def http(method, url, headers=None, body=None):
    req = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None, method=method)
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read() or b"{}")

def host_port(url):
    hp = url.split("://", 1)[1].split("/", 1)[0]
    h, p = hp.rsplit(":", 1)
    return h, int(p)

def ws_open(url, source="127.0.0.1", rcvbuf=None, timeout=5):
    host, port = host_port(url)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(timeout)
    s.bind((source, 0))
    s.connect((host, port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET /v1/signal HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: callroom-signal\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        c = s.recv(1)
        if not c:
            raise IOError("closed during the upgrade")
        head += c
    if not head.startswith(b"HTTP/1.1 101"):
        raise IOError(head[:80])
    return s

def ws_send(s, obj):
    data = json.dumps(obj, ensure_ascii=False).encode()
    n = len(data)
    frame = bytearray([0x81])
    if n < 126:
        frame.append(0x80 | n)
    elif n < 65536:
        frame += bytes([0x80 | 126, n >> 8, n & 0xFF])
    else:
        frame.append(0x80 | 127)
        frame += n.to_bytes(8, "big")
    mask = os.urandom(4)
    frame += mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))
    s.sendall(frame)

def ws_recv(s, deadline):
    def read(n):
        out = b""
        while len(out) < n:
            s.settimeout(max(0.01, deadline - time.time()))
            c = s.recv(n - len(out))
            if not c:
                raise IOError("closed")
            out += c
        return out
    b0, b1 = read(2)
    n = b1 & 0x7F
    if n == 126:
        n = int.from_bytes(read(2), "big")
    elif n == 127:
        n = int.from_bytes(read(8), "big")
    payload = read(n)
    return json.loads(payload) if b0 & 0x0F == 1 else None

def login(url, app, key, uid):
    return http("POST", url + "/v3/sdk/login", {"appId": app}, {"uid": uid, "authKey": key})["data"]["authToken"]

def call_token(url, app, auth, session):
    return http("POST", url + "/v3.0/call_tokens", {"appId": app, "authToken": auth}, {"sessionId": session})["data"]["token"]

def join(url, token, rcvbuf=None):
    s = ws_open(url, rcvbuf=rcvbuf)
    ws_send(s, {"type": "join", "v": 1, "callToken": token, "audioMuted": True, "videoPaused": True, "sessionType": "voice"})
    deadline = time.time() + 5
    while time.time() < deadline:
        m = ws_recv(s, deadline)
        if m and m.get("type") == "joined":
            return s, m
        if m and m.get("type") == "error":
            raise IOError(m)
    raise IOError("no joined")

def leave(s):
    """Leaves (so the server holds nothing for a resume) and waits for the close."""
    try:
        ws_send(s, {"type": "leave"})
        deadline = time.time() + 3
        while time.time() < deadline:
            ws_recv(s, deadline)
    except (IOError, OSError, ValueError):
        pass
    s.close()

def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]

def latencies(url, app, key, label, auth):
    health = []
    for _ in range(200):
        t = time.perf_counter()
        urllib.request.urlopen(url + "/healthz", timeout=10).read()
        health.append((time.perf_counter() - t) * 1000)
    joins = []
    for i in range(20):
        token = call_token(url, app, auth, f"bench-{label.replace(' ', '-')}-{i}")
        t = time.perf_counter()
        s, _ = join(url, token)
        joins.append((time.perf_counter() - t) * 1000)
        leave(s)
    print(f"{label}: /healthz p50 {pct(health, 50):.2f} ms p99 {pct(health, 99):.2f} ms; "
          f"join (WebSocket + join → joined) p50 {pct(joins, 50):.2f} ms p99 {pct(joins, 99):.2f} ms")
    return pct(health, 99), pct(joins, 99)

def idle_sockets(url, app, key, n, addresses):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    auth = login(url, app, key, "bench-joiner")
    idle = latencies(url, app, key, "idle", auth)
    held, failed = [], 0
    t0 = time.time()
    for i in range(n):
        try:
            held.append(ws_open(url, source=f"127.0.0.{1 + i % addresses}"))
        except Exception:
            failed += 1
    print(f"opened {len(held)} WebSockets from {addresses} addresses in {time.time() - t0:.1f} s ({failed} refused)")
    loaded = latencies(url, app, key, "under them", auth)
    print(f"ratio under load / idle: /healthz p99 {loaded[0] / idle[0]:.2f}x, join p99 {loaded[1] / idle[1]:.2f}x")
    # How long until the server closed them all (the join timeout)?
    by_fd = {s.fileno(): s for s in held}
    poller = select.poll()
    for fd in by_fd:
        poller.register(fd, select.POLLIN)
    for s in held:
        s.setblocking(False)
    deadline = time.time() + 60
    while by_fd and time.time() < deadline:
        for fd, _ in poller.poll(500):
            s = by_fd.get(fd)
            if s is None:
                continue
            try:
                while s.recv(65536):
                    pass
            except BlockingIOError:
                continue
            except OSError:
                pass
            poller.unregister(fd)
            del by_fd[fd]
    open_ = by_fd
    print(f"closed by the server: {len(held) - len(open_)} of {len(held)}, the last {time.time() - t0:.1f} s after the first opened")
    for s in held:
        s.close()

def rss_kb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0

def slow_consumers(url, app, key, pid, members, seconds):
    auth = login(url, app, key, "presenter")
    base = rss_kb(pid)
    presenter, _ = join(url, call_token(url, app, auth, "flood"))
    ws_send(presenter, {"type": "setPresenting", "value": True})
    slow = []
    for i in range(members):
        a = login(url, app, key, f"slow{i}")
        s, _ = join(url, call_token(url, app, a, "flood"), rcvbuf=4096)
        slow.append(s)
    row = "é" * 300
    peak, sent, seq = base, 0, 0
    t0 = time.time()
    while time.time() - t0 < seconds:
        seq += 1
        frame = {"seq": seq, "full": seq % 50 == 1, "columns": 300, "rows": 90, "styles": [{}],
                 "runs": [{"x": 0, "y": y, "text": row, "style": 0} for y in range(90)]}
        try:
            ws_send(presenter, {"type": "screenShare", "frame": frame})
            sent += 1
        except OSError:
            break
        # The presenter reads what comes back (errors), so it is not the slow one.
        presenter.setblocking(False)
        try:
            while presenter.recv(65536):
                pass
        except (BlockingIOError, OSError):
            pass
        presenter.setblocking(True)
        peak = max(peak, rss_kb(pid))
        time.sleep(1 / 45)
    during = rss_kb(pid)
    closed = 0
    for s in slow:
        # What the server sent before closing is still in the buffer: read it all, then see the end.
        s.setblocking(False)
        try:
            while True:
                if not s.recv(65536):
                    closed += 1
                    break
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
    print(f"{members} members that never read, {sent} frames of ~60 KB in {seconds} s: server RSS {base // 1024} MB before, "
          f"peak {peak // 1024} MB (+{(peak - base) // 1024} MB), {during // 1024} MB at the end; {closed} of {members} closed by the server")
    try:
        ws_send(presenter, {"type": "setPresenting", "value": False})
    except OSError:
        pass
    time.sleep(2)
    print(f"after the presenter stopped sharing: {rss_kb(pid) // 1024} MB")
    for s in slow + [presenter]:
        s.close()
    time.sleep(2)
    print(f"after everyone left: {rss_kb(pid) // 1024} MB")

def main():
    a = sys.argv[1:]
    def opt(name, default):
        return int(a[a.index(name) + 1]) if name in a else default
    if a[:1] == ["idle-sockets"]:
        idle_sockets(a[1], a[2], a[3], opt("--sockets", 3000), opt("--addresses", 30))
    elif a[:1] == ["slow-consumers"]:
        slow_consumers(a[1], a[2], a[3], int(a[4]), opt("--members", 8), opt("--seconds", 10))
    else:
        print(__doc__)
        sys.exit(2)

if __name__ == "__main__":
    main()
