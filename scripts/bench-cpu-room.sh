#!/usr/bin/env bash
# Whole-process CPU of one client in a room of SPEAKERS speakers (default 10: you and 9 others),
# headless and on the call screen, in one run on this machine.
#
#   scripts/bench-cpu-room.sh [SECONDS] [SPEAKERS]     (default 20 s, 10 speakers)
#
# A release callroomd on loopback; SPEAKERS-1 bots (`callroom bots`, one process) all talking
# at once (each loops a bundled speech clip; nobody mutes or leaves); then the measured client,
# `callroom join` with a 440 Hz tone in and audio out to nowhere: first headless, then on the
# call screen in a 120x40 tmux window (tiles, levels, the event log redrawn as they move). After
# 4 s of warm-up, the client's utime+stime over SECONDS (/proc/PID/stat). Last line:
#   cpu_room speakers=N headless_pct=X screen_pct=Y
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
speakers=${2:-10}
[[ "$secs" =~ ^[0-9]+$ && "$secs" -ge 5 ]] || { echo "bench-cpu-room: SECONDS is a whole number ≥ 5" >&2; exit 2; }
[[ "$speakers" =~ ^[0-9]+$ && "$speakers" -ge 2 && "$speakers" -le 21 ]] || { echo "bench-cpu-room: SPEAKERS is 2…21" >&2; exit 2; }
command -v tmux >/dev/null || { echo "bench-cpu-room: tmux missing" >&2; exit 2; }
swift build -c release --product callroom >/dev/null && swift build -c release --product callroom-bench >/dev/null
swift build -c release --product callroomd >/dev/null
bin=$PWD/.build/release
tmp=$(mktemp -d)
pids=()
session=cpuroom$$
cleanup() {
  tmux kill-session -t "$session" 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
measure() {  # PID → % of one core over $secs, after 4 s of warm-up
  sleep 4
  local t0; t0=$(ticks "$1"); sleep "$secs"; local t1; t1=$(ticks "$1")
  awk -v t="$((t1 - t0))" -v hz="$hz" -v s="$secs" 'BEGIN { printf "%.2f", 100 * t / hz / s }'
}

echo '{"restRequestsPerSecond": 100000}' > "$tmp/config.json"
"$bin/callroomd" --config "$tmp/config.json" --listen 127.0.0.1:0 --data-dir "$tmp/data" --auth-key bench-key --log-level warn \
  > "$tmp/server.out" 2> "$tmp/server.err" &
pids+=($!)
for _ in $(seq 100); do grep -q listening "$tmp/server.out" 2>/dev/null && break; sleep 0.1; done
url=$(grep -o 'http://[0-9.:]*' "$tmp/server.out" | head -1)
[ -n "$url" ] || { echo "bench-cpu-room: callroomd did not start" >&2; cat "$tmp/server.err" >&2; exit 1; }
# Everyone talks throughout: a scenario whose only step comes after the run.
echo "at 100000 1 raise-hand" > "$tmp/talk.scn"
"$bin/callroom" bots --server "$url" --session room --auth-key bench-key --count "$((speakers - 1))" \
  --scenario "$tmp/talk.scn" --duration "$((2 * secs + 40))" > "$tmp/bots.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q "synthetic participants" "$tmp/bots.out" 2>/dev/null && break; sleep 0.1; done
grep -q "synthetic participants" "$tmp/bots.out" || { echo "bench-cpu-room: the bots did not join" >&2; cat "$tmp/bots.out" >&2; exit 1; }

common=(join room --server "$url" --uid me --auth-key bench-key --input tone:440 --output null)
mkfifo "$tmp/in"
"$bin/callroom" "${common[@]}" --headless < "$tmp/in" > "$tmp/headless.out" 2>&1 &
headless=$!
pids+=($headless)
exec 3> "$tmp/in"
headless_pct=$(measure "$headless")
echo leave >&3; exec 3>&-
wait "$headless" 2>/dev/null || true

# (exec: the pane's process is callroom itself, not a shell around it)
tmux new-session -d -s "$session" -x 120 -y 40 "exec $bin/callroom $(printf '%q ' "${common[@]}")"
screen=""
for _ in $(seq 50); do
  screen=$(tmux list-panes -t "$session" -F '#{pane_pid}' 2>/dev/null | head -1 || true)
  [ -n "$screen" ] && [ "$(cat "/proc/$screen/comm" 2>/dev/null)" = callroom ] && break
  screen=""; sleep 0.1
done
[ -n "$screen" ] || { echo "bench-cpu-room: the call screen did not start" >&2; exit 1; }
screen_pct=$(measure "$screen")
participants=$(tmux capture-pane -p -t "$session" | grep -o "[0-9]* participants\|[0-9]* people" | head -1 || true)
echo "client in a room of $speakers speakers ($((speakers - 1)) bots talking), ${secs} s each, release, $(nproc) cores"
echo "   headless: ${headless_pct} % of one core"
echo "   call screen (tmux 120x40${participants:+, $participants}): ${screen_pct} % of one core"
echo "cpu_room speakers=$speakers headless_pct=$headless_pct screen_pct=$screen_pct"
