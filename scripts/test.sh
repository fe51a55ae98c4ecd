#!/usr/bin/env bash
# The whole test suite: installs what is missing, then runs every Swift Testing and XCTest test
# (the XCTests in two shards side by side, below), and the store's and the server's tests
# (CallsServerTests) a second time with the store on a throwaway PostgreSQL cluster
# (CALLROOM_TEST_STORE=postgres), so the store suite runs on both.
# Arguments (e.g. --filter X) go to one `swift test`; with any, nothing else runs.
# --quick: one `swift test` without the slow classes listed in Tests/slow-tests.txt (a fast loop;
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
if [ $# -gt 0 ]; then
  exec swift test --skip-build "$@"
fi

# The whole suite, in two shards side by side. It mostly waits (real-time media, processes
# starting, timeouts running out: about a quarter of two cores busy in one pass), so the
# IntegrationTests module (and a few waiting classes of others: `moved` below) runs in one
# process while every other module, then the PostgreSQL pass, runs in another — each shard's classes one after another, as in one pass. SwiftPM locks
# the build directory for a whole `swift test`, so the shards run the test bundle itself (an
# argument of comma-separated classes). (The PostgreSQL pass after the integration shard instead
# balanced the shards — 919 s against 1167 s on the 2-core machine of 2026-12-07 — but beside it a
# real-time playout test in the modules shard concealed 6 frames: it stays after the modules.)
# The classes that drive browsers run last, alone: beside
# another shard a browser's audio came through silent once in six runs. Every line says where it
# ran: [integration], [modules], [postgres] or [browsers].
bundle=.build/debug/CallRoomPackageTests.xctest
classes=$("$bundle" --list-tests | sed -n 's#^\([A-Za-z0-9_]*\.[A-Za-z0-9_]*\)/.*#\1#p' | sort -u)
# The browsers (Chromium, Firefox) are the heaviest: their classes run alone, after both shards.
browsers="IntegrationTests.BrowserCallTests,IntegrationTests.ClusterFailoverTests"
# Classes of the other modules that mostly wait on other processes (a bucket, Redis, PostgreSQL,
# a webhook receiver) run in the integration shard, after its own: the modules shard with its
# PostgreSQL pass was the longer side (516 + 128 s beside 366 s at f5b2d82).
moved="CallsServerTests.BucketDownloadTests,CallsServerTests.ClusterRoutingTests,CallsServerTests.ClusterMembershipTests,CallsServerTests.PostgresStoreTests,CallsServerTests.WebhookTests,CometChatCallsSDKTests.ObjectStorageRecordingTests"
for c in ${browsers//,/ } ${moved//,/ }; do
  grep -qxF "$c" <<<"$classes" || { echo "test.sh: $c is no test class (the lists above)" >&2; exit 1; }
done
integration=$( (grep '^IntegrationTests\.' <<<"$classes" | grep -vxF "$(tr , '\n' <<<"$browsers")"; tr , '\n' <<<"$moved") | paste -sd,)
modules=$(grep -v '^IntegrationTests\.' <<<"$classes" | grep -vxF "$(tr , '\n' <<<"$moved")" | paste -sd,)
skips=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' Tests/postgres-pass-skips.txt | awk '{print "CallsServerTests." $1}')
postgres=$(grep '^CallsServerTests\.' <<<"$classes" | grep -vxF "$skips" | paste -sd,)

echo "test.sh: Swift Testing" >&2
swift test --skip-build --disable-xctest

label() { sed -u "s/^/[$1] /"; }
( "$bundle" "$integration" 2>&1 | label integration; exit "${PIPESTATUS[0]}" ) &
integration_pid=$!
modules_status=0
( "$bundle" "$modules" 2>&1 | label modules; exit "${PIPESTATUS[0]}" ) || modules_status=$?
echo "test.sh: the store's and the server's tests again, on PostgreSQL" >&2
( CALLROOM_TEST_STORE=postgres "$bundle" "$postgres" 2>&1 | label postgres; exit "${PIPESTATUS[0]}" ) || modules_status=$?
integration_status=0
wait "$integration_pid" || integration_status=$?
echo "test.sh: the browsers' classes, alone" >&2
browsers_status=0
( "$bundle" "$browsers" 2>&1 | label browsers; exit "${PIPESTATUS[0]}" ) || browsers_status=$?
echo "test.sh: integration shard exit $integration_status, modules shard (and PostgreSQL) exit $modules_status, browsers exit $browsers_status" >&2
[ "$integration_status" -eq 0 ] && [ "$modules_status" -eq 0 ] && [ "$browsers_status" -eq 0 ]
