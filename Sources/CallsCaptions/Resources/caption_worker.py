"""What CallRoom's caption workers share: the pipe protocol callroomd speaks to them and the
guards on what a model writes.

A worker (whisper-worker.py, moonshine-worker.py) loads its model and calls `serve`:
  in  (stdin):  one JSON line {"id": N, "samples": S, "pass": "partial"|"final"}, then S samples
                of 16 kHz mono s16le PCM. A partial pass is a guess while someone speaks (fast);
                a final pass is the utterance's caption.
  out (stdout): {"ready": true, "model": NAME} once the model is loaded ({"ready": false,
                "error": "..."} and status 1 when it cannot be: `load`), then one JSON line per
                request, in the order they came: {"id": N, "text": "...", "ms": recognition
                milliseconds} ({"id": N, "error": "..."} for a request it could not do;
                {"id": N, "text": "", "superseded": true, …} for a partial the worker cut short
                because another request was waiting behind it)
A request line that does not parse, or more samples than `max_samples`, ends the worker with
status 2 (the stream is out of step: callroomd starts another); the end of input ends it with 0.
"""
import json
import os
import re
import select
import sys
import time
import zlib

# Text that gzip shrinks more than this is a model repeating itself (Whisper's own fallback
# threshold).
MAX_COMPRESSION_RATIO = 2.4


def max_tokens(samples):
    """The most tokens a pass may write for `samples` of 16 kHz audio: 16 + 8 a second — more
    than anyone says (≈ 4–6 a second with punctuation), and a bound on a model looping on a blip
    of sound (Whisper's "thank you for watching, see you in the next video, …" to its 448-token
    limit took 2.5 s of a core)."""
    return min(440, 16 + int(8 * samples / 16000))


def cut_loop(text):
    """`text` up to where it starts again three words it said two to twelve words before ("Quick
    up, get from. Quick up get from, Quick up" → "Quick up, get from."; "… to a person? Can a
    machine tell when it is tal" → "… to a person?"); unchanged when it does not."""
    spans = [(m.start(), m.group(0).lower()) for m in re.finditer(r"[\w']+", text)]
    words = [w for _, w in spans]
    for i in range(2, len(words) - 2):
        for n in range(2, min(12, i) + 1):
            if words[i:i + 3] == words[i - n:i - n + 3]:
                return text[:spans[i][0]].rstrip(" ,;-")
    return text


def compression_ratio(text):
    data = text.encode("utf-8")
    return len(data) / max(1, len(zlib.compress(data)))


def is_loop(text):
    """Whether `text` is a model looping (gzip shrinks it more than `MAX_COMPRESSION_RATIO`)."""
    return compression_ratio(text) > MAX_COMPRESSION_RATIO


class Input:
    """Standard input read without Python's buffering, so `waiting()` can tell whether another
    request has come (in this buffer or on the pipe) without blocking."""

    def __init__(self, fd=0):
        self.fd = fd
        self.buffer = bytearray()
        self.ended = False

    def _fill(self):
        chunk = os.read(self.fd, 1 << 16)
        self.buffer += chunk
        self.ended = not chunk
        return len(chunk) > 0

    def readline(self):
        """A line with its newline; what is left at the end of input (b"" for nothing)."""
        while True:
            nl = self.buffer.find(b"\n")
            if nl >= 0:
                line = bytes(self.buffer[:nl + 1])
                del self.buffer[:nl + 1]
                return line
            if len(self.buffer) > 1 << 16 or not self._fill():
                line = bytes(self.buffer)
                self.buffer.clear()
                return line

    def read(self, n):
        """`n` bytes, fewer at the end of input."""
        while len(self.buffer) < n and self._fill():
            pass
        data = bytes(self.buffer[:n])
        del self.buffer[:n]
        return data

    def waiting(self):
        """Whether a byte of another request is here (the end of input is not one)."""
        if not self.buffer and not self.ended and select.select([self.fd], [], [], 0)[0]:
            self._fill()
        return bool(self.buffer)


class Superseded(Exception):
    """Raised by a recogniser that stopped a partial pass because another request was waiting."""


def load(make):
    """The model `make()` returns. When it cannot load (a missing or broken model, a setting its
    library refuses) the worker says why on the protocol, {"ready": false, "error": "..."}, and
    ends with status 1: callroomd reports the reason, not only that the worker exited."""
    try:
        return make()
    except Exception as e:
        sys.stdout.write(json.dumps({"ready": False, "error": f"{type(e).__name__}: {e}"[:300]}) + "\n")
        sys.stdout.flush()
        sys.exit(1)


def serve(model_name, recognise, max_samples):
    """Answers requests until the end of input: `recognise(audio, kind, waiting)` gets the
    request's samples as float32 in [-1, 1), "partial" or "final", and a function that says
    whether another request is waiting (a partial pass may then raise `Superseded`), and returns
    the text. Any other exception it raises is that request's error, not the worker's end."""
    import numpy as np
    out = sys.stdout
    inp = Input()

    def write(reply):
        out.write(json.dumps(reply) + "\n")
        out.flush()

    write({"ready": True, "model": model_name})
    while True:
        line = inp.readline()
        if not line:
            return 0
        try:
            req = json.loads(line)
            rid = int(req["id"])
            n = int(req["samples"])
            kind = req.get("pass", "final")
            if kind not in ("partial", "final"):
                raise ValueError(kind)
        except (ValueError, KeyError, TypeError, AttributeError):
            write({"id": -1, "error": "bad request line"})
            return 2
        if not 0 <= n <= max_samples:
            write({"id": rid, "error": "too many samples"})
            return 2
        data = inp.read(2 * n)
        if len(data) != 2 * n:
            return 0
        started = time.monotonic()
        try:
            audio = np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0
            reply = {"id": rid, "text": recognise(audio, kind, inp.waiting)}
        except Superseded:
            reply = {"id": rid, "text": "", "superseded": True}
        except Exception as e:  # a decoder failure is this request's, not the worker's
            reply = {"id": rid, "error": str(e)[:200]}
        reply["ms"] = int((time.monotonic() - started) * 1000)
        write(reply)
