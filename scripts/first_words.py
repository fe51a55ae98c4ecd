#!/usr/bin/env python3
"""What a listener heard of the first words of someone who talks as they join.

    first_words.py CLIP48.wav HEARD.wav

CLIP48.wav is what the speaker's microphone played from its first frame on (looped); HEARD.wav
what the listener recorded (48 kHz mono, silence before the speaker's audio arrived). The first
0.4 s heard are placed in the clip by cross-correlation: how much of the clip's start was lost,
and the level of the first 150 ms heard is compared with the same 150 ms of the clip (a decoder
that starts on a stream under way plays SILK at about half level for ~130 ms).
Prints: lost_ms=… first_150ms_db=… (0 dB: heard at the clip's level)
"""
import sys
import wave

import numpy as np


def read(path):
    with wave.open(path) as w:
        assert w.getframerate() == 48000 and w.getnchannels() == 1 and w.getsampwidth() == 2, path
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float64)


def main():
    clip, heard = read(sys.argv[1]), read(sys.argv[2])
    sr, n = 48000, len(clip)
    loud = np.nonzero(np.abs(heard) > 200)[0]
    if len(loud) == 0:
        sys.exit("first_words: the listener heard nothing")
    first = int(loud[0])
    # Which part of the clip the first 0.4 s heard are (cross-correlation against the looped
    # clip): the start is played later than the steady state (the jitter buffer sheds its
    # start-up surplus in the first pauses), so it is placed on its own.
    piece = heard[first:first + int(0.4 * sr)]
    if len(piece) < int(0.4 * sr):
        sys.exit("first_words: the recording is too short")
    looped = np.concatenate([clip, clip])
    size = 2 * n + len(piece)
    corr = np.fft.irfft(np.fft.rfft(looped, size) * np.conj(np.fft.rfft(piece, size)), size)[:n]
    position = int(np.argmax(corr))         # the clip position first heard
    if position > n - sr // 2:              # a few ms before the clip's start (the codec's look-ahead)
        position -= n
    span = int(0.15 * sr)
    got = heard[first:first + span]
    want = looped[max(position, 0):max(position, 0) + span]
    db = 20 * np.log10(np.sqrt(np.mean(got ** 2)) / max(np.sqrt(np.mean(want ** 2)), 1e-9))
    print(f"lost_ms={max(0, round(1000 * position / sr))} first_150ms_db={db:.1f}")


main()
