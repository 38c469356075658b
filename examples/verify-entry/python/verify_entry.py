#!/usr/bin/python3
"""A shop's protected handler in Python behind `waitroom proxy`.

Before it sells, it checks the X-Waitroom-Entry header the gateway adds
(docs/gateway.md) against the gateway's key set, and keeps the entry's jti
under a unique key so that one entry buys once. Debian's python3-jwt (PyJWT)
and python3-cryptography; nothing else beyond the standard library.

    WAITROOM_JWKS_URL=http://127.0.0.1:8080/_waitroom/.well-known/jwks.json \\
      /usr/bin/python3 verify_entry.py
    waitroom proxy --upstream http://127.0.0.1:3000 --protect 'POST /buy'

Settings (environment): LISTEN (127.0.0.1:3000), WAITROOM_JWKS_URL,
WAITROOM_QUEUE (the queue guarding the route, "default"),
WAITROOM_ENTRY_ISSUER and WAITROOM_ENTRY_AUDIENCE (checked when set),
USED_ENTRIES_DB (the SQLite file of spent entries, used-entries.db).
"""

import datetime
import json
import os
import sqlite3
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import jwt

LISTEN = os.environ.get("LISTEN") or "127.0.0.1:3000"
QUEUE = os.environ.get("WAITROOM_QUEUE") or "default"
ISSUER = os.environ.get("WAITROOM_ENTRY_ISSUER") or None
AUDIENCE = os.environ.get("WAITROOM_ENTRY_AUDIENCE") or None
# The clock difference between the gateway and this server that exp, iat
# and nbf forgive.
LEEWAY = 5
REFETCH_AFTER = 10  # s: at most one key set fetch for unknown kids this often

# The gateway's key set, fetched again when a kid is not in it (a key
# rotated in), at most once every REFETCH_AFTER seconds.
jwks = jwt.PyJWKClient(
    os.environ.get("WAITROOM_JWKS_URL") or "http://127.0.0.1:8080/_waitroom/.well-known/jwks.json"
)
keys = None  # kid → key, once fetched
fetched_at = None

db = sqlite3.connect(os.environ.get("USED_ENTRIES_DB") or "used-entries.db")
# The unique key: a second use of one entry cannot insert its jti.
db.execute(
    "CREATE TABLE IF NOT EXISTS used_entries"
    " (jti TEXT PRIMARY KEY, user_id TEXT NOT NULL, used_at TEXT NOT NULL)"
)
db.commit()


class Refused(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def signing_key(raw):
    """The key of the set that signed raw, by its kid."""
    global keys, fetched_at
    kid = jwt.get_unverified_header(raw).get("kid")
    stale = fetched_at is None or time.monotonic() - fetched_at >= REFETCH_AFTER
    if (keys is None or kid not in keys) and stale:
        fetched_at = time.monotonic()
        keys = {k.key_id: k.key for k in jwks.get_jwk_set(refresh=True).keys}
    if keys is None or kid not in keys:
        raise jwt.InvalidTokenError(f"signed with a key (kid {kid!r}) not in the gateway's key set")
    return keys[kid]


def verify(raw):
    """The entry's claims if raw is a compact JWT signed EdDSA by a key of
    the set, unexpired, for this route's queue (and issuer and audience,
    when set), naming a user and an entry."""
    if not raw:
        raise Refused(401, "no X-Waitroom-Entry: the request did not come through the waiting room")
    try:
        claims = jwt.decode(
            raw,
            signing_key(raw),
            algorithms=["EdDSA"],
            options={"require": ["exp", "sub", "jti"], "verify_aud": AUDIENCE is not None},
            audience=AUDIENCE,
            issuer=ISSUER,
            leeway=LEEWAY,
        )
    except (jwt.InvalidTokenError, jwt.PyJWKClientError) as err:
        raise Refused(403, f"X-Waitroom-Entry: {type(err).__name__}: {err}") from None
    if claims.get("queue") != QUEUE:
        raise Refused(403, f"X-Waitroom-Entry: for the queue {claims.get('queue')!r}, not {QUEUE!r}")
    return claims


def use_once(entry):
    # In a real shop: in the transaction that records the purchase.
    now = datetime.datetime.now(datetime.timezone.utc).isoformat()
    cur = db.execute(
        "INSERT INTO used_entries (jti, user_id, used_at) VALUES (?, ?, ?) ON CONFLICT (jti) DO NOTHING",
        (entry["jti"], entry["sub"], now),
    )
    db.commit()
    if cur.rowcount == 0:
        raise Refused(409, "this entry was used already")


class Shop(BaseHTTPRequestHandler):
    def do_POST(self):
        if self.path.split("?")[0] != "/buy":
            return self.reply(404, {"error": "not found"})
        try:
            entry = verify(self.headers.get("X-Waitroom-Entry"))
            use_once(entry)
        except Refused as err:
            return self.reply(err.status, {"error": str(err)})
        self.reply(200, {"bought": True, "user": entry["sub"], "jti": entry["jti"]})

    def reply(self, status, body):
        data = (json.dumps(body) + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    host, _, port = LISTEN.rpartition(":")
    server = HTTPServer((host, int(port)), Shop)
    print("listening on http://%s:%d" % server.server_address[:2], flush=True)
    server.serve_forever()
