#!/usr/bin/env python3
"""A CallRoom client written from docs/protocol.md alone, as a third party would write one.

It logs in over REST, joins a session on the signalling WebSocket (or rings someone first:
`hello`, `initiateCall`, and the call's room once they accept; `endCall` at the end), binds its UDP socket to the
relay (bind, challenge, response), sends a tone as Opus in SRTP (AEAD_AES_128_GCM, keys derived
as the document says, the level extension on every packet), and decrypts and decodes what the
others send (taking the primary out of redundant RED packets). No CallRoom code is used: the
WebSocket is written here over a socket, Opus is libopus through ctypes, AES is `cryptography`.

It prints one JSON object: what it joined, what it received and verified, and how strong each
asked-for frequency is in what it heard. `IntegrationTests/ProtocolClientTests` runs it beside
the real `callroom` client; it is also a starting point for anyone implementing the protocol.

usage: protocol_client.py --server http://HOST:PORT --auth-key KEY --uid UID (--session ID | --ring UID)
                          [--tone HZ] [--seconds S] [--listen-for HZ,HZ,...]
"""
import argparse
import base64
import ctypes
import ctypes.util
import hashlib
import hmac
import json
import math
import os
import socket
import struct
import sys
import threading
import time
import urllib.request
from urllib.parse import urlparse

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM


# ---- REST ------------------------------------------------------------------------------------

def rest(base, method, path, headers, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers=dict(headers, **({"Content-Type": "application/json"} if data else {})))
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())["data"]


# ---- WebSocket (RFC 6455, client side) -------------------------------------------------------

class WebSocket:
    def __init__(self, host, port, path, subprotocol):
        self.sock = socket.create_connection((host, port), timeout=10)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                           f"Sec-WebSocket-Protocol: {subprotocol}\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise RuntimeError("the server closed during the handshake")
            head += chunk
        head, self.buffer = head.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        if not lines[0].startswith("HTTP/1.1 101"):
            raise RuntimeError("no upgrade: " + lines[0])
        accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        fields = {l.split(":", 1)[0].strip().lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
        if fields.get("sec-websocket-accept") != accept:
            raise RuntimeError("wrong Sec-WebSocket-Accept")
        self.sock.settimeout(None)
        self.lock = threading.Lock()

    def send(self, message, opcode=0x1):
        payload = json.dumps(message).encode() if opcode == 0x1 else message
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        with self.lock:
            self.sock.sendall(head + mask + masked)

    def _read(self, n):
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def receive(self):
        """The next text message as JSON; answers pings; None at the close."""
        message = b""
        while True:
            try:
                b0, b1 = self._read(2)
            except EOFError:
                return None
            opcode, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(n)  # (the server never masks)
            if opcode == 0x9:
                self.send(payload, opcode=0xA)
                continue
            if opcode == 0x8:
                return None
            if opcode in (0x1, 0x0):
                message += payload
                if b0 & 0x80:
                    return json.loads(message)


# ---- Opus (libopus through ctypes) -----------------------------------------------------------

opus = ctypes.CDLL(ctypes.util.find_library("opus") or "libopus.so.0")
opus.opus_encoder_create.restype = ctypes.c_void_p
opus.opus_decoder_create.restype = ctypes.c_void_p
opus.opus_encode.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int16), ctypes.c_int, ctypes.c_char_p, ctypes.c_int32]
opus.opus_decode.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_int16), ctypes.c_int, ctypes.c_int]
RATE, FRAME = 48000, 960  # 20 ms


def opus_encoder():
    err = ctypes.c_int()
    return opus.opus_encoder_create(RATE, 1, 2048, ctypes.byref(err))  # OPUS_APPLICATION_VOIP


def opus_decoder():
    err = ctypes.c_int()
    return opus.opus_decoder_create(RATE, 1, ctypes.byref(err))


# ---- SRTP, AEAD_AES_128_GCM (RFC 3711 key derivation, RFC 7714) ------------------------------

