#!/usr/bin/env bash
# Whole-process CPU of a two-party call, CallRoom beside baresip, in one run on this machine.
#
#   scripts/bench-cpu-baresip.sh [SECONDS] [ROUNDS] [tone|speech]   (default 20 s, 2 rounds, tone)
#
# The same workload for both: Opus at 32 kb/s, 20 ms frames, mono, a 440 Hz tone (or, with
# `speech`, the bundled speech clip ada.wav looped, which Opus codes as speech: SILK/hybrid,
# where a tone is coded by CELT) in, audio out to nowhere, two endpoints calling each other on
# loopback.
#   CallRoom: a release callroomd and two `callroom join --headless --input "$cr_input" --output null`
#             in one session (SRTP, RFC 6464 levels, consent checks: what a call does).
#   baresip:  two baresip 1.0 instances (Debian baresip-core; opus, aufile modules), a dialling b
#             directly over SIP (answermode=auto); the source is a WAV of the same sound. Twice:
#             plain RTP (baresip's default), then SRTP (its srtp module, SDES, mediaenc=srtp-mand),
#             since CallRoom encrypts every packet — the SRTP figure is the equal workload.
# Each round measures CallRoom then baresip plain then baresip SRTP: after 4 s of warm-up, the
# utime+stime of each client process over SECONDS (/proc/PID/stat, clock ticks). The server's CPU
# is shown apart (baresip has no server). Prints per-process % of one core and the ratios; last line
#   cpu_vs_baresip callroom_pct=X baresip_pct=Y ratio=Z baresip_srtp_pct=S ratio_srtp=R
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
rounds=${2:-2}
source=${3:-tone}
case "$source" in tone|speech) ;; *) echo "bench-cpu-baresip: the source is tone or speech, not '$source'" >&2; exit 2 ;; esac
period=${CALLROOM_PERIOD_MS:-auto}   # CallRoom's playback period: auto (the default) or 5/10/20
source scripts/need-package.sh
need_package baresip baresip-core bench-cpu-baresip
swift build -c release --product callroom >/dev/null && swift build -c release --product callroom-bench >/dev/null
swift build -c release --product callroomd >/dev/null
bin=.build/release
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
pct() { awk -v t="$1" -v hz="$hz" -v s="$secs" 'BEGIN { printf "%.2f", 100 * t / hz / s }'; }

# A 60 s mono 48 kHz WAV for baresip's aufile source (ausine is stereo only in 1.0): the 440 Hz
# tone, or the speech clip repeated; CallRoom reads the same sound (its tone, or the same file).
if [ "$source" = tone ]; then
  python3 - "$tmp/source.wav" <<'PY'
import math, struct, sys, wave
w = wave.open(sys.argv[1], "wb"); w.setnchannels(1); w.setsampwidth(2); w.setframerate(48000)
w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / 48000))) for i in range(48000 * 60)))
w.close()
PY
  cr_input=tone:440
else
  need_package sox sox bench-cpu-baresip
  sox Resources/clips/ada.wav -r 48000 -c 1 -b 16 "$tmp/clip48.wav"
  sox $(for _ in $(seq 12); do echo "$tmp/clip48.wav"; done) "$tmp/source.wav" trim 0 60
  cr_input="file:$tmp/source.wav"
fi

callroom_round() {
  "$bin/callroomd" --data-dir "$tmp/data" --listen 127.0.0.1:0 --log-level error > "$tmp/server.out" 2>&1 &
  local server=$!; pids+=("$server")
  for _ in $(seq 100); do grep -q "listening" "$tmp/server.out" 2>/dev/null && break; sleep 0.1; done
  local url key
  url=$(grep -o 'http://[0-9.:]*' "$tmp/server.out" | head -1)
  key=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["authKey"])' "$tmp/data/keys.json")
  "$bin/callroom" join cpu --server "$url" --uid a --auth-key "$key" --headless --input "$cr_input" --output null --period-ms "$period" --bitrate 32000 > /dev/null 2>&1 &
  local a=$!; pids+=("$a")
  "$bin/callroom" join cpu --server "$url" --uid b --auth-key "$key" --headless --input "$cr_input" --output null --period-ms "$period" --bitrate 32000 > /dev/null 2>&1 &
  local b=$!; pids+=("$b")
  sleep 4
  local a0 b0 s0 a1 b1 s1
  a0=$(ticks $a); b0=$(ticks $b); s0=$(ticks $server)
  sleep "$secs"
  a1=$(ticks $a); b1=$(ticks $b); s1=$(ticks $server)
  kill $a $b; wait $a $b 2>/dev/null || true
  kill $server; wait $server 2>/dev/null || true
  rm -rf "$tmp/data"
  cr_a=$(pct $((a1 - a0))); cr_b=$(pct $((b1 - b0))); cr_s=$(pct $((s1 - s0)))
}

