#!/usr/bin/env python3
"""Load generator for murmur (Mumble's server), the peer of CallRoom's relay in
scripts/bench-relay-murmur.sh: ROOMS channels of PER bots each, every bot a real Mumble 1.3
client — TLS control connection (Version, Authenticate, UserState to enter its channel, pings),
then Opus voice over UDP sealed with the session's OCB2-AES128 keys from CryptSetup, 50 packets a
second — and counts what murmur forwards to each bot. Server CPU comes from /proc/PID/stat over
the measured window, as scripts/bench-relay.sh reads callroomd's.

Written from Mumble's protocol documentation (the TCP framing and Mumble.proto's field numbers,
the UDP voice packet and its varints, OCB2 as Mumble's CryptState applies it).

usage: bench_murmur.py --port P --server-pid PID --superuser-password PW --rooms R --per-room N
                       [--duration S] [--payload BYTES]
Prints one line of key=value figures.
"""
import argparse
import os
import select
import socket
import ssl
import struct
import sys
import time

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

MASK128 = (1 << 128) - 1

# TCP message types (Mumble.proto's order).
VERSION, UDP_TUNNEL, AUTHENTICATE, PING, REJECT, SERVER_SYNC = 0, 1, 2, 3, 4, 5
CHANNEL_STATE, USER_STATE, PERMISSION_DENIED, CRYPT_SETUP = 7, 9, 12, 15


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, value):
    """A protobuf field: an int (varint), bool, str or bytes (length-delimited)."""
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    if isinstance(value, str):
        value = value.encode()
    return varint(number << 3 | 2) + varint(len(value)) + value


def parse(payload):
    """A protobuf message as {field number: [values]} (varints as ints, the rest as bytes)."""
    fields, i = {}, 0
    while i < len(payload):
        key, i = read_varint(payload, i)
        number, kind = key >> 3, key & 7
        if kind == 0:
            value, i = read_varint(payload, i)
        elif kind == 2:
            length, i = read_varint(payload, i)
            value, i = payload[i:i + length], i + length
        elif kind == 5:
            value, i = payload[i:i + 4], i + 4
        elif kind == 1:
            value, i = payload[i:i + 8], i + 8
        else:
            raise ValueError(f"wire type {kind}")
        fields.setdefault(number, []).append(value)
    return fields


def read_varint(data, i):
    shift = value = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def mumble_varint(n):
    """Mumble's own variable-length integer (PacketDataStream), used in UDP packets."""
    if n < 0x80:
        return bytes([n])
    if n < 0x4000:
        return bytes([(n >> 8) | 0x80, n & 0xFF])
    if n < 0x200000:
        return bytes([(n >> 16) | 0xC0, (n >> 8) & 0xFF, n & 0xFF])
    if n < 0x10000000:
        return bytes([(n >> 24) | 0xE0, (n >> 16) & 0xFF, (n >> 8) & 0xFF, n & 0xFF])
    return b"\xf0" + struct.pack(">I", n)


def double(b):
    """Multiplication by x in GF(2^128), the block as a big-endian integer (OCB's doubling)."""
    return ((b << 1) & MASK128) ^ (0x87 if b >> 127 else 0)


class OCB2:
    """OCB2-AES128 as Mumble seals UDP: the 16-byte nonce is incremented (byte 0 first) before
    each packet; the packet is nonce[0], the tag's first 3 bytes, then the ciphertext."""

    def __init__(self, key, encrypt_iv):
        self.ecb = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
        self.iv = bytearray(encrypt_iv)

    def aes(self, n):
        return int.from_bytes(self.ecb.update(n.to_bytes(16, "big")), "big")

    def seal(self, plain):
        for i in range(16):
            self.iv[i] = (self.iv[i] + 1) & 0xFF
            if self.iv[i]:
                break
        delta = int.from_bytes(self.ecb.update(bytes(self.iv)), "big")
        checksum, out, pos = 0, bytearray(), 0
        while len(plain) - pos > 16:
            delta = double(delta)
            p = int.from_bytes(plain[pos:pos + 16], "big")
            out += (self.aes(delta ^ p) ^ delta).to_bytes(16, "big")
            checksum ^= p
            pos += 16
        rest = len(plain) - pos
        delta = double(delta)
        pad = self.aes((rest * 8) ^ delta).to_bytes(16, "big")
        checksum ^= int.from_bytes(plain[pos:] + pad[rest:], "big")
        out += bytes(a ^ b for a, b in zip(plain[pos:], pad))
        tag = self.aes((delta ^ double(delta)) ^ checksum).to_bytes(16, "big")
        return bytes([self.iv[0]]) + tag[:3] + bytes(out)


