#!/usr/bin/env python3
"""A fault-injecting HTTP proxy in front of an S3-compatible server, for CallRoom's tests.

Every request is forwarded byte for byte (headers, body, the signed Host) to the upstream,
except writes of objects whose key has one of the --prefixes (after any bucket prefix):
  --fail-first N   the first N such writes are answered 503 with S3's ServiceUnavailable XML,
                   as S3 answers when it sheds load (the client must retry)
  --stall-while F  such writes are held without an answer for as long as file F exists
                   (a test kills the client meanwhile), then forwarded
Each request is printed as one line on stdout: "<outcome> <METHOD> <path>".

Usage: s3-fault-proxy.py --port P --upstream http://127.0.0.1:Q [--prefixes a/,b/] [--fail-first N] [--stall-while FILE]
"""
import argparse
import http.client
import http.server
import os
import sys
import threading
import time
import urllib.parse


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--prefixes", default="recordings/,transcripts/")
    ap.add_argument("--fail-first", type=int, default=0)
    ap.add_argument("--stall-while", default=None)
    a = ap.parse_args()
    up = urllib.parse.urlparse(a.upstream)
    prefixes = [p for p in a.prefixes.split(",") if p]
    state = {"failed": 0}
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def say(self, outcome):
            print(f"{outcome} {self.command} {self.path}", flush=True)

        def handle_one(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            path = urllib.parse.urlparse(self.path).path
            key = path.split("/", 2)[2] if path.count("/") >= 2 else ""
            write = self.command in ("PUT", "POST") and any(("/" + p) in ("/" + key) for p in prefixes)
            if write and a.stall_while:
                if os.path.exists(a.stall_while):
                    self.say("stalled")
                while os.path.exists(a.stall_while):
                    time.sleep(0.05)
            if write:
                with lock:
                    fail = state["failed"] < a.fail_first
                    if fail:
                        state["failed"] += 1
                if fail:
                    xml = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>ServiceUnavailable</Code>'
                           b'<Message>Please reduce your request rate.</Message></Error>')
                    self.send_response(503)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(xml)))
                    self.end_headers()
                    self.wfile.write(xml)
                    self.say("failed")
                    return
            conn = http.client.HTTPConnection(up.hostname, up.port, timeout=60)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "transfer-encoding")}
            conn.request(self.command, self.path, body=body if (length or self.command in ("PUT", "POST")) else None, headers=headers)
            r = conn.getresponse()
            data = r.read()
            self.send_response(r.status)
            for k, v in r.getheaders():
                if k.lower() not in ("connection", "transfer-encoding", "content-length", "server", "date"):
                    self.send_header(k, v)
            if self.command == "HEAD":
                self.send_header("Content-Length", r.getheader("Content-Length") or "0")
            else:
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
            conn.close()
            self.say(f"forwarded-{r.status}")

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_one

    server = http.server.ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    print("ready", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
