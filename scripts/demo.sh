#!/usr/bin/env bash
# Quick start: installs what is missing, builds, and runs `callroom demo` (extra arguments pass through).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --core
swift build -c release --product callroom >&2
exec .build/release/callroom demo "$@"
