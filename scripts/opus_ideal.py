"""The codec's own best case for scripts/bench-pesq.sh: the same clip through libopus alone,
offline, with the settings CallRoom's clients use (48 kHz mono, VoIP, the encoder's own
voice/music analysis, 32 kb/s by default, complexity 9, in-band FEC tuned to the loss rate,
20 ms frames), random packet loss at the given rate, and each lost frame recovered from the
next packet's FEC when that one arrived, concealed otherwise. No network, no jitter buffer, no
timing. Scored like the pipeline's recording: wide-band PESQ against the looped clip.

With BURST (mean packets per loss burst), losses come in bursts: a two-state Gilbert model with
the same overall rate, as `callroom bench quality --burst` draws them.

BITRATE (b/s, default 32000) is the sender's.

usage: opus_ideal.py CLIP48.wav REF16.wav LOSS_PCT SEED [BURST [BITRATE]]
Prints one line: ideal_pesq_wb=X plc_only_pesq_wb=Y
"""
import ctypes
import ctypes.util
import random
import subprocess
import sys
import tempfile
import wave

import numpy as np
from pesq import pesq

FRAME = 960
OPUS_APPLICATION_VOIP = 2048
SET_BITRATE, SET_COMPLEXITY, SET_INBAND_FEC, SET_PACKET_LOSS_PERC = 4002, 4010, 4012, 4014


def read(path):
    with wave.open(path, "rb") as w:
        return w.getframerate(), np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)


def main():
    if len(sys.argv) not in (5, 6, 7):
        sys.exit(__doc__)
    clip48, ref16, loss, seed = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    burst = float(sys.argv[5]) if len(sys.argv) >= 6 else 1.0
    bitrate = int(sys.argv[6]) if len(sys.argv) == 7 else 32000
    name = ctypes.util.find_library("opus") or "libopus.so.0"
    lib = ctypes.CDLL(name)
    lib.opus_encoder_create.restype = ctypes.c_void_p
    lib.opus_decoder_create.restype = ctypes.c_void_p
    err = ctypes.c_int()
    rate, x = read(clip48)
    if rate != 48000:
        sys.exit("opus_ideal: the clip must be 48 kHz mono 16-bit")
    x = np.tile(x, 3)
    enc = ctypes.c_void_p(lib.opus_encoder_create(48000, 1, OPUS_APPLICATION_VOIP, ctypes.byref(err)))
    for request, value in [(SET_BITRATE, bitrate), (SET_COMPLEXITY, 9), (SET_INBAND_FEC, 1),
                           (SET_PACKET_LOSS_PERC, int(round(loss)))]:
        lib.opus_encoder_ctl(enc, request, ctypes.c_int(value))
    packets, out = [], (ctypes.c_ubyte * 1500)()
    for i in range(0, x.size - FRAME + 1, FRAME):
        frame = np.ascontiguousarray(x[i:i + FRAME])
        n = lib.opus_encode(enc, frame.ctypes.data_as(ctypes.POINTER(ctypes.c_int16)), FRAME, out, 1500)
        if n <= 0:
            sys.exit(f"opus_ideal: opus_encode failed ({n})")
        packets.append(bytes(out[:n]))
    lib.opus_encoder_destroy(enc)
    rng = random.Random(seed)
    if burst <= 1 or loss <= 0 or loss >= 100:
        lost = [rng.random() * 100 < loss for _ in packets]
    else:
        leave = 1 / burst
        enter = leave * loss / (100 - loss)
        lost, bad = [], False
        for _ in packets:
            bad = rng.random() >= leave if bad else rng.random() < enter
            lost.append(bad)
    _, ref = read(ref16)
    ref = np.tile(ref.astype(np.float64), 3)

    def score(use_fec):
        dec = ctypes.c_void_p(lib.opus_decoder_create(48000, 1, ctypes.byref(err)))
        pcm = np.zeros(FRAME, dtype=np.int16)
        dst = pcm.ctypes.data_as(ctypes.POINTER(ctypes.c_int16))
        heard = []
        for i, p in enumerate(packets):
            if not lost[i]:
                lib.opus_decode(dec, (ctypes.c_ubyte * len(p)).from_buffer_copy(p), len(p), dst, FRAME, 0)
            elif use_fec and i + 1 < len(packets) and not lost[i + 1]:
                q = packets[i + 1]
                lib.opus_decode(dec, (ctypes.c_ubyte * len(q)).from_buffer_copy(q), len(q), dst, FRAME, 1)
            else:
                lib.opus_decode(dec, None, 0, dst, FRAME, 0)
            heard.append(pcm.copy())
        lib.opus_decoder_destroy(dec)
        with tempfile.TemporaryDirectory() as d:
            with wave.open(f"{d}/48.wav", "wb") as w:
                w.setnchannels(1)
                w.setsampwidth(2)
                w.setframerate(48000)
                w.writeframes(np.concatenate(heard).tobytes())
            subprocess.run(["sox", f"{d}/48.wav", "-r", "16000", f"{d}/16.wav"], check=True)
            _, deg = read(f"{d}/16.wav")
        m = min(ref.size, deg.size)
        return pesq(16000, ref[:m], deg[:m].astype(np.float64), "wb")

    print(f"ideal_pesq_wb={score(True):.3f} plc_only_pesq_wb={score(False):.3f}")


main()
