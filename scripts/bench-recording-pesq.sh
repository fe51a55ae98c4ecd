#!/usr/bin/env bash
# The server's mixed recording against what a participant heard, as a standard score: one call
# through a real callroomd (scripts/recording_pesq.py drives it: a listener records what it
# hears, a speaker loops a bundled clip, the server records the room), then both the listener's
# WAV and the mixed Ogg Opus file (decoded by opusdec) are scored against the clip with
# wide-band PESQ (ITU-T P.862.2, the `pesq` package from PyPI in .build/pesq-venv). The
# recording should be within 0.3 of what was heard (issue 16).
#
#   scripts/bench-recording-pesq.sh [--clip FILE.wav] [--seconds N] [--bin DIR]
#   (--bin: binaries built already, e.g. the test suite's .build/debug — nothing is built then;
#   the last line is the result)
set -euo pipefail
cd "$(dirname "$0")/.."
clip=Resources/clips/ada.wav
seconds=20
bin=""
while [ $# -gt 0 ]; do
    case "$1" in
        --clip) clip="${2:?--clip needs a file}"; shift 2 ;;
        --seconds) seconds="${2:?--seconds needs N}"; shift 2 ;;
        --bin) bin="${2:?--bin needs a directory}"; shift 2 ;;
        -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench-recording-pesq: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
[ -f "$clip" ] || { echo "bench-recording-pesq: no clip $clip" >&2; exit 2; }
bash scripts/install-deps.sh --core
source scripts/pesq-env.sh
pesq_env bench-recording-pesq
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if [ -z "$bin" ]; then
    if ! swift build -c release --product callroomd > "$work/build.log" 2>&1 || ! swift build -c release --product callroom >> "$work/build.log" 2>&1 || ! swift build -c release --product callroom-bench >> "$work/build.log" 2>&1; then
        cat "$work/build.log" >&2; exit 1
    fi
    bin="$(swift build -c release --show-bin-path)"
fi
[ -x "$bin/callroomd" ] && [ -x "$bin/callroom" ] || { echo "bench-recording-pesq: no callroomd/callroom in $bin" >&2; exit 2; }
sox "$clip" -r 48000 -c 1 -b 16 "$work/clip48.wav"
sox "$clip" -r 16000 -c 1 -b 16 "$work/ref.wav"
python3 scripts/recording_pesq.py "$bin" "$work/clip48.wav" "$seconds" "$work" > "$work/paths.txt"
opusdec --quiet --rate 48000 "$work/mixed.opus" "$work/mixed.wav"
opusdec --quiet --rate 48000 "$work/speaker.opus" "$work/speaker.wav"
sox "$work/speaker.wav" -r 16000 -b 16 "$work/speaker16.wav"
sox "$work/heard.wav" -r 16000 -b 16 "$work/heard16.wav"
sox "$work/mixed.wav" -r 16000 -b 16 "$work/mixed16.wav"
heard="$("$venv/bin/python" scripts/pesq_score.py "$work/ref.wav" "$work/heard16.wav")"
mixed="$("$venv/bin/python" scripts/pesq_score.py "$work/ref.wav" "$work/mixed16.wav")"
track="$("$venv/bin/python" scripts/pesq_score.py "$work/ref.wav" "$work/speaker16.wav")"
h="${heard#pesq_wb=}" m="${mixed#pesq_wb=}" t="${track#pesq_wb=}"
echo "clip $clip, ${seconds} s"
echo "heard_pesq_wb=$h speaker_file_pesq_wb=$t mixed_recording_pesq_wb=$m difference=$(python3 -c "print(f'{$m - $h:+.2f}')")"
