#!/usr/bin/env bash
# Relay capacity benchmark: a release callroomd on loopback and `callroom bots` load generators
# for each room shape given, one after another, each against a fresh server.
#
#   scripts/bench-relay.sh [--duration S] [--relay-threads N] [--pin] [--fast-path]
#                          [--join-concurrency C] [--callroomd PATH] [--srtp] [--record] [--cluster N]
#                          ROOMSxPER [ROOMSxPER ...]
#   e.g. scripts/bench-relay.sh 30x10 60x10 100x10
#
# --join-concurrency sets how many bots join at once (the join storm; default 16).
# --callroomd runs another server binary (a before/after comparison against an older build).
# --srtp makes the bots protect every packet with their SRTP key, as real clients do (17 bytes
# more per packet: the relay's cost with encrypted media). --record records every room (its
# moderator bot asks; implies --srtp) and prints the recordings' bytes per recorded minute.
#
# --pin runs the server on the last core alone (one relay thread unless --relay-threads says
# otherwise) and the generator on the others, so neither steals the other's CPU.
# --fast-path runs the relay with its eBPF kernel fast path (root; builds the program first).
# --bpf-object PATH loads another build's fast-path program (with --callroomd of that build).
# --no-sender-limits turns the relay's per-sender packet and byte limits off (0), for the cost
# of those limits against the same build (issue #34).
# --cluster N runs N nodes on one redis-server (started here) with the same keys instead of one
# server: the bots' signalling is spread over the nodes (bot i through node i mod N, as a load
# balancer would), rooms are placed by the registry and each room's media goes to its node;
# the server figures are the N nodes' sums. (Not with --pin.)
#
# Prints, per shape, the generator's report (delivered, loss, jitter, relay delay, server CPU
# per forwarded packet, memory per participant, generator and whole-machine CPU), and the join
# storm's signalling round trips and server CPU per join.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=10
threads=""
pin=""
fast=""
concurrency=16
server_bin=""
srtp=""
record=""
nolimits=""
bpf_object="$PWD/.build/bpf/relay_fastpath.bpf.o"
cluster=1
shapes=()
while [ $# -gt 0 ]; do
    case "$1" in
        --duration) duration="${2:?--duration needs seconds}"; shift 2 ;;
        --relay-threads) threads="--relay-threads ${2:?--relay-threads needs N}"; shift 2 ;;
        --pin) pin=1; shift ;;
        --fast-path) fast=1; shift ;;
        --join-concurrency) concurrency="${2:?--join-concurrency needs C}"; shift 2 ;;
        --callroomd) server_bin="${2:?--callroomd needs a path}"; shift 2
            [ -x "$server_bin" ] || { echo "bench-relay: '$server_bin' is not an executable" >&2; exit 2; } ;;
        --srtp) srtp="--srtp"; shift ;;
        --bpf-object) bpf_object="${2:?--bpf-object needs a path}"; shift 2 ;;
        --no-sender-limits) nolimits=', "relayAudioPacketsPerSecond": 0, "relayAudioBytesPerSecond": 0, "relayVideoPacketsPerSecond": 0, "relayVideoBytesPerSecond": 0'; shift ;;
        --record) srtp="--record"; record=1; shift ;;
        --cluster) cluster="${2:?--cluster needs N}"; shift 2
            [[ "$cluster" =~ ^[1-9]$ ]] || { echo "bench-relay: --cluster takes 1…9 nodes" >&2; exit 2; } ;;
        -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        [0-9]*x[0-9]*) [[ "$1" =~ ^[0-9]+x[0-9]+$ ]] || { echo "bench-relay: '$1' is not ROOMSxPER (e.g. 30x10)" >&2; exit 2; }
            shapes+=("$1"); shift ;;
        *) echo "bench-relay: '$1' is not ROOMSxPER (e.g. 30x10)" >&2; exit 2 ;;
    esac
done
if [ "$cluster" -gt 1 ]; then
    [ -z "$pin" ] || { echo "bench-relay: --cluster and --pin do not go together" >&2; exit 2; }
    command -v redis-server >/dev/null || { echo "bench-relay: --cluster needs redis-server: scripts/install-deps.sh" >&2; exit 2; }
