#!/usr/bin/env python3
"""Local stand-ins for Apple's APNs and Google's FCM HTTP v1 (+ OAuth token endpoint), for tests
and benchmarks: HTTP/2 over TLS (h2 only, like APNs), checking what the real services check and
answering what they answer.

  push-standin.py fixtures DIR
      writes a test CA (ca.pem), a server certificate for 127.0.0.1/localhost signed by it
      (server.pem, server-key.pem), an APNs .p8 key (apns.p8, mode 600) and its public key,
      and an RSA key for a service account (fcm-key.pem, mode 600) and its public key.

  push-standin.py serve DIR --log FILE [options]
      listens on 127.0.0.1 (a free port unless --port), prints the port on stdout, writes
      DIR/service-account.json (mode 600) whose token_uri points here, and appends one JSON
      line per request to FILE: {service, path, headers, body, status, reason, at}.

APNs (POST /3/device/<token>), as documented by Apple ("Sending notification requests to APNs",
"Handling notification responses from APNs"): provider JWT verified with the team's key (ES256,
kid, iss, at most an hour old), apns-topic, apns-push-type, apns-priority, apns-expiration,
apns-id, payload size (5120 bytes for voip, 4096 otherwise); answers 200 + apns-id, or 400/403/
405/410/413/429 with {"reason": ...} (410 adds "timestamp").
FCM (POST /v1/projects/<id>/messages:send) and OAuth (POST /token, JWT-bearer grant, RS256):
as documented by Google; answers 200 {"name"}, or 400 INVALID_ARGUMENT, 401 UNAUTHENTICATED,
403 PERMISSION_DENIED, 404 NOT_FOUND with errorCode UNREGISTERED, 429 QUOTA_EXCEEDED.
"""
import argparse
import base64
import datetime
import ipaddress
import json
import os
import re
import secrets
import socket
import ssl
import sys
import threading
import time
import uuid

import h2.config
import h2.connection
import h2.events
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.x509.oid import NameOID

FCM_SCOPE = "https://www.googleapis.com/auth/firebase.messaging"


