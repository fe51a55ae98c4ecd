#!/usr/bin/env bash
# The first words of someone who talks as they join, over a network with a round trip.
#
#   scripts/bench-first-words.sh [--runs N] [RTT_MS ...]      (default: 3 runs at 0 40 100 200 ms)
#   (CALLROOM=PATH uses another callroom binary for both clients: a before/after comparison)
#
# A release callroomd whose media relay is reached through scripts/udp-delay-proxy.py (half the
# round trip each way; the server advertises the proxy as its media address), a listener
# (`callroom join --headless --output file:…`) in the room first, then a speaker who joins with
# the bundled speech clip as its microphone — speech from its first frame. Per run
# (scripts/first_words.py): how much of the clip's start the listener never heard (lost_ms), the
# level of the first 150 ms it did hear against the same 150 ms of the clip (first_150ms_db; a
# decoder that starts on a stream under way plays SILK at about half level), and the media the
# relay dropped because it came before the speaker's binding (callroomd's /metrics, reason=unbound).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=3
rtts=()
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs="${2:?--runs needs N}"; shift 2 ;;
        -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) [[ "$1" =~ ^[0-9]+$ ]] || { echo "bench-first-words: '$1' is not a round trip in ms" >&2; exit 2; }
           rtts+=("$1"); shift ;;
    esac
done
[ ${#rtts[@]} -gt 0 ] || rtts=(0 40 100 200)
source scripts/pesq-env.sh
pesq_env bench-first-words
work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for product in callroom callroomd; do
    if ! swift build -c release --product "$product" > "$work/build.log" 2>&1; then cat "$work/build.log" >&2; exit 1; fi
done
bin="$(swift build -c release --show-bin-path)"
client="${CALLROOM:-$bin/callroom}"
sox Resources/clips/ada.wav -r 48000 -c 1 -b 16 "$work/clip48.wav"
free_port() { python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

one_run() {   # $1: round trip (ms); prints "lost_ms=… first_150ms_db=… unbound=…"
    local rtt=$1 media proxy url key
    media=$(free_port)
    rm -rf "$work/data"; mkdir -p "$work/data"
    # The proxy takes a free port of its own and says which ("ready PORT").
    python3 scripts/udp-delay-proxy.py 0 "127.0.0.1:$media" "$(awk -v r="$rtt" 'BEGIN { print r / 2 }')" > "$work/proxy.out" 2>&1 &
    local px=$!; pids+=("$px")
    for _ in $(seq 100); do grep -q ready "$work/proxy.out" 2>/dev/null && break; sleep 0.1; done
    proxy=$(sed -n 's/^ready //p' "$work/proxy.out")
    [ -n "$proxy" ] || { echo "bench-first-words: the delay proxy did not start:" >&2; cat "$work/proxy.out" >&2; exit 1; }
    echo "{\"mediaPublicAddress\": \"127.0.0.1:$proxy\"}" > "$work/config.json"
    "$bin/callroomd" --config "$work/config.json" --data-dir "$work/data" --listen 127.0.0.1:0 --media-port "$media" --log-level error > "$work/server.out" 2>&1 &
    local server=$!; pids+=("$server")
    for _ in $(seq 100); do grep -q listening "$work/server.out" 2>/dev/null && break; sleep 0.1; done
    url=$(grep -o 'http://[0-9.:]*' "$work/server.out" | head -1)
    key=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["authKey"])' "$work/data/keys.json")
    rm -f "$work/heard.wav"
    (sleep 9) | "$client" join firstwords --server "$url" --uid listener --auth-key "$key" --headless --input null --output "file:$work/heard.wav" > "$work/listener.out" 2>&1 &
    local listener=$!; pids+=("$listener")
    sleep 3
    (sleep 5) | "$client" join firstwords --server "$url" --uid speaker --auth-key "$key" --headless --input "file:$work/clip48.wav" --output null > "$work/speaker.out" 2>&1 &
    local speaker=$!; pids+=("$speaker")
    # Counted while both are in the call (leaving drops what is still on its way, as it should).
    sleep 3
    local unbound
    unbound=$(curl -s "$url/metrics" | sed -n 's/^callroom_relay_packets_dropped_total{reason="unbound"} \([0-9]*\).*/\1/p')
    wait "$speaker" "$listener" || { echo "bench-first-words: a client failed:" >&2; tail -3 "$work/speaker.out" "$work/listener.out" >&2; exit 1; }
    kill "$server" "$px" 2>/dev/null || true; wait "$server" "$px" 2>/dev/null || true
    echo "$("$venv/bin/python" scripts/first_words.py "$work/clip48.wav" "$work/heard.wav") unbound=${unbound:-?}"
}

echo "bench-first-words: speech from the speaker's first frame; $runs runs per round trip; $(nproc) cores"
echo "rtt_ms run lost_ms first_150ms_db relay_dropped_unbound"
for rtt in "${rtts[@]}"; do
    for r in $(seq "$runs"); do
        line=$(one_run "$rtt")
        echo "$rtt $r $(sed 's/lost_ms=//; s/first_150ms_db=//; s/unbound=//' <<<"$line")"
    done
done
