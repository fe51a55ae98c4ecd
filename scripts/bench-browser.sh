#!/usr/bin/env bash
# A browser in a room, measured: page weight, click on Join → first audio heard, ICE connected,
# callroomd's CPU per forwarded packet on a browser leg against native legs, memory per browser
# leg (scripts/bench_browser.py says how). Release builds; Chromium from install-deps.
#
#   scripts/bench-browser.sh [--runs N] [--only join|cpu|m2e|memory]   (default 5 runs of the join; all sections)
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in -h|--help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
bash scripts/install-deps.sh
swift build -c release --product callroomd > /dev/null
swift build -c release --product callroom > /dev/null
swift build -c release --product callroom-bench > /dev/null   # callroom bench peer-latency (the terminal side of mouth-to-ear)
CALLROOM_BIN="$(swift build -c release --show-bin-path)" exec python3 scripts/bench_browser.py "$@"
