#!/usr/bin/env python3
"""A browser in a room, measured (issue #37): headless Chromium joins a release callroomd from the
invite link next to a headless terminal (`callroom join --headless`, a 440 Hz tone).

Figures, one run each:
  page_bytes            what the page weighs: HTML + call.js + call.css as served
  join_to_audio_ms      from the click on Join to the terminal's tone sounding in what the browser
                        decodes (WebAudio on the received stream, RMS over 0.01), median of runs
  join_to_first_packet_ms  … to the first audio packet the browser counts (getStats)
  ice_connected_ms      from the click to the peer connection's `connected`
  cpu_us_per_packet     callroomd's CPU (utime + stime) per packet it forwards, over 20 s: two
                        terminals (native legs), then a terminal and a browser (a browser leg);
                        the ratio of the two
  rss_kib_per_leg       callroomd's resident memory with 3 browser legs minus with none, per leg
  mouth_to_ear_ms       clicks both ways between a browser and a terminal participant
                        (`callroom bench peer-latency`: the SDK's real pipeline with a clicking
                        microphone and a listening speaker, times on the wall clock): browser →
                        terminal from the click entering the browser's WebAudio graph from its
                        fake microphone to the click reaching the terminal's ear (its playback
                        queue included); terminal → browser from the click spoken to the click
                        reaching the browser's WebAudio graph from the received track (the
                        browser's own output latency not included: headless, it has no device)

  scripts/bench-browser.sh [--runs N] [--only join|cpu|m2e|memory]

Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe), as the test
suite's HeadlessChromium does. Prints one JSON object.
"""
import json
import os
import re
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

BIN = os.environ["CALLROOM_BIN"]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


