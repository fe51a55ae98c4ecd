"""Drives one call for scripts/bench-recording-pesq.sh: the mixed recording against what a
participant heard, both scored with wide-band PESQ against the clip that was said.

usage: recording_pesq.py BIN_DIR CLIP.wav SECONDS WORK_DIR

A real callroomd (BIN_DIR/callroomd, fresh data directory) and two headless `callroom join`
clients: the listener joins first (the moderator), starts the server's recording and writes
what it hears to a WAV file; then the speaker joins and loops CLIP. After SECONDS the recording
stops and its mixed file is fetched over REST (apikey). Prints the paths: heard=… mixed=…
"""
import json
import os
import subprocess
import sys
import time
import urllib.request

bin_dir, clip, seconds, work = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
data = os.path.join(work, "data")


def wait_line(p, needle, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        line = p.stdout.readline()
        if not line:
            if p.poll() is not None:
                break
            continue
        if needle in line:
            return line
    sys.exit(f"recording_pesq: never saw {needle!r}")


server = subprocess.Popen([os.path.join(bin_dir, "callroomd"), "--data-dir", data, "--listen", "127.0.0.1:0", "--log-level", "warn"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
try:
    url = wait_line(server, "callroomd listening on").split()[3]
    keys = json.load(open(os.path.join(data, "keys.json")))

    def join(uid, inp, out):
        return subprocess.Popen([os.path.join(bin_dir, "callroom"), "join", "pesq", "--server", url, "--uid", uid,
                                 "--auth-key", keys["authKey"], "--input", inp, "--output", out, "--headless"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)

    heard = os.path.join(work, "heard.wav")
    listener = join("lee", "null", "file:" + heard)
    wait_line(listener, "onSessionJoined")
    listener.stdin.write("start-recording\n")
    listener.stdin.flush()
    wait_line(listener, "onRecordingStarted")
    speaker = join("sam", "file:" + clip, "null")
    wait_line(speaker, "onSessionJoined")
    time.sleep(seconds)
    listener.stdin.write("stop-recording\n")
    listener.stdin.flush()
    wait_line(listener, "onRecordingStopped")
    mixed_url = track_url = None
    for _ in range(100):
        req = urllib.request.Request(url + "/v3/calls/pesq", headers={"apikey": keys["apiKey"]})
        call = json.load(urllib.request.urlopen(req))["data"]
        recs = call.get("recordings") or []
        if recs and recs[0].get("endTime") and len(recs[0].get("files", [])) >= 2:
            mixed_url = recs[0]["recordingURL"]
            track_url = next((f["url"] for f in recs[0]["files"] if f.get("uid") == "sam"), None)
            break
        time.sleep(0.1)
    if not mixed_url:
        sys.exit("recording_pesq: the recording never finished")
    mixed = os.path.join(work, "mixed.opus")
    with open(mixed, "wb") as f:
        f.write(urllib.request.urlopen(urllib.request.Request(mixed_url, headers={"apikey": keys["apiKey"]})).read())
    if track_url:  # the speaker's own file: their packets as they came, never re-encoded
        with open(os.path.join(work, "speaker.opus"), "wb") as f:
            f.write(urllib.request.urlopen(urllib.request.Request(track_url, headers={"apikey": keys["apiKey"]})).read())
    for c in (speaker, listener):
        c.stdin.write("leave\n")
        c.stdin.flush()
    for c in (speaker, listener):
        c.wait(timeout=10)
    print(f"heard={heard} mixed={mixed}")
finally:
    server.terminate()
    server.wait(timeout=10)
