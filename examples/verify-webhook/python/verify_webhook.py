#!/usr/bin/python3
"""A shop's receiver of waitroom's events in Python.

It checks each POST's Waitroom-Signature against the shared secret, refuses
a signature more than 5 minutes from now (a replay), and acts on each event
id once, however many times it is delivered (delivery is at least once).
The standard library only.

    WEBHOOK_SECRET_FILE=webhook-secret /usr/bin/python3 verify_webhook.py
    waitroom serve --webhook http://127.0.0.1:3001/hooks --webhook-secret-file webhook-secret

Settings (environment): LISTEN (127.0.0.1:3001), WEBHOOK_SECRET_FILE (the
file given to --webhook-secret-file; its trailing newline dropped).
"""

import hashlib
import hmac
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# How far a signature's timestamp may be from this server's clock, in
# seconds: older is a replay (or a clock badly off), refused.
TOLERANCE = 5 * 60

with open(os.environ["WEBHOOK_SECRET_FILE"], "rb") as f:
    SECRET = f.read().rstrip(b"\r\n")


class Malformed(Exception):
    pass


class Refused(Exception):
    pass


def verify(header, body, now=None):
    """Checks header (t=<unix seconds>,v1=<hex>[,v1=...]) against the raw
    body: one v1 must be HMAC-SHA256(secret, "<t>.<body>"), and t within
    TOLERANCE of now. Raises Malformed, or Refused."""
    t, sigs = "", []
    for part in (header or "").split(","):
        k, _, v = part.strip().partition("=")
        if k == "t":
            t = v
        elif k == "v1":
            sigs.append(v)
    if not t.isdigit() or not sigs:
        raise Malformed("no Waitroom-Signature of the form t=...,v1=...")
    want = hmac.new(SECRET, t.encode() + b"." + body, hashlib.sha256).hexdigest()
    if not any(hmac.compare_digest(s.encode("latin-1", "replace"), want.encode()) for s in sigs):  # constant time
        raise Refused("the signature is not the shared secret's")
    if abs((time.time() if now is None else now) - int(t)) > TOLERANCE:
        raise Refused("signed more than %d s from now" % TOLERANCE)


# The ids acted on. One process only: a real shop keeps them in its
# database, in the transaction that acts on the event.
seen = set()
seen_lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        # The signature is over the body as received: verify before parsing.
        try:
            verify(self.headers.get("Waitroom-Signature"), body)
        except Malformed as e:
            return self.answer(400, {"error": str(e)})
        except Refused as e:
            return self.answer(401, {"error": str(e)})
        try:
            event = json.loads(body)
        except ValueError:
            return self.answer(400, {"error": "not an event"})
        if not isinstance(event, dict) or not isinstance(event.get("id"), str) or not event["id"]:
            return self.answer(400, {"error": "not an event"})
        with seen_lock:
            duplicate = event["id"] in seen
            seen.add(event["id"])
        if not duplicate:
            print("event %s: %s of queue %s at %s %s" % (
                event["id"], event.get("type"), event.get("queue"), event.get("at"), event.get("data")), file=sys.stderr)
        # 2xx either way: a duplicate is delivered, and must not be sent again.
        self.answer(200, {"received": True, "duplicate": duplicate})

    def answer(self, status, body):
        raw = (json.dumps(body) + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args):
        pass


def main():
    host, _, port = (os.environ.get("LISTEN") or "127.0.0.1:3001").rpartition(":")
    server = ThreadingHTTPServer((host, int(port)), Handler)
    print("listening on %s:%d" % server.server_address[:2], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
