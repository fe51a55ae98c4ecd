#!/usr/bin/env bash
# Push benchmark: a release callroomd sending VoIP pushes (APNs) and FCM messages to the local
# stand-ins (scripts/push-standin.py: HTTP/2 over TLS, checking JWTs and headers as the real
# services do), while `callroom bench ring` rings and answers calls.
#
#   scripts/bench-push.sh [--calls N]      (default 200)
#
# The callee has one apns_voip and one fcm token, so each call makes four pushes (initiated and
# ended/answered to each). Prints:
#   - push send latency: the transition (the row's createdAt) → the service's 200
#     (sentAt), p50/p99/max per service and action, from GET /v3/push/deliveries;
#   - the ring bench's figures with push on, and, in the same run, against a server without push
#     and one with push configured but no tokens (ringing must not wait for pushes; on two cores
#     the stand-in's TLS and signature checks compete with the server and the generator).
set -euo pipefail
cd "$(dirname "$0")/.."
calls=200
while [ $# -gt 0 ]; do
    case "$1" in
        --calls) calls="${2:?--calls needs N}"; shift 2 ;;
        -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench-push: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
bash scripts/install-python-deps.sh
work="$(mktemp -d)"
if ! { swift build -c release --product callroomd && swift build -c release --product callroom && swift build -c release --product callroom-bench; } > "$work/build.log" 2>&1; then
    cat "$work/build.log" >&2; exit 1
fi
bin="$(swift build -c release --show-bin-path)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

python3 scripts/push-standin.py fixtures "$work/push"
python3 scripts/push-standin.py serve "$work/push" --log "$work/push/log.jsonl" > "$work/standin.port" 2> "$work/standin.err" &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/standin.port" ] && break; sleep 0.1; done
port="$(head -1 "$work/standin.port")"
[ -n "$port" ] || { echo "bench-push: the stand-in did not start:" >&2; cat "$work/standin.err" >&2; exit 1; }
cat > "$work/config.json" <<EOF
{"restRequestsPerSecond": 100000,
 "apns": {"keyFile": "$work/push/apns.p8", "keyId": "KEY1234567", "teamId": "TEAM123456", "bundleId": "com.example.callroom",
          "endpoint": "https://127.0.0.1:$port", "caFile": "$work/push/ca.pem"},
 "fcm": {"serviceAccountFile": "$work/push/service-account.json", "endpoint": "https://127.0.0.1:$port", "caFile": "$work/push/ca.pem"}}
EOF
echo '{"restRequestsPerSecond": 100000}' > "$work/plain.json"

# start CONFIG NAME: a server in the background; sets url, server, apikey.
start() {
    "$bin/callroomd" --config "$1" --listen 127.0.0.1:0 --data-dir "$work/data-$2" --auth-key bench-key --api-key bench-admin-key \
        --log-level warn > "$work/$2.out" 2> "$work/$2.err" &
    server=$!
    pids+=("$server")
    for _ in $(seq 100); do grep -q listening "$work/$2.out" && break; sleep 0.1; done
    url="$(grep -o 'http://[0-9.:]*' "$work/$2.out" | head -1)"
    apikey=bench-admin-key
    [ -n "$url" ] || { echo "bench-push: callroomd did not start:" >&2; cat "$work/$2.err" >&2; exit 1; }
}

echo "== without push: callroom bench ring --calls $calls"
start "$work/plain.json" plain
"$bin/callroom" bench ring --server "$url" --auth-key bench-key --calls "$calls" | sed 's/^/   /'
kill "$server"; wait "$server" 2>/dev/null || true

echo "== push configured, the callee without tokens (the in-path cost: a token look-up per transition)"
start "$work/config.json" notokens
"$bin/callroom" bench ring --server "$url" --auth-key bench-key --calls "$calls" | sed 's/^/   /'
kill "$server"; wait "$server" 2>/dev/null || true

echo "== with APNs + FCM (one token each): callroom bench ring --calls $calls"
start "$work/config.json" push
curl -sf -H "apikey: $apikey" -d '{"uid":"ring-callee","name":"Callee"}' "$url/v3/users" > /dev/null
curl -sf -H "apikey: $apikey" -d "{\"token\":\"$(printf 'ab%.0s' $(seq 32))\",\"platform\":\"apns_voip\"}" "$url/v3/users/ring-callee/push_tokens" > /dev/null
curl -sf -H "apikey: $apikey" -d '{"token":"bench-fcm-token:APA91b","platform":"fcm"}' "$url/v3/users/ring-callee/push_tokens" > /dev/null
"$bin/callroom" bench ring --server "$url" --auth-key bench-key --calls "$calls" | sed 's/^/   /'
sleep 2
python3 - "$url" "$apikey" "$work/push/log.jsonl" <<'EOF'
import json, sys, urllib.request
url, key, log = sys.argv[1:4]
rows, page = [], 1
while True:
    req = urllib.request.Request(f"{url}/v3/push/deliveries?perPage=100&page={page}", headers={"apikey": key})
    body = json.load(urllib.request.urlopen(req))
    rows += body["data"]
    if page >= body["meta"]["pagination"]["total_pages"]:
        break
    page += 1
def q(v, p):
    return v[min(len(v) - 1, int((len(v) - 1) * p))] if v else float("nan")
print(f"   pushes: {len(rows)} ({sum(r['status'] == 'sent' for r in rows)} sent, "
      f"{sum(r['status'] != 'sent' for r in rows)} other: {sorted(set(r['status'] for r in rows))})")
for platform in ("apns_voip", "fcm"):
    for action in ("initiated", "ended"):
        d = sorted(r["sentAt"] - r["createdAt"] for r in rows if r["platform"] == platform and r["action"] == action and r.get("sentAt"))
        print(f"   {platform:9} {action:9}: transition → service 200  p50 {q(d, .5):.1f} ms  p99 {q(d, .99):.1f} ms  max {d[-1] if d else float('nan'):.1f} ms  ({len(d)})")
reqs = [json.loads(l) for l in open(log)]
print(f"   stand-in: {len(reqs)} requests ({sum(r['service'] == 'oauth' for r in reqs)} OAuth), "
      f"{len(set(r['headers'].get('authorization') for r in reqs if r['service'] == 'apns'))} APNs provider token(s)")
EOF
