"""Wide-band PESQ (ITU-T P.862.2) MOS-LQO of a recording against the clip that was played.

usage: pesq_score.py REFERENCE.wav DEGRADED.wav

The reference is the bundled clip the speaker looped (any rate, mono); the degraded file is
what `callroom bench quality --record` wrote (48 kHz mono). Both are brought to 16 kHz with
sox beforehand by scripts/bench-pesq.sh. The speaker loops the clip, so the reference is
looped to the recording's length; leading silence is trimmed from both (the listener records
from before the speaker joins), and PESQ's own alignment takes care of the remaining delay.
Prints one line: pesq_wb=X (or exits 1 with a reason).
"""
import sys
import wave

import numpy as np
from pesq import pesq


def read(path):
    with wave.open(path, "rb") as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2:
            sys.exit(f"pesq_score: {path} must be mono 16-bit")
        return w.getframerate(), np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float64)


def trim_leading_silence(x, threshold=300.0):
    loud = np.flatnonzero(np.abs(x) > threshold)
    if loud.size == 0:
        sys.exit("pesq_score: the recording is silent")
    return x[max(0, loud[0] - 160):]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rate_r, ref = read(sys.argv[1])
    rate_d, deg = read(sys.argv[2])
    if rate_r != 16000 or rate_d != 16000:
        sys.exit("pesq_score: both files must be 16 kHz")
    deg = trim_leading_silence(deg)
    ref = trim_leading_silence(ref)
    # Drop the last 0.5 s, where the speaker may already be leaving.
    deg = deg[: max(0, deg.size - 8000)]
    if deg.size < 3 * 16000:
        sys.exit("pesq_score: less than 3 s of recorded speech")
    reps = int(np.ceil(deg.size / ref.size)) + 1
    ref = np.tile(ref, reps)[: deg.size]
    print(f"pesq_wb={pesq(16000, ref, deg, 'wb'):.3f}")


main()
