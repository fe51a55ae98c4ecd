#!/usr/bin/env python3
"""A terminal stand-in for tests of the call screen's pixel graphics: runs a command on a pty of
a given size (cells and pixels), answers the terminal queries a graphics-capable terminal answers
(the kitty graphics query, Primary Device Attributes), types keys at given times, and records
everything the command writes.

  graphics-terminal.py --answer kitty|sixel|none --size 120x40 --cell 10x20 --out FILE
                       [--keys 6:q,6.4:q,8:x] [--timeout 20] -- COMMAND [ARG...]

--answer kitty: answers the kitty query with OK (and DA1 without sixel), as kitty does;
sixel: DA1 with attribute 4, as xterm -ti vt340 / foot / mlterm do; none: DA1 only.
Exit status: the command's (124 when it had to be killed at --timeout).
"""
import argparse, fcntl, os, pty, select, signal, struct, sys, termios, time

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--answer", choices=["kitty", "sixel", "none"], required=True)
    ap.add_argument("--size", default="120x40")
    ap.add_argument("--cell", default="10x20")
    ap.add_argument("--out", required=True)
    ap.add_argument("--keys", default="")
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        ap.error("no command")
    cols, rows = (int(v) for v in a.size.split("x"))
    cw, ch = (int(v) for v in a.cell.split("x"))
    keys = []
    for item in filter(None, a.keys.split(",")):
        t, k = item.split(":", 1)
        keys.append((float(t), k.encode()))
    pid, fd = pty.fork()
    if pid == 0:
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, cols * cw, rows * ch))
        os.execvp(cmd[0], cmd)
    start = time.monotonic()
    log = bytearray()
    scanned = 0
    status = None
    with open(a.out, "wb") as out:
        while True:
            now = time.monotonic() - start
            while keys and keys[0][0] <= now:
                os.write(fd, keys.pop(0)[1])
            if now > a.timeout:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                status = 124
                break
            r, _, _ = select.select([fd], [], [], 0.05)
            if r:
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    data = b""
                if not data:
                    break
                out.write(data)
                log += data
                # Answer the queries as they arrive, in order (a terminal answers in order).
                while True:
                    k = log.find(b"\x1b_Gi=31,", scanned)
                    d = log.find(b"\x1b[c", scanned)
                    hits = [h for h in (k, d) if h >= 0]
                    if not hits:
                        scanned = max(scanned, len(log) - 16)
                        break
                    first = min(hits)
                    if first == k:
                        if a.answer == "kitty":
                            os.write(fd, b"\x1b_Gi=31;OK\x1b\\")
                        scanned = k + 8
                    else:
                        os.write(fd, b"\x1b[?62;4;22c" if a.answer == "sixel" else b"\x1b[?62;22c")
                        scanned = d + 3
    if status is None:
        _, st = os.waitpid(pid, 0)
        status = os.waitstatus_to_exitcode(st)
    sys.exit(status if status >= 0 else 128 - status)

if __name__ == "__main__":
    main()
