#!/usr/bin/env bash
# Heap allocations on a real call's media threads, counted by the kernel, and who makes them.
#
#   scripts/bench-allocs.sh [SECONDS]   (default 10)
#
# A release callroomd and two `callroom join --headless --input tone:440 --output null` in one
# session (Opus, SRTP, RFC 6464 levels, consent checks: the whole call path, sockets included —
# `callroom bench cpu` under the preloaded counter covers the receive chain alone). After 4 s of
# warm-up, a uprobe on glibc's malloc counts every allocation of client a for SECONDS, per thread
# (`perf stat --per-thread`); then 3 s of `perf record` with call graphs name, for each malloc,
# the first frame in a CallRoom module or in libsrtp2 (which Debian builds on NSS). Needs root
# (uprobes) and Debian's linux-perf (installed when missing). Last lines:
#   allocs_per_frame thread=callroom.capture total=X srtp=Y ours=Z   (and the same for playback)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
[ "$(id -u)" = 0 ] || { echo "bench-allocs: uprobes need root" >&2; exit 2; }
source scripts/need-package.sh
need_package perf linux-perf bench-allocs
swift build -c release --product callroom >/dev/null && swift build -c release --product callroom-bench >/dev/null
swift build -c release --product callroomd >/dev/null
bin=.build/release
libc=$(ldd "$bin/callroom" | awk '/libc\.so\.6/ {print $3}')
tmp=$(mktemp -d)
pids=()
probe=""
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "$probe" ] && perf probe -q -d "$probe" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

"$bin/callroomd" --data-dir "$tmp/data" --listen 127.0.0.1:0 --log-level error > "$tmp/server.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q "listening" "$tmp/server.out" 2>/dev/null && break; sleep 0.1; done
url=$(grep -o 'http://[0-9.:]*' "$tmp/server.out" | head -1)
key=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["authKey"])' "$tmp/data/keys.json")
for who in a b; do
  # stdin held open (a headless client leaves at end of input) for longer than the whole run
  sleep $((secs + 30)) | "$bin/callroom" join allocs --server "$url" --uid "$who" --auth-key "$key" --headless \
    --input tone:440 --output null --bitrate 32000 > "$tmp/$who.out" 2>&1 &
  pids+=($!)
done
sleep 4
client=$(pgrep -f -- "join allocs --server $url --uid a " | head -1)
[ -n "$client" ] || { echo "bench-allocs: client a did not start" >&2; cat "$tmp/a.out" >&2; exit 1; }

perf probe -q -d 'callroom_allocs:*' >/dev/null 2>&1 || true   # a run that was killed left it
perf probe -q -x "$libc" --add "callroom_allocs:malloc=malloc" >/dev/null
probe=callroom_allocs:malloc
perf stat -e "$probe" --per-thread -p "$client" -x, -o "$tmp/stat.csv" -- sleep "$secs" 2>/dev/null
perf record -q -e "$probe" --call-graph dwarf,16384 -p "$client" -o "$tmp/perf.data" -- sleep 3 >/dev/null 2>&1
perf script -i "$tmp/perf.data" 2>/dev/null > "$tmp/script.txt"

# Each sample: its thread and the first frame in libsrtp2 or in a CallRoom module.
awk '
/^[^ \t]/ { if (n) print comm "\t" (first == "" ? "(elsewhere: libc, Foundation, libdispatch)" : first); comm = $1; first = ""; n = 1; next }
/^[ \t]*$/ { next }
{ if (first != "") next
  if ($0 ~ /libsrtp2/) first = "libsrtp2 (NSS inside)"
  else if ($2 ~ /(CometChat|Calls[A-Z])/ && $2 !~ /(withLock|Locked)/) first = $2 }
END { if (n) print comm "\t" (first == "" ? "(elsewhere: libc, Foundation, libdispatch)" : first) }' "$tmp/script.txt" |
  sort | uniq -c | sort -rn > "$tmp/who.txt"

echo "mallocs of one client in ${secs} s (perf stat --per-thread; 50 frames a second):"
awk -F, -v s="$secs" '$1 != "" && $2 ~ /^[0-9]+$/ { printf "  %-28s %7d  (%.2f per frame)\n", $1, $2, $2 / s / 50 }' "$tmp/stat.csv" | sort -k2 -rn
echo "where they come from ($(grep -c . "$tmp/who.txt") places; perf record, 3 s):"
head -12 "$tmp/who.txt" | sed 's/^/  /' | swift demangle --simplified | cut -c1-160
for thread in callroom.capture callroom.playback; do
  short=${thread:0:15}
  total=$(awk -F, -v t="$short" 'index($1, t) == 1 { print $2; exit }' "$tmp/stat.csv")
  srtp=$(awk -v t="$short" '$2 == t && /libsrtp2/ { n += $1 } END { print n + 0 }' "$tmp/who.txt")
  all=$(awk -v t="$short" '$2 == t { n += $1 } END { print n + 0 }' "$tmp/who.txt")
  awk -v th="$thread" -v t="${total:-0}" -v s="$secs" -v srtp="$srtp" -v all="$all" 'BEGIN {
    f = t / s / 50; share = all > 0 ? srtp / all : 0
    printf "allocs_per_frame thread=%s total=%.2f srtp=%.2f ours=%.2f\n", th, f, f * share, f * (1 - share) }'
done