baresip_round() {   # $1: plain or srtp
  local mode=$1 n port rtp enc="" srtp_module=""
  if [ "$mode" = srtp ]; then enc=";mediaenc=srtp-mand"; srtp_module="module srtp.so"; fi
  for n in a b; do
    if [ $n = a ]; then port=25060; rtp=26000-26010; else port=25070; rtp=26020-26030; fi
    mkdir -p "$tmp/bs-$n"
    cat > "$tmp/bs-$n/config" <<EOF
poll_method epoll
sip_listen 127.0.0.1:$port
audio_player aufile,/dev/null
audio_source aufile,$tmp/source.wav
audio_alert aufile,/dev/null
audio_level no
audio_buffer 20-160
rtp_ports $rtp
rtcp_mux no
jitter_buffer_delay 5-10
module_path /usr/lib/baresip/modules
module stdio.so
module opus.so
module aufile.so
$srtp_module
module_app account.so
module_app menu.so
opus_bitrate 32000
opus_stereo no
opus_sprop_stereo no
EOF
    echo "<sip:$n@127.0.0.1:$port>;regint=0;answermode=auto;ptime=20$enc" > "$tmp/bs-$n/accounts"
  done
  baresip -n 127.0.0.1 -f "$tmp/bs-b" -t $((secs + 10)) < /dev/null > "$tmp/bs-b.log" 2>&1 &
  local b=$!; pids+=("$b")
  sleep 1
  baresip -n 127.0.0.1 -f "$tmp/bs-a" -t $((secs + 8)) -e "/dial sip:b@127.0.0.1:25070" < /dev/null > "$tmp/bs-a.log" 2>&1 &
  local a=$!; pids+=("$a")
  sleep 4
  grep -q "Call established" "$tmp/bs-a.log" || { echo "bench-cpu-baresip: baresip's call did not start:" >&2; tail -5 "$tmp/bs-a.log" >&2; exit 1; }
  local a0 b0 a1 b1
  a0=$(ticks $a); b0=$(ticks $b)
  sleep "$secs"
  a1=$(ticks $a); b1=$(ticks $b)
  kill $a $b 2>/dev/null || true; wait $a $b 2>/dev/null || true
  if [ "$mode" = srtp ] && ! { grep -q "SRTP is Enabled" "$tmp/bs-a.log" && grep -q "SRTP is Enabled" "$tmp/bs-b.log"; }; then
    echo "bench-cpu-baresip: baresip's call was not encrypted:" >&2; tail -5 "$tmp/bs-a.log" >&2; exit 1
  fi
  bs_a=$(pct $((a1 - a0))); bs_b=$(pct $((b1 - b0)))
}

echo "bench-cpu-baresip: 2-party call, Opus 32 kb/s 20 ms mono, $source in, nothing out; CallRoom playback period $period; $secs s per measurement, $rounds rounds, $(nproc) cores"
sum_cr=0; sum_bs=0; sum_bss=0
for r in $(seq "$rounds"); do
  callroom_round
  baresip_round plain
  bp_a=$bs_a; bp_b=$bs_b
  baresip_round srtp
  echo "round $r: callroom clients ${cr_a} % + ${cr_b} % of a core (callroomd ${cr_s} %); baresip ${bp_a} % + ${bp_b} %; baresip with SRTP ${bs_a} % + ${bs_b} %"
  sum_cr=$(awk -v s="$sum_cr" -v a="$cr_a" -v b="$cr_b" 'BEGIN { print s + (a + b) / 2 }')
  sum_bs=$(awk -v s="$sum_bs" -v a="$bp_a" -v b="$bp_b" 'BEGIN { print s + (a + b) / 2 }')
  sum_bss=$(awk -v s="$sum_bss" -v a="$bs_a" -v b="$bs_b" 'BEGIN { print s + (a + b) / 2 }')
done
awk -v c="$sum_cr" -v b="$sum_bs" -v e="$sum_bss" -v n="$rounds" 'BEGIN {
  c /= n; b /= n; e /= n
  printf "per client process: callroom %.2f %%, baresip %.2f %% (%.2fx), baresip with SRTP %.2f %% (%.2fx) of a core\n", c, b, (b > 0 ? c / b : 0), e, (e > 0 ? c / e : 0)
  printf "cpu_vs_baresip callroom_pct=%.2f baresip_pct=%.2f ratio=%.2f baresip_srtp_pct=%.2f ratio_srtp=%.2f\n", c, b, (b > 0 ? c / b : 0), e, (e > 0 ? c / e : 0) }'
