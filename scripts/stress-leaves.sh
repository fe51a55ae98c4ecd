#!/usr/bin/env bash
# Leaves, N times (default 500): two headless clients over TLS join a room, talk (tones), chat
# and leave; any exit but 0 is counted with its stderr. Issue #35's rare crash on leave (SIGSEGV
# in libcrypto on the playback thread) showed about once in 57 such calls.
# Usage: scripts/stress-leaves.sh [N]   (builds first; prints "crashes: K of N", exits 1 if K > 0)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-500}
swift build --product callroom >/dev/null && swift build --product callroomd >/dev/null
B=$(swift build --show-bin-path)
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$B/callroomd" --data-dir "$work/data" --listen "127.0.0.1:$port" --app-id app --auth-key key --tls-self-signed --log-level error \
  >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 50); do grep -q "listening on" "$work/server.log" && break; sleep 0.1; done
crashes=0
for i in $(seq 1 "$N"); do
  for side in a b; do
    ( (sleep 1; echo "send-chat hello $i"; sleep 0.8; echo leave) |
      "$B/callroom" join "room$i" --uid "$side$i" --server "https://127.0.0.1:$port" --app-id app --auth-key key --insecure \
        --input tone:300 --output null --headless >/dev/null 2>"$work/$side.err"; echo $? >"$work/$side.rc" ) &
    eval "pid_$side=\$!"
  done
  wait "$pid_a" "$pid_b"
  for side in a b; do
    rc=$(cat "$work/$side.rc")
    if [ "$rc" != 0 ]; then crashes=$((crashes + 1)); echo "leave $i ($side): exit $rc"; tail -3 "$work/$side.err"; fi
  done
done
echo "crashes: $crashes of $((N * 2))"
[ "$crashes" -eq 0 ]
