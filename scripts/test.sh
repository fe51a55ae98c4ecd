#!/usr/bin/env bash
# The whole test suite: installs what is missing, then runs every XCTest and Swift Testing test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/install-python-deps.sh
bash scripts/build-bpf.sh
swift build --build-tests
exec swift test --skip-build "$@"
