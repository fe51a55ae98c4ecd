#!/usr/bin/env bash
# Fail-over time after kill -9 of a room's node, over TRIALS runs (default 10): each run is
# ClusterFailoverTests' real scenario — redis-server, a throwaway PostgreSQL cluster, three
# callroomd and two headless `callroom join` clients whose signalling is on the two other
# nodes — and its figure is the time from the kill to both clients' onSessionRejoined.
# Prints every trial, then p50 / p99 / max over the trials that passed and how many failed.
# Usage: scripts/bench-failover.sh [TRIALS]   (builds the debug test bundle first)
set -euo pipefail
cd "$(dirname "$0")/.."
trials=${1:-10}
[[ "$trials" =~ ^[1-9][0-9]*$ ]] || { echo "bench-failover: TRIALS is a positive whole number" >&2; exit 2; }
command -v redis-server >/dev/null || { echo "bench-failover: redis-server missing: scripts/install-deps.sh" >&2; exit 2; }
swift build --build-tests > /tmp/bench-failover-build.log 2>&1 || { cat /tmp/bench-failover-build.log >&2; exit 1; }
test=ClusterFailoverTests.testClientsOnTwoNodesHearEachOtherAndFollowTheRoomWhenItsNodeIsKilled
figures=(); failed=0
for i in $(seq "$trials"); do
    out=$(swift test --skip-build --filter "$test" 2>&1 || true)
    took=$(grep -a -o 'rejoined [0-9.]* s after kill -9' <<<"$out" | awk '{print $2}' | tail -1)
    if grep -a -q "Test Case '.*' passed" <<<"$out" && [ -n "$took" ]; then
        figures+=("$took"); echo "trial $i: $took s"
    else
        failed=$((failed + 1)); echo "trial $i: failed${took:+ (rejoined after $took s)}"
    fi
done
[ ${#figures[@]} -gt 0 ] || { echo "bench-failover: no trial passed" >&2; exit 1; }
printf '%s\n' "${figures[@]}" | sort -n | awk -v failed="$failed" '
    { v[NR] = $1 }
    END {
        # nearest rank: the smallest figure at or above that share of the trials
        r50 = int(NR * 0.50); if (r50 < NR * 0.50) r50++; if (r50 < 1) r50 = 1
        r99 = int(NR * 0.99); if (r99 < NR * 0.99) r99++
        p50 = v[r50]; p99 = v[r99]
        printf "fail-over: %d trials passed, %d failed; p50 %.2f s, p99 %.2f s, max %.2f s\n", NR, failed, p50, p99, v[NR]
    }'
