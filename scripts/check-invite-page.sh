#!/usr/bin/env bash
# Checks the invite page in a real browser: headless Chromium (Debian's `chromium`, installed
# when missing — about 300 MB, so this is a check script, not part of the test suite) loads
# GET /call/SESSION from a callroomd with a publicURL and someone in the call, and
#   - its DOM (as the browser parsed it) names the call, who is in it (a hostile display name
#     shown as text, never run), the `callroom join` line with the public link, the app link;
#   - a screenshot is written (default invite-page.png) for a human to look at.
#
#   scripts/check-invite-page.sh [--out FILE.png]
set -euo pipefail
cd "$(dirname "$0")/.."
out="$PWD/invite-page.png"
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out="$(realpath -m "${2:?--out needs a file}")"; shift 2 ;;
        -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "check-invite-page: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
if ! command -v chromium >/dev/null 2>&1; then
    echo "check-invite-page: installing chromium" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi
bash scripts/install-deps.sh --core
swift build --product callroomd --product callroom > /dev/null 2>&1 || swift build > /dev/null
bin="$(swift build --show-bin-path)"
work="$(mktemp -d)"
server=""; member=""
cleanup() { for p in $server $member; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
echo '{"publicURL": "https://calls.example.com"}' > "$work/config.json"
"$bin/callroomd" --config "$work/config.json" --listen 127.0.0.1:0 --data-dir "$work/data" --auth-key check-key \
    --log-level warn > "$work/server.out" 2> "$work/server.err" &
server=$!
for _ in $(seq 100); do grep -q listening "$work/server.out" && break; sleep 0.1; done
url="$(grep -o 'http://[0-9.:]*' "$work/server.out" | head -1)"
[ -n "$url" ] || { cat "$work/server.err" >&2; exit 1; }
# Someone in the call, with a name that would be markup if it were not escaped (headless: it
# stays until its input ends).
sleep 120 | "$bin/callroom" join standup --server "$url" --uid mallory --name '<b>Mallory</b> & "co"' --auth-key check-key \
    --headless --input tone:440 --output null > "$work/member.out" 2>&1 &
member=$!
for _ in $(seq 100); do curl -sf "$url/call/standup" | grep -q "One person is in the call now" && break; sleep 0.1; done
flags=(--headless=new --no-sandbox --disable-gpu --hide-scrollbars --window-size=900,700)
chromium "${flags[@]}" --dump-dom "$url/call/standup" > "$work/dom.html" 2> "$work/chromium.err"
chromium "${flags[@]}" --screenshot="$out" "$url/call/standup" >> "$work/chromium.err" 2>&1
fail() { echo "check-invite-page: FAIL: $1" >&2; cat "$work/dom.html" >&2; exit 1; }
grep -q "Join the call standup" "$work/dom.html" || fail "the page does not name the call"
grep -q "One person is in the call now" "$work/dom.html" || fail "the page does not say how many are in the call"
grep -q "Mallory" "$work/dom.html" && fail "the page names who is in the call (anyone with the link reads it)"
grep -q "callroom join https://calls.example.com/call/standup" "$work/dom.html" || fail "no callroom join line with the public link"
grep -q 'href="callroom://call/standup"' "$work/dom.html" || fail "no app link"
[ -s "$out" ] || fail "no screenshot"
echo "check-invite-page: OK — Chromium $(chromium --version 2>/dev/null | awk '{print $2}') rendered $url/call/standup; screenshot: $out"