def session_keys(master28):
    key, salt = master28[:16], master28[16:] + b"\x00\x00"
    ecb = Cipher(algorithms.AES(key), modes.ECB()).encryptor()

    def prf(label, n):
        x = bytearray(salt)
        x[7] ^= label
        stream = b"".join(ecb.update(bytes(x) + struct.pack(">H", i)) for i in range((n + 15) // 16))
        return stream[:n]
    return prf(0x00, 16), prf(0x02, 12)


def header_length(packet):
    cc, x = packet[0] & 0x0F, packet[0] & 0x10
    n = 12 + 4 * cc
    if x:
        n += 4 + 4 * struct.unpack(">H", packet[n + 2:n + 4])[0]
    return n


def gcm_nonce(salt, ssrc, roc, seq):
    iv = b"\x00\x00" + struct.pack(">IIH", ssrc, roc, seq)
    return bytes(a ^ b for a, b in zip(iv, salt))


class Sender:
    def __init__(self, master28, epoch, ssrc):
        self.key, self.salt = session_keys(master28)
        self.epoch, self.ssrc, self.seq, self.roc = epoch, ssrc, int.from_bytes(os.urandom(2), "big") & 0x7FFF, 0

    def protect(self, timestamp, level, speech, payload):
        header = struct.pack(">BBHII", 0x90, 111, self.seq, timestamp, self.ssrc)
        header += struct.pack(">HH", 0xBEDE, 1) + bytes([0x10, (0x80 if speech else 0) | level, 0, 0])
        sealed = AESGCM(self.key).encrypt(gcm_nonce(self.salt, self.ssrc, self.roc, self.seq), payload, header)
        self.seq = (self.seq + 1) & 0xFFFF
        if self.seq == 0:
            self.roc += 1
        return header + sealed + bytes([self.epoch])


class Receiver:
    """Every sender's keys by (ssrc, epoch); the rollover counter guessed per RFC 3711 §3.3.1."""

    def __init__(self):
        self.keys, self.highest = {}, {}

    def install(self, entry):
        self.keys[(entry["ssrc"], entry["epoch"])] = session_keys(base64.urlsafe_b64decode(entry["key"] + "=" * (-len(entry["key"]) % 4)))

    def unprotect(self, packet):
        if len(packet) < 12 + 17:
            return None
        ssrc, seq = struct.unpack(">I", packet[8:12])[0], struct.unpack(">H", packet[2:4])[0]
        keys = self.keys.get((ssrc, packet[-1]))
        if keys is None:
            return None
        roc, s_l = self.highest.get(ssrc, (0, None))
        guess = roc
        if s_l is not None:
            if s_l < 32768 and seq - s_l > 32768:
                guess = roc - 1
            elif s_l >= 32768 and s_l - 32768 > seq:
                guess = roc + 1
        n = header_length(packet)
        try:
            plain = AESGCM(keys[0]).decrypt(gcm_nonce(keys[1], ssrc, guess, seq), packet[n:-1], packet[:n])
        except Exception:
            return None
        if s_l is None or (guess, seq) > (roc, s_l):
            self.highest[ssrc] = (guess, seq)
        return ssrc, packet[1] & 0x7F, plain


def primary_of_red(payload):
    """RFC 2198: skip the 4-byte headers while F=1, the 1-byte header, the repeated blocks."""
    i, lengths = 0, []
    while i < len(payload) and payload[i] & 0x80:
        if i + 4 > len(payload):
            return None
        lengths.append(((payload[i + 2] & 0x03) << 8) | payload[i + 3])
        i += 4
    i += 1 + sum(lengths)
    return payload[i:] if i <= len(payload) else None


def tone_strength_db(samples, hz):
    """Goertzel power at hz against the signal's whole power, in dB."""
    if not samples:
        return -200.0
    k = 2 * math.cos(2 * math.pi * hz / RATE)
    s1 = s2 = 0.0
    for x in samples:
        s1, s2 = x + k * s1 - s2, s1
    power = s1 * s1 + s2 * s2 - k * s1 * s2
    total = sum(x * x for x in samples) * len(samples) / 2
    if total < len(samples) ** 2:  # below about -90 dBFS: silence, no tone at all
        return -200.0
    return 10 * math.log10(max(power, 1e-9) / max(total, 1e-9))


def check_worked_example():
    """protocol.md's "SRTP, worked": the same bytes, or this client is wrong before it starts."""
    sender = Sender(bytes.fromhex("000102030405060708090a0b0c0d0e0fa0a1a2a3a4a5a6a7a8a9aaab"), 7, 0xCAFEBABE)
    sender.seq = 0x1234
    packet = sender.protect(0x0001E240, 30, True, bytes.fromhex("f8fffe0102030405"))
    assert packet.hex() == ("906f12340001e240cafebabebede0001109e0000" "96547b74ad677280"
                            "0cdc18f9c2b082fd007a4205a54678e0" "07"), packet.hex()


# ---- the client ------------------------------------------------------------------------------

def wait_for(ws, predicate, seconds):
    """The first message that satisfies `predicate` within `seconds` (others skipped), or None."""
    ws.sock.settimeout(seconds)
    try:
        while True:
            m = ws.receive()
            if m is None or predicate(m):
                return m
    except (socket.timeout, OSError):
        return None
    finally:
        ws.sock.settimeout(None)


def ring(url, auth_token, callee):
    """"Ringing calls": online with `hello`, `initiateCall`, the `call` events up to `accepted`.
    The presence connection stays open: the call is hung up on it (`endCall`)."""
    presence = WebSocket(url.hostname, url.port, "/v1/signal", "callroom-signal")
    presence.send({"type": "hello", "authToken": auth_token})
    welcome = wait_for(presence, lambda m: m["type"] in ("welcome", "error"), 5)
    if not welcome or welcome["type"] != "welcome":
        return {"error": welcome or "no welcome"}
    presence.send({"type": "initiateCall", "receiverId": callee, "receiverType": "user", "callType": "audio"})
    events = []
    initiated = wait_for(presence, lambda m: m["type"] == "error" or (m["type"] == "call" and m["event"] == "initiated"), 5)
    if not initiated or initiated["type"] == "error":
        return {"error": initiated}
    events.append("initiated")
    answer = wait_for(presence, lambda m: m["type"] == "call" and m["call"]["sessionId"] == initiated["call"]["sessionId"]
                      and m["event"] != "initiated", 20)
    if not answer or answer["event"] != "accepted":
        return {"error": answer}
    events.append("accepted")
    return {"sessionId": answer["call"]["sessionId"], "status": answer["call"]["status"], "events": events, "presence": presence}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--auth-key", required=True)
    ap.add_argument("--uid", required=True)
    ap.add_argument("--session", help="the session to join (or --ring)")
    ap.add_argument("--ring", metavar="UID", help="ring this user (hello, initiateCall) and join the call once accepted")
    ap.add_argument("--tone", type=float, default=880)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--listen-for", default="440")
    a = ap.parse_args()
    check_worked_example()
    url = urlparse(a.server)
    app = rest(a.server, "GET", "/v3/app", {})
    login = rest(a.server, "POST", "/v3/sdk/login", {"appId": app["appId"]},
                 {"uid": a.uid, "authKey": a.auth_key, "name": a.uid.capitalize()})
    call = None
    if a.ring:
        call = ring(url, login["authToken"], a.ring)
        if "error" in call:
            print(json.dumps(call))
            return 1
        a.session = call["sessionId"]
    if not a.session:
        ap.error("--session or --ring")
    token = rest(a.server, "POST", "/v3.0/call_tokens", {"appId": app["appId"], "authToken": login["authToken"]},
                 {"sessionId": a.session})["token"]

    ws = WebSocket(url.hostname, url.port, "/v1/signal", "callroom-signal")
    ws.send({"type": "join", "v": 1, "callToken": token, "sessionId": a.session, "displayName": a.uid.capitalize(),
             "audioMuted": False, "videoPaused": False, "sessionType": "voice"})
    joined = ws.receive()
    if not joined or joined.get("type") != "joined":
        print(json.dumps({"error": joined}))
        return 1
    me = joined["you"]
    receiver = Receiver()
    own = joined["mediaKeys"][0]
    assert own["ssrc"] == me["ssrc"], "the first key is the joiner's own"
    for entry in joined["mediaKeys"][1:]:
        receiver.install(entry)
    sender = Sender(base64.urlsafe_b64decode(own["key"] + "=" * (-len(own["key"]) % 4)), own["epoch"], me["ssrc"])
    names = {p["ssrc"]: p["uid"] for p in joined["participants"]}
    events, state = [], {"left": False}

    def signalling():
        while True:
            m = ws.receive()
            if m is None:
                return
            events.append(m["type"])
            if m["type"] == "mediaKeys":
                for entry in m["keys"]:
                    if entry["ssrc"] != me["ssrc"]:
                        receiver.install(entry)
            elif m["type"] in ("participantJoined",):
                names[m["participant"]["ssrc"]] = m["participant"]["uid"]
            elif m["type"] == "left":
                state["left"] = True
    threading.Thread(target=signalling, daemon=True).start()

    # Binding and consent.
    relay = (joined.get("mediaHost") or url.hostname, joined["mediaPort"])
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.settimeout(0.2)
    k = bytes.fromhex(joined["bindToken"])
    ssrc_be = struct.pack(">I", me["ssrc"])
    bind = b"CRB2" + ssrc_be + hmac.new(k, b"CRB2" + ssrc_be, hashlib.sha256).digest()[:16]
    bound = threading.Event()
    received = {"packets": 0, "verified": 0, "red": 0, "pcm": {}}
    decoders = {}

    def media_in():
        while not state["left"]:
            try:
                data, _ = udp.recvfrom(2048)
            except socket.timeout:
                continue
            except OSError:
                return
            if data[:4] == b"CRC1" and len(data) == 24 and data[4:8] == ssrc_be:
                nonce = data[8:24]
                udp.sendto(b"CRR1" + ssrc_be + nonce + hmac.new(k, b"CRR1" + ssrc_be + nonce, hashlib.sha256).digest()[:16], relay)
                bound.set()
            elif data[:4] == b"CRA1":
                bound.set()
            elif len(data) > 12 and data[0] >> 6 == 2:
                received["packets"] += 1
                opened = receiver.unprotect(data)
                if opened is None:
                    continue
                ssrc, pt, payload = opened
                received["verified"] += 1
                if pt == 63:
                    received["red"] += 1
                    payload = primary_of_red(payload)
                if not payload:
                    continue
                dec = decoders.setdefault(ssrc, opus_decoder())
                pcm = (ctypes.c_int16 * (FRAME * 6))()
                n = opus.opus_decode(dec, payload, len(payload), pcm, FRAME * 6, 0)
                if n > 0:
                    received["pcm"].setdefault(ssrc, []).extend(pcm[:n])
    threading.Thread(target=media_in, daemon=True).start()
    deadline = time.monotonic() + 5
    while not bound.is_set() and time.monotonic() < deadline:
        udp.sendto(bind, relay)
        bound.wait(0.2)
    if not bound.is_set():
        print(json.dumps({"error": "the relay never challenged the bind"}))
        return 1

    # The tone, 20 ms a packet, with reports every 2 s on what arrives.
    enc = opus_encoder()
    out = ctypes.create_string_buffer(4000)
    start, frame, timestamp = time.monotonic(), 0, int.from_bytes(os.urandom(4), "big")
    last_report = start
    while time.monotonic() - start < a.seconds:
        pcm = (ctypes.c_int16 * FRAME)(*[int(8000 * math.sin(2 * math.pi * a.tone * (frame * FRAME + i) / RATE)) for i in range(FRAME)])
        n = opus.opus_encode(enc, pcm, FRAME, out, 4000)
        level = int(min(127, -20 * math.log10(8000 / math.sqrt(2) / 32768)))
        udp.sendto(sender.protect(timestamp, level, True, out.raw[:n]), relay)
        frame += 1
        timestamp = (timestamp + FRAME) & 0xFFFFFFFF
        if time.monotonic() - last_report >= 2 and received["pcm"]:
            ws.send({"type": "receiverReport", "reports": [{"ssrc": s, "lossPercent": 0} for s in received["pcm"]]})
            last_report = time.monotonic()
        time.sleep(max(0, start + frame * 0.02 - time.monotonic()))
    if call:
        # Hanging up: endCall, and leave the room once `ended` answers it.
        call["presence"].send({"type": "endCall", "sessionId": a.session})
        ended = wait_for(call["presence"], lambda m: m["type"] == "call" and m["event"] == "ended", 5)
        call["events"].append(ended and ended["event"])
        call["status"] = ended and ended["call"]["status"]
    ws.send({"type": "leave"})
    deadline = time.monotonic() + 5
    while not state["left"] and time.monotonic() < deadline:
        time.sleep(0.05)

    heard = {}
    for ssrc, samples in received["pcm"].items():
        tail = samples[len(samples) // 4:]  # past the first packets
        heard[names.get(ssrc, str(ssrc))] = {"seconds": round(len(samples) / RATE, 2),
                                             **{hz: round(tone_strength_db(tail, float(hz)), 1) for hz in a.listen_for.split(",")}}
    print(json.dumps({"joined": joined["sessionId"], "pid": me["pid"], "ssrc": me["ssrc"], "left": state["left"],
                      "sentPackets": frame, "receivedPackets": received["packets"], "verifiedPackets": received["verified"],
                      "redPackets": received["red"], "heard": heard, "events": sorted(set(events)),
                      **({"call": {k: v for k, v in call.items() if k != "presence"}} if call else {})}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