fi
[ ${#shapes[@]} -gt 0 ] || { echo "bench-relay: give at least one ROOMSxPER shape (e.g. 30x10)" >&2; exit 2; }
ulimit -n 65536 2>/dev/null || true
server_cpu=(); generator_cpu=()
if [ -n "$pin" ]; then
    cores="$(nproc)"
    [ "$cores" -ge 2 ] || { echo "bench-relay: --pin needs at least 2 cores" >&2; exit 2; }
    server_cpu=(taskset -c "$((cores - 1))"); generator_cpu=(taskset -c "0-$((cores - 2))")
    [ -n "$threads" ] || threads="--relay-threads 1"
fi
work="$(mktemp -d)"
if ! { swift build -c release --product callroomd && swift build -c release --product callroom && swift build -c release --product callroom-bench; } > "$work/build.log" 2>&1; then
    cat "$work/build.log" >&2; exit 1
fi
bin="$(swift build -c release --show-bin-path)"
[ -n "$server_bin" ] || server_bin="$bin/callroomd"
servers=()
cleanup() {
    for p in "${servers[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [ -f "$work/redis.pid" ] && kill "$(cat "$work/redis.pid")" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
# (A closed output pipe or a signal kills bash without its EXIT trap: stop the nodes then too.)
trap 'cleanup; trap - EXIT; exit 1' INT TERM PIPE
if [ -n "$fast" ]; then
    bash scripts/build-bpf.sh
    echo "{\"restRequestsPerSecond\": 100000, \"relayFastPath\": \"on\", \"relayFastPathObject\": \"$bpf_object\"$nolimits}" > "$work/config.json"
else
    echo "{\"restRequestsPerSecond\": 100000$nolimits}" > "$work/config.json"
fi
for shape in "${shapes[@]}"; do
    rooms="${shape%x*}"; per="${shape#*x}"
    rm -rf "$work"/data*
    redis=()
    if [ "$cluster" -gt 1 ]; then
        [ -f "$work/redis.pid" ] && kill "$(cat "$work/redis.pid")" 2>/dev/null && sleep 0.3
        redis-server --port 0 --unixsocket "$work/redis.sock" --save '' --appendonly no --daemonize yes --pidfile "$work/redis.pid" >/dev/null
        for _ in $(seq 50); do [ -S "$work/redis.sock" ] && break; sleep 0.1; done
    fi
    urls=(); servers=()
    for n in $(seq "$cluster"); do
        mkdir -p -m 700 "$work/data$n"
        [ "$n" -gt 1 ] && cp "$work/data1/keys.json" "$work/data$n/"
        level=warn
        # (info: joins are logged, so the rooms per node can be counted; nothing logs during the run)
        [ "$cluster" -gt 1 ] && redis=(--redis "unix://$work/redis.sock" --node-id "node-$n") && level=info
        # shellcheck disable=SC2086
        "${server_cpu[@]}" "$server_bin" --config "$work/config.json" --listen 127.0.0.1:0 --data-dir "$work/data$n" \
            --auth-key bench-key --log-level "$level" $threads "${redis[@]}" > "$work/server$n.out" 2> "$work/server$n.err" &
        servers+=($!)
        for _ in $(seq 100); do grep -q listening "$work/server$n.out" && break; sleep 0.1; done
        u="$(grep -o 'http://[0-9.:]*' "$work/server$n.out" | head -1)"
        [ -n "$u" ] || { echo "bench-relay: callroomd did not start:" >&2; cat "$work/server$n.err" >&2; exit 1; }
        urls+=("$u")
    done
    [ "$cluster" -gt 1 ] && sleep 1.5  # every node registered
    url="$(IFS=,; echo "${urls[*]}")"
    pids="$(IFS=,; echo "${servers[*]}")"
    echo "== $rooms rooms x $per = $((rooms * per)) participants, ${duration} s$([ "$cluster" -gt 1 ] && echo ", $cluster nodes")"
    "${generator_cpu[@]}" "$bin/callroom" bots --server "$url" --auth-key bench-key --rooms "$rooms" --per-room "$per" \
        --duration "$duration" --join-concurrency "$concurrency" --server-pid "$pids" $srtp | sed 's/^/   /'
    if [ "$cluster" -gt 1 ]; then
        for n in $(seq "$cluster"); do echo "   node-$n: $(grep -c 'participant joined' "$work/server$n.err" || true) participants joined"; done
    fi
    for p in "${servers[@]}"; do kill "$p" 2>/dev/null || true; done
    wait "${servers[@]}" 2>/dev/null || true
    servers=()
    if [ -n "$record" ] && [ -d "$work/data1/recordings" ]; then
        files="$(find "$work"/data*/recordings -name '*.opus' | wc -l)"
        bytes="$(du -scb "$work"/data*/recordings | tail -1 | cut -f1)"
        echo "   recordings: $files files, $bytes bytes; $((bytes * 60 / duration / (files > 0 ? files : 1))) bytes per file per recorded minute"
    fi
done
