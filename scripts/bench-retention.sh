#!/usr/bin/env bash
# History retention's cost to everything else (docs/benchmarks.md "Retention beside the
# requests it could hold up"): a callroomd data directory filled with a large history — 300,000
# ended calls with two participants each, half past `callLogRetentionDays`; 1,000,000 chat
# messages, half in calls past `chatRetentionDays`; 400,000 webhook deliveries, half past
# `deliveryRetentionDays`; 20,000 auth tokens, half past `authTokenTTLSeconds` — then callroomd
# started on it with all four set, so its first retention turn runs at start, while a client asks for a user
# over REST (a store read) as fast as it is answered. Prints how long the turn took and the
# requests' latency during it (the worst is what a join waits behind the store's lock).
#   scripts/bench-retention.sh [--callroomd PATH]   (another build, for a before/after)
set -euo pipefail
cd "$(dirname "$0")/.."
server_bin=".build/debug/callroomd"
while [ $# -gt 0 ]; do
    case "$1" in
        --callroomd) server_bin="${2:?--callroomd needs a path}"; shift 2 ;;
        *) echo "bench-retention: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
[ -x "$server_bin" ] || swift build --product callroomd > /dev/null
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"' EXIT
start_server() {
    "$server_bin" --listen 127.0.0.1:0 --data-dir "$work/data" --config "$work/config.json" --log-level info > "$work/out" 2> "$work/err" &
    pid=$!
    for _ in $(seq 300); do grep -q "listening on http" "$work/out" && break; sleep 0.05; done
    url=$(grep "listening on http" "$work/out" | awk '{print $4}')
    [ -n "$url" ] || { echo "bench-retention: callroomd did not start:" >&2; cat "$work/err" >&2; exit 1; }
}
# The schema, made by callroomd itself; then the history, written while it is stopped.
echo '{"restRequestsPerSecond": 1000000}' > "$work/config.json"
start_server
key=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["apiKey"])' "$work/data/keys.json")
curl -sf -X POST -H "apikey: $key" -H 'content-type: application/json' -d '{"uid":"probe","name":"Probe"}' "$url/v3/users" > /dev/null
kill $pid; wait $pid 2>/dev/null || true; pid=
python3 - "$work/data/callroom.sqlite" <<'PY'
import random, sqlite3, sys, time
db = sqlite3.connect(sys.argv[1])
day = 86_400_000
now = int(time.time() * 1000)
calls = 300_000
# Calls one a minute-ish up to now: the first half ended 60 days ago and more, the rest recently.
def ended(i): return now - (60 * day if i < calls // 2 else day) - (calls - i) * 1000
db.executemany("INSERT INTO calls(id, session_id, type, mode, status, initiated_at, started_at, ended_at) VALUES (?, ?, 'audio', 'meet', 'ended', ?, ?, ?)",
               ((i + 1, f"s{i}", ended(i) - 60_000, ended(i) - 60_000, ended(i)) for i in range(calls)))
random.seed(1)
db.executemany("INSERT INTO chat_messages(call_id, uid, pid, name, text, sent_at) VALUES (?, 'u', 'p', 'U', 'a message of some length, like people write', ?)",
               ((min(calls, max(1, int(i * 0.3) + random.randint(-50, 50))), 0) for i in range(1_000_000)))
db.executemany("""INSERT INTO webhook_deliveries(delivery_id, webhook_id, url, session_id, trigger, body, created_at, next_attempt_at, status)
                  VALUES (?, 'w', 'https://example.com/hook', 's', 'call_ended', '{"trigger":"call_ended"}', ?, ?, 'delivered')""",
               ((f"d{i}", now - (60 if i < 200_000 else 1) * day, now) for i in range(400_000)))
# 200 users with 100 auth tokens each (the most a user holds), half made 60 days ago.
db.executemany("INSERT INTO users(uid, name, created_at) VALUES (?, ?, ?)", ((f"u{u}", f"User {u}", now - 90 * day) for u in range(200)))
db.executemany("INSERT INTO auth_tokens(token_hash, uid, created_at) VALUES (?, ?, ?)",
               ((f"{u:04d}{t:04d}".ljust(64, "0"), f"u{u}", now - (60 * day if t < 50 else day)) for u in range(200) for t in range(100)))
# Each call with two participants, for the call logs' retention.
db.executemany("INSERT INTO call_participants(call_id, uid, pid, name, joined_at, left_at) VALUES (?, 'u1', ?, 'U', 0, 0)",
               ((i // 2 + 1, f"p{i}") for i in range(2 * calls)))
db.commit()
PY
echo '{"restRequestsPerSecond": 1000000, "chatRetentionDays": 30, "deliveryRetentionDays": 30, "callLogRetentionDays": 45, "authTokenTTLSeconds": 2592000}' > "$work/config.json"
python3 - "$work" "$server_bin" "$key" <<'PY'
import http.client, json, subprocess, sys, time
work, server, key = sys.argv[1:4]
out = open(f"{work}/out", "w"); err = open(f"{work}/err", "w")
started = time.monotonic()
p = subprocess.Popen([server, "--listen", "127.0.0.1:0", "--data-dir", f"{work}/data", "--config", f"{work}/config.json", "--log-level", "info"], stdout=out, stderr=err)
url = None
while url is None and time.monotonic() - started < 30:
    for line in open(f"{work}/out"):
        if "listening on http" in line: url = line.split()[3]
    time.sleep(0.02)
host, port = url.removeprefix("http://").split(":")
lat, done = [], None
conn = http.client.HTTPConnection(host, int(port), timeout=30)
while time.monotonic() - started < 120:
    t = time.monotonic()
    conn.request("GET", "/v3/users/probe", headers={"apikey": key})
    r = conn.getresponse(); r.read()
    assert r.status == 200, r.status
    lat.append((time.monotonic() - t) * 1000)
    log = open(f"{work}/err").read()
    if done is None and all(f"{what} forgotten" in log for what in ("chat past retention", "delivery logs past retention", "call logs past retention", "expired auth tokens")):
        done = time.monotonic() - started
        tail = 50  # a few requests after, for the quiet latency
    if done is not None:
        tail -= 1
        if tail == 0: break
p.terminate(); p.wait()
if done is None: sys.exit("bench-retention: the retention turn did not finish in 120 s:\n" + open(f"{work}/err").read()[-2000:])
for line in open(f"{work}/err"):
    if "forgotten" in line: print(line.strip())
lat.sort()
q = lambda f: lat[min(len(lat) - 1, int(f * len(lat)))]
print(f"retention turn over {done:.1f} s after start; {len(lat)} requests meanwhile: "
      f"median {q(0.5):.1f} ms, p99 {q(0.99):.1f} ms, worst {lat[-1]:.1f} ms")
PY
