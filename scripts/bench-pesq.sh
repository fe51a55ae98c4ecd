#!/usr/bin/env bash
# Speech quality through the real pipeline, as a standard score: a bundled speech clip is
# looped by one client through an in-process callroomd to another whose network path drops
# and delays packets (`callroom bench quality --input CLIP --record OUT`); what the listener
# heard is scored against the clip with wide-band PESQ (ITU-T P.862.2, the `pesq` package from
# PyPI, installed into .build/pesq-venv on first use). Beside it, the codec's own best case at
# the same loss rate (scripts/opus_ideal.py: libopus alone, offline, same settings, FEC then
# concealment) and concealment alone, so the pipeline is judged against what Opus can do.
#
# Each row also gives what the speaker sent (payload and on-the-wire kb/s) and the share of
# frames repaired from redundant copies (RFC 2198, switched on by the listener's loss reports).
#
#   scripts/bench-pesq.sh [--clip FILE.wav] [--seconds N] [--jitter MS] [--burst N] [--bitrate BPS]
#                         [--redundancy on|off] [--complexity N] [--period-ms P] [--profile voice|music|low-delay]
#                         [--jitter-frames N] [LOSS% ...]
#   (--jitter-frames: a floor under the listener's jitter buffer start depth; default none: it
#   follows the jitter it measures, as in every call)
#   e.g. scripts/bench-pesq.sh 0 5 10 20; scripts/bench-pesq.sh --burst 2 20
set -euo pipefail
cd "$(dirname "$0")/.."
clip=Resources/clips/ada.wav
seconds=16
jitter=30
complexity=9
period=auto
profile=voice
burst=1
bitrate=32000
redundancy=on
jitter_frames=1
losses=()
while [ $# -gt 0 ]; do
    case "$1" in
        --clip) clip="${2:?--clip needs a file}"; shift 2 ;;
        --seconds) seconds="${2:?--seconds needs N}"; shift 2 ;;
        --jitter) jitter="${2:?--jitter needs MS}"; shift 2 ;;
        --complexity) complexity="${2:?--complexity needs 0-10}"; shift 2 ;;
        --period-ms) period="${2:?--period-ms needs auto|5|10|20}"; shift 2 ;;
        --profile) profile="${2:?--profile needs voice|music|low-delay}"; shift 2 ;;
        --burst) burst="${2:?--burst needs N}"; shift 2 ;;
        --bitrate) bitrate="${2:?--bitrate needs bits per second}"; shift 2 ;;
        --redundancy) redundancy="${2:?--redundancy needs on|off}"; shift 2 ;;
        --jitter-frames) jitter_frames="${2:?--jitter-frames needs N}"; shift 2 ;;
        -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) [[ "$1" =~ ^[0-9]+$ ]] || { echo "bench-pesq: '$1' is not a loss percentage" >&2; exit 2; }
           losses+=("$1"); shift ;;
    esac
done
[ ${#losses[@]} -gt 0 ] || losses=(0 5 10 20)
[ -f "$clip" ] || { echo "bench-pesq: no clip $clip (scripts/make-clips.sh makes them)" >&2; exit 2; }
source scripts/pesq-env.sh
pesq_env bench-pesq
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if ! { swift build -c release --product callroom && swift build -c release --product callroom-bench; } > "$work/build.log" 2>&1; then cat "$work/build.log" >&2; exit 1; fi
bin="$(swift build -c release --show-bin-path)"
sox "$clip" -r 16000 -c 1 -b 16 "$work/ref.wav"
sox "$clip" -r 48000 -c 1 -b 16 "$work/clip48.wav"
burstflag=()
[ "$burst" = 1 ] || burstflag=(--burst "$burst")
echo "clip $clip, ${seconds} s per run, jitter 0…${jitter} ms, loss bursts of $burst packets (mean), seed 1, sender's Opus $bitrate b/s complexity $complexity, redundancy $redundancy, listener's playback period $period, profile $profile, jitter buffer floor $jitter_frames"
echo "loss_pct repaired_pct recovered_pct concealed_pct payload_kbps wire_kbps pesq_wb opus_ideal_pesq_wb plc_only_pesq_wb"
for loss in "${losses[@]}"; do
    "$bin/callroom" bench quality --loss "$loss" --jitter "$jitter" "${burstflag[@]}" --seconds "$seconds" --seed 1 --complexity "$complexity" \
        --bitrate "$bitrate" --redundancy "$redundancy" --period-ms "$period" --profile "$profile" --jitter-frames "$jitter_frames" \
        --input "$clip" --record "$work/heard.wav" > "$work/quality.txt"
    sox "$work/heard.wav" -r 16000 -b 16 "$work/heard16.wav"
    score="$("$venv/bin/python" scripts/pesq_score.py "$work/ref.wav" "$work/heard16.wav")"
    line="$(tail -1 "$work/quality.txt")"
    rec="$(sed -n 's/.*recovered_pct=\([0-9.]*\).*/\1/p' <<<"$line")"
    con="$(sed -n 's/.*concealed_pct=\([0-9.]*\).*/\1/p' <<<"$line")"
    rep="$(sed -n 's/.*repaired_pct=\([0-9.]*\).*/\1/p' <<<"$line")"
    pk="$(sed -n 's/.*payload_kbps=\([0-9.]*\).*/\1/p' <<<"$line")"
    wk="$(sed -n 's/.*wire_kbps=\([0-9.]*\).*/\1/p' <<<"$line")"
    ideal="$("$venv/bin/python" scripts/opus_ideal.py "$work/clip48.wav" "$work/ref.wav" "$loss" 1 "$burst" "$bitrate")"
    best="$(sed -n 's/ideal_pesq_wb=\([0-9.]*\).*/\1/p' <<<"$ideal")"
    plc="$(sed -n 's/.*plc_only_pesq_wb=\([0-9.]*\).*/\1/p' <<<"$ideal")"
    echo "$loss $rep $rec $con $pk $wk ${score#pesq_wb=} $best $plc"
done
