#!/usr/bin/env bash
# The whole test suite: installs what is missing, then runs every XCTest and Swift Testing test;
# then the store's and the server's tests (CallsServerTests) a second time with the store on a
# throwaway PostgreSQL cluster (CALLROOM_TEST_STORE=postgres), so the store suite runs on both.
# Arguments (e.g. --filter X) go to the first pass; with any, the PostgreSQL pass is skipped.
# --quick: the first pass without the slow classes listed in Tests/slow-tests.txt (a fast loop;
# CI runs everything).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--quick" ]; then
  shift
  slow=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' Tests/slow-tests.txt | awk '{print $1}' | paste -sd'|')
  set -- --skip "^[A-Za-z]+\.($slow)/" "$@"
fi
bash scripts/install-deps.sh
bash scripts/install-python-deps.sh
bash scripts/build-bpf.sh
swift build --build-tests
swift test --skip-build "$@"
if [ $# -eq 0 ]; then
  echo "test.sh: the store's and the server's tests again, on PostgreSQL" >&2
  skips=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' Tests/postgres-pass-skips.txt | awk '{print $1}' | paste -sd'|')
  CALLROOM_TEST_STORE=postgres swift test --skip-build --filter CallsServerTests --skip "^CallsServerTests\.($skips)/"
fi
