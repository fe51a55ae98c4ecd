#!/usr/bin/env bash
# CallRoom's relay beside murmur (Mumble's server, Debian's mumble-server), in one sitting on
# this machine: for each room shape, murmur on loopback with ROOMS channels of PER bots
# (scripts/bench_murmur.py: real Mumble 1.3 clients — TLS control, Opus voice over UDP sealed
# with OCB2-AES128, 50 packets a second), then a release callroomd with the same shape of
# `callroom bots` sending SRTP (scripts/bench-relay.sh --srtp). Both servers' CPU is read from
# /proc/PID/stat over the measured window and divided by the packets they forwarded.
#
#   scripts/bench-relay-murmur.sh [--duration S] [--rounds N] ROOMSxPER [ROOMSxPER ...]
#   e.g. scripts/bench-relay-murmur.sh 10x5 10x10
#
# What differs, and stays: murmur decrypts each voice packet and seals it again for every
# listener (it holds each client's keys); callroomd forwards SRTP it never decrypts. The
# generators differ too (Python here, Swift for callroomd), but only the server's CPU is compared.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/need-package.sh
duration=10
rounds=1
shapes=()
while [ $# -gt 0 ]; do
    case "$1" in
        --duration) duration="${2:?--duration needs seconds}"; shift 2 ;;
        --rounds) rounds="${2:?--rounds needs N}"; shift 2 ;;
        -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        [0-9]*x[0-9]*) [[ "$1" =~ ^[0-9]+x[0-9]+$ ]] || { echo "bench-relay-murmur: '$1' is not ROOMSxPER (e.g. 10x10)" >&2; exit 2; }
            shapes+=("$1"); shift ;;
        *) echo "bench-relay-murmur: '$1' is not ROOMSxPER (e.g. 10x10)" >&2; exit 2 ;;
    esac
done
[ ${#shapes[@]} -gt 0 ] || { echo "bench-relay-murmur: give at least one ROOMSxPER shape (e.g. 10x10)" >&2; exit 2; }
need_package murmurd mumble-server bench-relay-murmur
python3 -c "import cryptography" 2>/dev/null || bash scripts/install-python-deps.sh >/dev/null
work="$(mktemp -d)"
# (murmurd started as root switches to Debian's mumble-server user, which must reach its files.)
[ "$(id -u)" = 0 ] && id mumble-server >/dev/null 2>&1 && chown mumble-server "$work"
murmur=""
cleanup() {
    [ -n "$murmur" ] && kill "$murmur" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'cleanup; trap - EXIT; exit 1' INT TERM PIPE
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
password="$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
cat > "$work/murmur.ini" <<EOF
database=$work/murmur.sqlite
host=127.0.0.1
port=$port
users=5000
bandwidth=72000
autobanAttempts=0
messageburst=1000
messagelimit=1000
EOF
murmurd -ini "$work/murmur.ini" -supw "$password" > "$work/murmur.log" 2>&1 \
    || { echo "bench-relay-murmur: murmurd could not set up its database:" >&2; cat "$work/murmur.log" >&2; exit 1; }
for round in $(seq "$rounds"); do
    for shape in "${shapes[@]}"; do
        rooms="${shape%x*}"; per="${shape#*x}"
        echo "== round $round: $rooms rooms x $per = $((rooms * per)) participants, ${duration} s"
        murmurd -ini "$work/murmur.ini" -fg > "$work/murmur.log" 2>&1 &
        murmur=$!
        for _ in $(seq 100); do grep -q "Server listening" "$work/murmur.log" 2>/dev/null && break; sleep 0.1; done
        grep -q "Server listening" "$work/murmur.log" || { echo "bench-relay-murmur: murmurd did not start:" >&2; cat "$work/murmur.log" >&2; exit 1; }
        echo -n "   murmur $(murmurd -version 2>&1 | grep -o '[0-9.]*-[0-9]*$' | head -1): "
        python3 scripts/bench_murmur.py --port "$port" --server-pid "$murmur" --superuser-password "$password" \
            --rooms "$rooms" --per-room "$per" --duration "$duration"
        kill "$murmur"; wait "$murmur" 2>/dev/null || true; murmur=""
        echo "   callroomd (SRTP, forwarded undecrypted):"
        bash scripts/bench-relay.sh --srtp --duration "$duration" "$shape" | grep -v '^==' | sed 's/^/ /'
    done
done
