#!/usr/bin/env bash
# TLS cost benchmark: the same release callroomd twice in one sitting — plain HTTP and with a
# self-signed certificate (--tls-self-signed) — and `callroom bench join` against each: login,
# call token and signalling join, one new client at a time (each REST call and the WebSocket a
# new connection, so over TLS each pays a full handshake).
#
#   scripts/bench-tls.sh [--joins N]      (default 100)
set -euo pipefail
cd "$(dirname "$0")/.."
joins=100
while [ $# -gt 0 ]; do
    case "$1" in
        --joins) joins="${2:?--joins needs N}"; shift 2 ;;
        -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench-tls: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
work="$(mktemp -d)"
if ! { swift build -c release --product callroomd && swift build -c release --product callroom && swift build -c release --product callroom-bench; } > "$work/build.log" 2>&1; then
    cat "$work/build.log" >&2; exit 1
fi
bin="$(swift build -c release --show-bin-path)"
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for mode in plain tls; do
    extra=(); [ "$mode" = tls ] && extra=(--tls-self-signed)
    "$bin/callroomd" --listen 127.0.0.1:0 --data-dir "$work/$mode" --auth-key bench-key --log-level warn "${extra[@]}" \
        > "$work/$mode.out" 2> "$work/$mode.err" &
    server=$!
    for _ in $(seq 100); do grep -q listening "$work/$mode.out" && break; sleep 0.1; done
    url="$(grep -o 'https\?://[0-9.:]*' "$work/$mode.out" | tail -1)"
    [ -n "$url" ] || { cat "$work/$mode.err" >&2; exit 1; }
    trust=(); [ "$mode" = tls ] && trust=(--ca-file "$work/$mode/tls/cert.pem")
    echo "== $mode ($url)"
    "$bin/callroom" bench join --server "$url" --auth-key bench-key --joins "$joins" "${trust[@]}" | sed 's/^/   /'
    kill "$server"; wait "$server" 2>/dev/null || true
    server=""
done