class Bot:
    def __init__(self, port, name, password=""):
        raw = socket.create_connection(("127.0.0.1", port))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        self.tcp = context.wrap_socket(raw)
        self.buffer = b""
        self.session = None
        self.crypt = None
        self.channels = {}
        self.send(VERSION, field(1, 0x010304) + field(2, "bench_murmur") + field(3, "Linux") + field(4, "bench"))
        self.send(AUTHENTICATE, field(1, name) + (field(2, password) if password else b"") + field(5, True))
        while self.session is None or self.crypt is None:
            self.handle(self.read())
        self.sequence = 0

    def send(self, kind, payload):
        self.tcp.sendall(struct.pack(">HI", kind, len(payload)) + payload)

    def read(self):
        while True:
            if len(self.buffer) >= 6:
                kind, length = struct.unpack(">HI", self.buffer[:6])
                if len(self.buffer) >= 6 + length:
                    payload, self.buffer = self.buffer[6:6 + length], self.buffer[6 + length:]
                    return kind, payload
            data = self.tcp.recv(65536)
            if not data:
                raise ConnectionError("murmur closed the control connection")
            self.buffer += data

    def handle(self, message):
        kind, payload = message
        if kind == REJECT:
            raise ConnectionError(f"rejected: {parse(payload).get(2, [b'?'])[0].decode()}")
        if kind == SERVER_SYNC:
            self.session = parse(payload)[1][0]
        elif kind == CRYPT_SETUP:
            f = parse(payload)
            self.crypt = OCB2(f[1][0], f[2][0])
        elif kind == CHANNEL_STATE:
            f = parse(payload)
            if 3 in f:
                self.channels[f[3][0].decode()] = f[1][0]
        elif kind == PERMISSION_DENIED:
            raise PermissionError(f"permission denied: {parse(payload)}")
        return kind

    def drain(self):
        """Reads what murmur sent on the control connection (user states, pings) and drops it."""
        try:
            while self.tcp.recv(65536):
                pass
        except (ssl.SSLWantReadError, BlockingIOError):
            pass

    def open_udp(self, port):
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.udp.bind(("127.0.0.1", 0))
        self.udp.connect(("127.0.0.1", port))
        self.udp.setblocking(False)

    def voice(self, payload):
        plain = b"\x80" + mumble_varint(self.sequence) + mumble_varint(len(payload)) + payload
        self.sequence += 1
        self.udp.send(self.crypt.seal(plain))


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--port", type=int, required=True)
    a.add_argument("--server-pid", type=int, required=True)
    a.add_argument("--superuser-password", required=True)
    a.add_argument("--rooms", type=int, required=True)
    a.add_argument("--per-room", type=int, required=True)
    a.add_argument("--duration", type=float, default=10)
    a.add_argument("--payload", type=int, default=80)
    args = a.parse_args()

    admin = Bot(args.port, "SuperUser", args.superuser_password)
    names = [f"room-{r}" for r in range(args.rooms)]
    for name in names:
        if name not in admin.channels:
            admin.send(CHANNEL_STATE, field(2, 0) + field(3, name))
    deadline = time.time() + 10
    while not all(n in admin.channels for n in names):
        if time.time() > deadline:
            sys.exit("bench_murmur: murmur did not make the channels")
        admin.handle(admin.read())
    rss_before = rss_kib(args.server_pid)

    bots = []
    for r, name in enumerate(names):
        for i in range(args.per_room):
            bot = Bot(args.port, f"bot-{r}-{i}")
            bot.send(USER_STATE, field(1, bot.session) + field(5, admin.channels[name]))
            bot.open_udp(args.port)
            bots.append(bot)
    for bot in bots + [admin]:
        bot.tcp.setblocking(False)
    rss_after = rss_kib(args.server_pid)

    poller = select.epoll()
    by_fd = {}
    for bot in bots:
        poller.register(bot.udp.fileno(), select.EPOLLIN)
        by_fd[bot.udp.fileno()] = bot
    payload = os.urandom(args.payload)
    warmup = 2.0
    start = time.monotonic()
    measuring = False
    received = sent = 0
    cpu0 = tick = 0.0
    next_ping = start + 5
    while True:
        now = time.monotonic()
        if not measuring and now - start >= warmup:
            measuring, received, sent, cpu0, window = True, 0, 0, cpu_seconds(args.server_pid), now
        if measuring and now - window >= args.duration:
            break
        if now >= tick:
            for bot in bots:
                bot.voice(payload)
            sent += len(bots)
            tick = (tick or now) + 0.02
        if now >= next_ping:
            for bot in bots + [admin]:
                bot.send(PING, field(1, int(now * 1000)))
                bot.drain()
            next_ping += 5
        for fd, _ in poller.poll(max(0.0, tick - time.monotonic())):
            sock = by_fd[fd].udp
            try:
                while True:
                    sock.recv(2048)
                    received += 1
            except BlockingIOError:
                pass
    elapsed = time.monotonic() - window
    cpu = cpu_seconds(args.server_pid) - cpu0
    expected = sent * (args.per_room - 1)
    print(f"rooms={args.rooms} per_room={args.per_room} seconds={elapsed:.1f} sent={sent} forwarded={received} "
          f"expected={expected} delivered={100 * received / max(1, expected):.1f}% "
          f"server_cpu={100 * cpu / elapsed:.1f}% us_per_forwarded={1e6 * cpu / max(1, received):.2f} "
          f"server_rss_mib={rss_after / 1024:.1f} rss_per_participant_kib={(rss_after - rss_before) / len(bots):.0f}")


if __name__ == "__main__":
    main()
