#!/usr/bin/env bash
# Issue #34's resource benchmarks (docs/benchmarks.md "Bounded under attack"): a callroomd on
# loopback (the debug build unless --callroomd PATH: another build, for a before/after), then
#   idle-sockets: /healthz and join latency idle and under 3,000 WebSockets from 30 addresses
#                 that never authenticate, and how long until they are closed;
#   slow-consumers: the server's memory while a presenter shares 60 KB frames to 8 members that
#                 never read.
#   scripts/bench-abuse.sh [--callroomd PATH] [idle-sockets|slow-consumers|all]
set -euo pipefail
cd "$(dirname "$0")/.."
server_bin=".build/debug/callroomd"
what=all
while [ $# -gt 0 ]; do
    case "$1" in
        --callroomd) server_bin="${2:?--callroomd needs a path}"; shift 2 ;;
        idle-sockets|slow-consumers|all) what="$1"; shift ;;
        *) echo "bench-abuse: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
[ -x "$server_bin" ] || swift build --product callroomd > /dev/null
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
run_server() {
    rm -rf "$work/data"
    "$server_bin" --listen 127.0.0.1:0 --data-dir "$work/data" --config "$work/config.json" --log-level error > "$work/out" 2> "$work/err" &
    pid=$!
    for _ in $(seq 100); do grep -q "listening on http" "$work/out" && break; sleep 0.1; done
    url=$(grep "listening on http" "$work/out" | awk '{print $4}')
    app=$(grep "listening on http" "$work/out" | awk '{print $NF}')
    key=$(grep authKey "$work/out" | awk '{print $NF}')
    [ -n "$url" ] || { echo "bench-abuse: callroomd did not start:" >&2; cat "$work/err" >&2; exit 1; }
}
echo '{"restRequestsPerSecond": 100000}' > "$work/config.json"
if [ "$what" = all ] || [ "$what" = idle-sockets ]; then
    run_server
    python3 scripts/bench_abuse.py idle-sockets "$url" "$app" "$key" --sockets 3000 --addresses 30
    kill $pid; wait $pid 2>/dev/null || true
fi
if [ "$what" = all ] || [ "$what" = slow-consumers ]; then
    run_server
    python3 scripts/bench_abuse.py slow-consumers "$url" "$app" "$key" "$pid" --members 8 --seconds 10
    kill $pid; wait $pid 2>/dev/null || true
fi
