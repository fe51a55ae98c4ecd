#!/usr/bin/env bash
# Regenerates the synthetic participants' speech clips in Resources/clips with free tools:
# espeak-ng (speech synthesis) and sox (resampling to 16 kHz mono, normalising, trimming).
# Debian packages: espeak-ng sox. The clips are committed; this script documents how they were made.
set -euo pipefail
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/../Resources/clips"
say() {  # say NAME VOICE PITCH SPEED TEXT
  espeak-ng -v "$2" -p "$3" -s "$4" -w "/tmp/$1.raw.wav" "$5"
  sox "/tmp/$1.raw.wav" -r 16000 -c 1 -b 16 "$1.wav" norm -3 silence 1 0.05 0.5% reverse silence 1 0.05 0.5% reverse pad 0 0.4
  rm -f "/tmp/$1.raw.wav"
}
say ada     en-gb+f3          60 160 "Good morning everyone. I finished the analytical engine notes yesterday, so the review can start today."
say grace   en-us+f4          55 165 "Quick update from me: the compiler passes every test now, and I found one more bug. A real moth, this time."
say alan    en-gb-x-rp        40 150 "I have a question about the test plan. Can a machine tell whether it is talking to a person or to another machine?"
say kat     en-us+f2          65 170 "The trajectory numbers check out. I ran them twice by hand, and the results agree to the last digit."
say claude  en-gb-scotland    45 155 "Let me add one thing about the channel capacity. With this much noise we should send a little redundancy."
# What each clip says, for the captions' word error rate (callroom bench captions).
sed -n 's/^say \([a-z]*\) .*"\(.*\)"$/\1\t\2/p' "$self" > transcripts.tsv