def b64url_decode(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def write_private(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, 0o600)


def pem_private(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def pem_public(key):
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def fixtures(d):
    os.makedirs(d, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "CallRoom test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    srv_key = ec.generate_private_key(ec.SECP256R1())
    srv = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
           .issuer_name(ca_name).public_key(srv_key.public_key()).serial_number(x509.random_serial_number())
           .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
           .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                          critical=False)
           .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
           .sign(ca_key, hashes.SHA256()))
    with open(os.path.join(d, "ca.pem"), "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(os.path.join(d, "server.pem"), "wb") as f:
        f.write(srv.public_bytes(serialization.Encoding.PEM))
    write_private(os.path.join(d, "server-key.pem"), pem_private(srv_key))
    apns = ec.generate_private_key(ec.SECP256R1())
    write_private(os.path.join(d, "apns.p8"), pem_private(apns))
    with open(os.path.join(d, "apns-public.pem"), "wb") as f:
        f.write(pem_public(apns))
    fcm = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    write_private(os.path.join(d, "fcm-key.pem"), pem_private(fcm))
    with open(os.path.join(d, "fcm-public.pem"), "wb") as f:
        f.write(pem_public(fcm))


class JWTError(Exception):
    pass


def verify_jwt(token, public_key, alg):
    """Returns (header, claims) of a signature-checked JWT, else raises JWTError."""
    try:
        h64, c64, s64 = token.split(".")
        header = json.loads(b64url_decode(h64))
        claims = json.loads(b64url_decode(c64))
        sig = b64url_decode(s64)
    except Exception:
        raise JWTError("malformed")
    if header.get("alg") != alg:
        raise JWTError("alg is not " + alg)
    signed = (h64 + "." + c64).encode()
    try:
        if alg == "ES256":
            if len(sig) != 64:
                raise JWTError("ES256 signature is not 64 bytes")
            der = encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))
            public_key.verify(der, signed, ec.ECDSA(hashes.SHA256()))
        else:
            public_key.verify(sig, signed, padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        raise JWTError("bad signature")
    return header, claims


class StandIn:
    def __init__(self, args):
        self.args = args
        d = args.dir
        self.apns_key = serialization.load_pem_public_key(open(os.path.join(d, "apns-public.pem"), "rb").read())
        self.fcm_key = serialization.load_pem_public_key(open(os.path.join(d, "fcm-public.pem"), "rb").read())
        self.lock = threading.Lock()
        self.log = open(args.log, "a", buffering=1)
        # APNs device tokens are hex in any case; FCM registration tokens are case-sensitive.
        self.unregistered = set(args.unregistered) | set(t.lower() for t in args.unregistered)
        self.throttle = args.throttle
        self.expire_first = args.expire_first_provider_token
        self.expired_jwts = set()
        self.last_jwt_iat = None
        self.access_tokens = {}
        self.revoke_first_access = args.revoke_first_access_token
        self.token_uri = None

    def record(self, service, path, headers, body, status, reason):
        with self.lock:
            self.log.write(json.dumps({"service": service, "path": path, "headers": headers, "body": body.decode("utf-8", "replace"),
                                       "status": status, "reason": reason, "at": time.time()}) + "\n")

    # --- APNs -----------------------------------------------------------------------------
    def apns(self, method, path, h, body):
        def err(status, reason, extra=None):
            b = {"reason": reason}
            if extra:
                b.update(extra)
            return status, [("apns-id", h.get("apns-id") or str(uuid.uuid4()))], json.dumps(b).encode(), reason
        if method != "POST":
            return err(405, "MethodNotAllowed")
        token = path[len("/3/device/"):]
        if "apns-id" in h:
            try:
                uuid.UUID(h["apns-id"])
            except ValueError:
                return err(400, "BadMessageId")
        auth = h.get("authorization", "")
        if not auth.lower().startswith("bearer "):
            return err(403, "MissingProviderToken")
        jwt = auth[7:].strip()
        try:
            header, claims = verify_jwt(jwt, self.apns_key, "ES256")
        except JWTError:
            return err(403, "InvalidProviderToken")
        if header.get("kid") != self.args.key_id or claims.get("iss") != self.args.team_id or not isinstance(claims.get("iat"), int):
            return err(403, "InvalidProviderToken")
        now = int(time.time())
        with self.lock:
            if self.expire_first:
                self.expire_first = False
                self.expired_jwts.add(jwt)
            expired = jwt in self.expired_jwts
            if not expired and self.last_jwt_iat is not None and claims["iat"] != self.last_jwt_iat[0]:
                # A new provider token: more often than every 20 minutes is refused, unless the
                # previous one was answered ExpiredProviderToken.
                if claims["iat"] - self.last_jwt_iat[0] < 1200 and not self.last_jwt_iat[1]:
                    return err(429, "TooManyProviderTokenUpdates")
            if not expired:
                self.last_jwt_iat = (claims["iat"], False)
            elif self.last_jwt_iat is None or self.last_jwt_iat[0] == claims["iat"]:
                self.last_jwt_iat = (claims["iat"], True)
        if expired or now - claims["iat"] > 3600:
            return err(403, "ExpiredProviderToken")
        topic = h.get("apns-topic")
        if not topic:
            return err(400, "MissingTopic")
        push_type = h.get("apns-push-type")
        if push_type not in ("alert", "background", "voip", "complication", "fileprovider", "mdm", "location", "liveactivity", "pushtotalk"):
            return err(400, "InvalidPushType")
        allowed = {self.args.bundle: "alert", self.args.bundle + ".voip": "voip"}
        if topic not in allowed:
            return err(400, "TopicDisallowed")
        if push_type == "voip" and not topic.endswith(".voip"):
            return err(400, "InvalidPushType")
        if "apns-priority" in h and h["apns-priority"] not in ("5", "10", "1"):
            return err(400, "BadPriority")
        if "apns-expiration" in h and not re.fullmatch(r"\d+", h["apns-expiration"]):
            return err(400, "BadExpirationDate")
        if not re.fullmatch(r"[0-9a-fA-F]{64}", token):
            return err(400, "BadDeviceToken")
        if not body:
            return err(400, "PayloadEmpty")
        if len(body) > (5120 if push_type == "voip" else 4096):
            return err(413, "PayloadTooLarge")
        try:
            if not isinstance(json.loads(body), dict):
                raise ValueError
        except ValueError:
            return err(400, "BadPayload")
        with self.lock:
            if self.throttle > 0:
                self.throttle -= 1
                return err(429, "TooManyRequests")
        if token.lower() in self.unregistered:
            return err(410, "Unregistered", {"timestamp": int(time.time() * 1000)})
        if self.args.delay_ms:
            time.sleep(self.args.delay_ms / 1000)
        return 200, [("apns-id", h.get("apns-id") or str(uuid.uuid4()))], b"", None

    # --- OAuth + FCM ----------------------------------------------------------------------
    def oauth(self, method, h, body):
        def err(status, error, desc):
            return status, [("content-type", "application/json; charset=utf-8")], json.dumps(
                {"error": error, "error_description": desc}).encode(), error
        if method != "POST":
            return err(405, "invalid_request", "POST only")
        if not h.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            return err(400, "invalid_request", "Content-Type must be application/x-www-form-urlencoded")
        from urllib.parse import parse_qs
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return err(400, "unsupported_grant_type", "Invalid grant_type: " + form.get("grant_type", ""))
        try:
            _, claims = verify_jwt(form.get("assertion", ""), self.fcm_key, "RS256")
        except JWTError:
            return err(400, "invalid_grant", "Invalid JWT Signature.")
        now = int(time.time())
        if claims.get("iss") != self.args.client_email:
            return err(400, "invalid_grant", "Invalid JWT: iss")
        if FCM_SCOPE not in str(claims.get("scope", "")).split(" "):
            return err(400, "invalid_scope", "Invalid OAuth scope or ID token audience provided.")
        if claims.get("aud") != self.token_uri:
            return err(400, "invalid_grant", "Invalid JWT: aud")
        iat, exp = claims.get("iat"), claims.get("exp")
        if not isinstance(iat, int) or not isinstance(exp, int) or exp - iat > 3600 or exp <= now or iat > now + 300:
            return err(400, "invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.")
        token = "ya29.standin-" + secrets.token_hex(16)
        with self.lock:
            self.access_tokens[token] = now + 3599
        return 200, [("content-type", "application/json; charset=utf-8")], json.dumps(
            {"access_token": token, "expires_in": 3599, "token_type": "Bearer"}).encode(), None

    def fcm(self, method, path, h, body):
        def err(status, st, message, code=None):
            e = {"code": status, "message": message, "status": st}
            if code:
                e["details"] = [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": code}]
            return status, [("content-type", "application/json; charset=UTF-8")], json.dumps({"error": e}).encode(), code or st
        m = re.fullmatch(r"/v1/projects/([^/]+)/messages:send", path)
        if method != "POST":
            return err(405, "INVALID_ARGUMENT", "POST only")
        auth = h.get("authorization", "")
        token = auth[7:].strip() if auth.startswith("Bearer ") else None
        with self.lock:
            known = token in self.access_tokens and self.access_tokens[token] > time.time()
            if known and self.revoke_first_access:
                self.revoke_first_access = False
                del self.access_tokens[token]
                known = False
        if not known:
            return err(401, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token.")
        if m.group(1) != self.args.project:
            return err(403, "PERMISSION_DENIED", "Permission 'cloudmessaging.messages.create' denied on resource.", "SENDER_ID_MISMATCH")
        try:
            msg = json.loads(body)["message"]
        except Exception:
            return err(400, "INVALID_ARGUMENT", "Invalid JSON payload received.", "INVALID_ARGUMENT")
        targets = [k for k in ("token", "topic", "condition") if k in msg]
        if len(targets) != 1:
            return err(400, "INVALID_ARGUMENT", "Exactly one of token, topic or condition is required.", "INVALID_ARGUMENT")
        data = msg.get("data", {})
        if not isinstance(data, dict) or any(not isinstance(v, str) for v in data.values()):
            return err(400, "INVALID_ARGUMENT", "Invalid value at 'message.data': values must be strings.", "INVALID_ARGUMENT")
        android = msg.get("android", {})
        if android.get("priority", "normal").lower() not in ("normal", "high"):
            return err(400, "INVALID_ARGUMENT", "Invalid value at 'message.android.priority'.", "INVALID_ARGUMENT")
        if "ttl" in android and not re.fullmatch(r"\d+(\.\d{1,9})?s", android["ttl"]):
            return err(400, "INVALID_ARGUMENT", "Invalid value at 'message.android.ttl'.", "INVALID_ARGUMENT")
        if len(json.dumps(data).encode()) > 4096:
            return err(400, "INVALID_ARGUMENT", "Android message is too big.", "INVALID_ARGUMENT")
        if msg.get("token") in self.unregistered:
            return err(404, "NOT_FOUND", "Requested entity was not found.", "UNREGISTERED")
        with self.lock:
            if self.throttle > 0:
                self.throttle -= 1
                return err(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", "QUOTA_EXCEEDED")
        return 200, [("content-type", "application/json; charset=UTF-8")], json.dumps(
            {"name": "projects/%s/messages/0:%s" % (m.group(1), secrets.token_hex(8))}).encode(), None

    # --- HTTP/2 ---------------------------------------------------------------------------
    def respond(self, h, body):
        method, path = h.get(":method"), h.get(":path", "")
        if path.startswith("/3/device/"):
            service, r = "apns", self.apns(method, path, h, body)
        elif path == "/token":
            service, r = "oauth", self.oauth(method, h, body)
        elif path.startswith("/v1/projects/"):
            service, r = "fcm", self.fcm(method, path, h, body)
        else:
            service, r = "none", (404, [], b"", "NotFound")
        status, headers, out, reason = r
        self.record(service, path, {k: v for k, v in h.items() if not k.startswith(":")}, body, status, reason)
        return status, headers, out

    def connection(self, sock):
        conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        conn.initiate_connection()
        sock.sendall(conn.data_to_send())
        streams = {}
        try:
            while True:
                data = sock.recv(65535)
                if not data:
                    return
                for ev in conn.receive_data(data):
                    if isinstance(ev, h2.events.RequestReceived):
                        streams[ev.stream_id] = [{k.lower(): v for k, v in ev.headers}, b""]
                    elif isinstance(ev, h2.events.DataReceived):
                        streams[ev.stream_id][1] += ev.data
                        conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                    elif isinstance(ev, h2.events.StreamEnded):
                        h, body = streams.pop(ev.stream_id)
                        status, headers, out = self.respond(h, body)
                        hdrs = [(":status", str(status))] + headers + [("content-length", str(len(out)))]
                        conn.send_headers(ev.stream_id, hdrs, end_stream=not out)
                        if out:
                            conn.send_data(ev.stream_id, out, end_stream=True)
                    elif isinstance(ev, h2.events.ConnectionTerminated):
                        return
                out = conn.data_to_send()
                if out:
                    sock.sendall(out)
        except (ssl.SSLError, OSError):
            return
        finally:
            sock.close()

    def serve(self):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(os.path.join(self.args.dir, "server.pem"), os.path.join(self.args.dir, "server-key.pem"))
        ctx.set_alpn_protocols(["h2"])
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", self.args.port))
        ls.listen(64)
        port = ls.getsockname()[1]
        self.token_uri = "https://127.0.0.1:%d/token" % port
        sa = {"type": "service_account", "project_id": self.args.project, "private_key_id": "standin-key-1",
              "private_key": open(os.path.join(self.args.dir, "fcm-key.pem")).read(), "client_email": self.args.client_email,
              "client_id": "1", "token_uri": self.token_uri}
        write_private(os.path.join(self.args.dir, "service-account.json"), json.dumps(sa, indent=2).encode())
        print(port, flush=True)
        while True:
            raw, _ = ls.accept()
            threading.Thread(target=self.accepted, args=(ctx, raw), daemon=True).start()

    def accepted(self, ctx, raw):
        try:
            sock = ctx.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            raw.close()
            return
        if sock.selected_alpn_protocol() != "h2":
            # APNs speaks only HTTP/2.
            sock.close()
            return
        self.connection(sock)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fixtures")
    f.add_argument("dir")
    s = sub.add_parser("serve")
    s.add_argument("dir")
    s.add_argument("--log", required=True)
    s.add_argument("--port", type=int, default=0)
    s.add_argument("--team-id", default="TEAM123456")
    s.add_argument("--key-id", default="KEY1234567")
    s.add_argument("--bundle", default="com.example.callroom")
    s.add_argument("--project", default="callroom-test")
    s.add_argument("--client-email", default="push@callroom-test.iam.gserviceaccount.com")
    s.add_argument("--unregistered", action="append", default=[], help="a token the service answers 410 / UNREGISTERED for")
    s.add_argument("--throttle", type=int, default=0, help="answer the first N pushes 429")
    s.add_argument("--expire-first-provider-token", action="store_true", help="answer the first provider JWT ExpiredProviderToken")
    s.add_argument("--revoke-first-access-token", action="store_true", help="answer the first FCM access token's first use 401")
    s.add_argument("--delay-ms", type=int, default=0)
    a = ap.parse_args()
    if a.cmd == "fixtures":
        fixtures(a.dir)
    else:
        StandIn(a).serve()


if __name__ == "__main__":
    sys.exit(main())