class Chromium:
    """One headless Chromium, commands over fds 3 (in) and 4 (out), NUL-separated JSON."""

    def __init__(self, profile, extra=()):
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()
        flags = ["--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--no-first-run", "--disable-gpu",
                 "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--use-fake-device-for-media-stream",
                 "--use-fake-ui-for-media-stream", "--autoplay-policy=no-user-gesture-required", *extra, "about:blank"]
        script = f'exec "$@" 3<&{to_child_r} 4>&{from_child_w}'
        self.proc = subprocess.Popen(["bash", "-c", script, "_", CHROMIUM] + flags, pass_fds=(to_child_r, from_child_w),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(from_child_w)
        self.next_id = 1
        self.pending = b""

    def call(self, method, params=None, session=None, timeout=20):
        ident = self.next_id
        self.next_id += 1
        message = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_child, json.dumps(message).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            while b"\0" in self.pending:
                text, self.pending = self.pending.split(b"\0", 1)
                reply = json.loads(text)
                if reply.get("id") == ident:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply.get("result", {})
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError(method)
            ready, _, _ = select.select([self.from_child], [], [], left)
            if ready:
                chunk = os.read(self.from_child, 65536)
                if not chunk:
                    raise RuntimeError("chromium exited")
                self.pending += chunk

    def open(self, url):
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Runtime.enable", session=session)
        self.call("Page.navigate", {"url": url}, session=session)
        self.wait(session, "document.readyState === 'complete' && !!window.callroom")
        return session

    def eval(self, session, expression, timeout=30):
        r = self.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True,
                                           "userGesture": True}, session=session, timeout=timeout)
        if "exceptionDetails" in r:
            raise RuntimeError(r["exceptionDetails"])
        return r.get("result", {}).get("value")

    def wait(self, session, condition, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.eval(session, f"Boolean({condition})"):
                return True
            time.sleep(0.05)
        raise TimeoutError(condition)

    def close(self):
        try:
            self.call("Browser.close", timeout=3)
        except Exception:
            pass
        self.proc.kill()
        self.proc.wait()


def http(url, method="GET", headers=None, body=None):
    req = urllib.request.Request(url, method=method, headers=headers or {}, data=body.encode() if body else None)
    with urllib.request.urlopen(req) as r:
        return r.read()


def metric(url, name):
    for line in http(url + "/metrics").decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return 0.0


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


# The click, then watching for the terminal's audio: its first packet (getStats) and the first
# time the decoded stream carries sound (WebAudio, RMS over 0.01 in a 512-sample window).
CLICK_TO_AUDIO = """
(async () => {
  const t0 = performance.now();
  document.getElementById('name').value = 'Bench'; document.getElementById('join').click();
  let ice = null, packet = null, an = null, ctx = null;
  const buf = new Float32Array(512);
  for (;;) {
    await new Promise(r => setTimeout(r, 5));
    const now = performance.now() - t0, pc = window.callroom.pc;
    if (now > 20000) return null;
    if (!pc) continue;
    if (ice === null && pc.connectionState === 'connected') ice = now;
    if (packet === null) {
      (await pc.getStats()).forEach(s => { if (s.type === 'inbound-rtp' && s.kind === 'audio' && s.packetsReceived > 0 && packet === null) packet = performance.now() - t0; });
    }
    if (!an) {
      const s = [...window.callroom.streams.values()][0];
      if (s && s.getAudioTracks().length) {
        ctx = new AudioContext(); an = ctx.createAnalyser(); an.fftSize = 512;
        ctx.createMediaStreamSource(s).connect(an);
      }
      continue;
    }
    an.getFloatTimeDomainData(buf);
    let sum = 0;
    for (const v of buf) sum += v * v;
    if (Math.sqrt(sum / buf.length) > 0.01) { ctx.close(); return { audio: performance.now() - t0, ice, packet }; }
  }
})()
"""

# Onsets of clicks in a stream, on the wall clock: a ScriptProcessor of 256 frames on the page's
# AudioContext; an onset is the first sample over 2000/32768 after 100 ms under it (as the
# terminal's OnsetDetector); its time is the callback's, less the samples after it.
WATCH_CLICKS = """
(() => {
  const ctx = new AudioContext();
  window.__clicks = {local: [], remote: []};
  const watch = (stream, out) => {
    const sp = ctx.createScriptProcessor(256, 1, 1);
    let quiet = 0;
    sp.onaudioprocess = (e) => {
      const now = performance.timeOrigin + performance.now(), x = e.inputBuffer.getChannelData(0);
      for (let i = 0; i < x.length; i++) {
        const a = Math.abs(x[i]);
        if (a > 0.061 && quiet >= ctx.sampleRate / 10) { out.push(now - (x.length - i) * 1000 / ctx.sampleRate); quiet = 0; }
        quiet = a < 0.061 ? quiet + 1 : 0;
      }
    };
    ctx.createMediaStreamSource(stream).connect(sp);
    sp.connect(ctx.destination);
  };
  watch(window.callroom.local, window.__clicks.local);
  watch([...window.callroom.streams.values()][0], window.__clicks.remote);
  return ctx.sampleRate;
})()
"""


def click_wav(path, seconds=10, rate=48000):
    """A 50 ms 1 kHz burst every 400 ms (the terminal's MarkerInput's clicks), 16-bit mono."""
    import math
    import struct
    import wave
    frames = bytearray()
    for i in range(seconds * rate):
        k = i % 19200
        frames += struct.pack("<h", int(16000 * math.sin(2 * math.pi * 1000 * k / rate)) if k < 2400 else 0)
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(bytes(frames))


def pair(mouths, ears, skip_until):
    """Each mouth time with the first ear time after it (within 400 ms), after `skip_until`."""
    out, j = [], 0
    ears = sorted(ears)
    for m in sorted(mouths):
        while j < len(ears) and ears[j] < m:
            j += 1
        if j < len(ears) and ears[j] - m < 400 and m > skip_until:
            out.append(ears[j] - m)
            j += 1
    return out


def main():
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 5
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None  # join, cpu, m2e or memory

    def want(section):
        return only is None or only == section
    work = tempfile.mkdtemp(prefix="bench-browser-")
    server = subprocess.Popen([f"{BIN}/callroomd", "--listen", "127.0.0.1:0", "--data-dir", f"{work}/data", "--log-level", "warn"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines = []
    while True:
        line = server.stdout.readline()
        lines.append(line)
        if "listening on http" in line:
            break
    url = re.search(r"http://[0-9.:]+", line).group(0)
    app_id = line.split()[-1]

    def key(name):
        return next(l.split()[-1] for l in lines if name in l)
    api_key, auth_key = key("apiKey"), key("authKey")
    admin = {"apikey": api_key, "appId": app_id, "content-type": "application/json"}
    out = {}
    clients = []
    browsers = []

    def terminal(session, uid, tone):
        p = subprocess.Popen([f"{BIN}/callroom", "join", session, "--server", url, "--uid", uid, "--auth-key", auth_key,
                              "--input", f"tone:{tone}", "--output", "null", "--headless"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        while "onSessionJoined" not in p.stdout.readline():
            pass
        clients.append(p)
        return p

    def invite(session):
        return json.loads(http(url + f"/v3/rooms/{session}/invites", "POST", admin, '{"role":"guest","maxUses":100}'))["data"]["link"]

    try:
        # Page weight: what a browser downloads to show the page.
        link = invite("weight")
        page = http(link)
        out["page_bytes"] = len(page) + len(http(url + "/web/call.js")) + len(http(url + "/web/call.css"))

        if want("join"):
            # Click → first audio, a fresh browser and room each run.
            audio, ice, packets = [], [], []
            for run in range(runs):
                terminal(f"join{run}", "term", 440)
                b = Chromium(f"{work}/profile{run}")
                browsers.append(b)
                s = b.open(invite(f"join{run}"))
                b.wait(s, "window.callroom.local !== null", 10)  # the devices are open, as a person sees the preview
                r = b.eval(s, CLICK_TO_AUDIO)
                if r:
                    audio.append(r["audio"])
                    ice.append(r["ice"])
                    packets.append(r["packet"])
                b.close()
                browsers.remove(b)
                c = clients.pop()
                c.stdin.write("leave\n")
                c.stdin.flush()
                c.wait()
            def summary(values):
                seen = [round(v) for v in values if v is not None]
                return {"median": statistics.median(seen) if seen else None, "runs": seen, "missed": len(values) - len(seen)}
            out["join_to_audio_ms"] = summary(audio)
            out["ice_connected_ms"] = summary(ice)
            out["join_to_first_packet_ms"] = summary(packets)

        if want("cpu"):
            # CPU per forwarded packet: native legs, then a browser leg.
            def cpu_per_packet(seconds=20):
                time.sleep(2)
                c0, f0 = cpu_seconds(server.pid), metric(url, "callroom_relay_packets_forwarded_total")
                time.sleep(seconds)
                c1, f1 = cpu_seconds(server.pid), metric(url, "callroom_relay_packets_forwarded_total")
                return (c1 - c0) * 1e6 / max(1.0, f1 - f0), (f1 - f0) / seconds

            terminal("cpu-native", "a", 440)
            terminal("cpu-native", "b", 660)
            native, native_rate = cpu_per_packet()
            for c in clients:
                c.stdin.write("leave\n")
                c.stdin.flush()
                c.wait()
            clients.clear()
            terminal("cpu-web", "a", 440)
            b = Chromium(f"{work}/profile-cpu")
            browsers.append(b)
            s = b.open(invite("cpu-web"))
            b.wait(s, "window.callroom.local !== null", 10)
            b.eval(s, "document.getElementById('name').value = 'Bench'; document.getElementById('join-audio').click(); true")
            b.wait(s, "window.callroom.pc && window.callroom.pc.connectionState === 'connected'")
            web, web_rate = cpu_per_packet()
            out["cpu_us_per_packet"] = {"native_legs": round(native, 1), "browser_leg": round(web, 1),
                                        "ratio": round(web / native, 2), "packets_per_s": [round(native_rate), round(web_rate)]}
            b.close()
            browsers.remove(b)
            for c in clients:
                c.stdin.write("leave\n")
                c.stdin.flush()
                c.wait()
            clients.clear()

        if want("m2e"):
            # Mouth-to-ear both ways: a browser clicking (its fake microphone plays clicks) and a
            # terminal participant clicking, each listening to the other.
            wav = f"{work}/clicks.wav"
            click_wav(wav)
            b = Chromium(f"{work}/profile-m2e", [f"--use-file-for-fake-audio-capture={wav}"])
            browsers.append(b)
            s = b.open(invite("m2e"))
            b.wait(s, "window.callroom.local !== null", 10)
            # The clicks as the file has them: without the browser's echo canceller, noise suppressor
            # and gain control (they reshape and drop periodic bursts, so onsets would move).
            b.eval(s, "navigator.mediaDevices.getUserMedia({audio: {echoCancellation: false, noiseSuppression: false, autoGainControl: false}}).then(m => { window.callroom.local = m; return true; })")
            b.eval(s, "document.getElementById('name').value = 'Clicker'; document.getElementById('join-audio').click(); true")
            b.wait(s, "window.callroom.pc && window.callroom.pc.connectionState === 'connected'")
            peer = subprocess.Popen([f"{BIN}/callroom", "bench", "peer-latency", "--server", url, "--auth-key", auth_key,
                                     "--session", "m2e", "--seconds", "22"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                b.wait(s, "window.callroom.streams.size === 1 && [...window.callroom.streams.values()][0].getAudioTracks().length === 1", 15)
            except TimeoutError:
                peer.kill()
                sys.exit(f"the browser got no stream from the terminal: {b.eval(s, 'JSON.stringify({streams: window.callroom.streams.size, roster: window.callroom.roster.size, phase: window.callroom.phase})')} {peer.communicate()[1][-2000:]}")
            b.eval(s, WATCH_CLICKS)
            settle = time.time() * 1000 + 3000  # the jitter buffers' first seconds left out
            peer_out, peer_err = peer.communicate(timeout=60)
            clicks = b.eval(s, "window.__clicks")
            peer_times = json.loads(peer_out.strip().splitlines()[-1])
            to_terminal = pair(clicks["local"], peer_times["ears_ms"], settle)
            to_browser = pair(peer_times["mouths_ms"], clicks["remote"], settle)
            def m2e(xs):
                xs = sorted(xs)
                return {"median": round(statistics.median(xs), 1) if xs else None,
                        "p95": round(xs[min(len(xs) - 1, int(0.95 * (len(xs) - 1) + 0.5))], 1) if xs else None, "clicks": len(xs)}
            out["mouth_to_ear_ms"] = {"browser_to_terminal": {**m2e(to_terminal), "spoken": len(clicks["local"]), "heard": len(peer_times["ears_ms"])},
                                      "terminal_to_browser": {**m2e(to_browser), "spoken": len(peer_times["mouths_ms"]), "heard": len(clicks["remote"])},
                                      "terminal_playback_period_ms": peer_times["playback_period_ms"]}
            b.close()
            browsers.remove(b)

        if want("memory"):
            # Memory per browser leg: three browsers in a room against none.
            time.sleep(2)
            before = rss_kib(server.pid)
            terminal("mem", "a", 440)
            for i in range(3):
                b = Chromium(f"{work}/profile-mem{i}")
                browsers.append(b)
                s = b.open(invite("mem"))
                b.wait(s, "window.callroom.local !== null", 10)
                b.eval(s, f"document.getElementById('name').value = 'B{i}'; document.getElementById('join').click(); true")
                b.wait(s, "window.callroom.pc && window.callroom.pc.connectionState === 'connected'")
            time.sleep(5)
            out["rss_kib_per_leg"] = round((rss_kib(server.pid) - before) / 3)
            out["legs"] = metric(url, "callroom_webrtc_legs")
    finally:
        for b in browsers:
            b.close()
        for c in clients:
            c.kill()
        server.terminate()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
