#!/usr/bin/env python3
"""Recompute a waitroom draw from its published record: standard library only.

    python3 verify_draw.py record.json
    python3 verify_draw.py --addr URL --queue Q [--commitment HEX]
    python3 verify_draw.py --drand https://api.drand.sh/CHAINHASH record.json

Written apart from waitroom's Go code, from the encoding in docs/draws.md
("The draw's encoding, version 1"), so that nobody has to trust waitroom's
own binary. Prints what `waitroom verify-draw` prints: "matches: <n>
participants, commitment <hex>" and exits 0, or the first entry that
differs, as `<entry>: the record says "X", recomputed "Y"`, and exits 1;
with --addr, exits 2 when the record matches a commitment made only at its
opening or after it (it proves nothing), and lists the commitments
withdrawn before it.
"""

import argparse
import datetime
import hashlib
import hmac
import json
import re
import sys
import urllib.error
import urllib.parse
import urllib.request

VERSION = 1
COMMIT_PREFIX = "waitroom-draw/v1 commit\n"
PARTICIPANTS_PREFIX = "waitroom-draw/v1 participants\n"
FINAL_PREFIX = "waitroom-draw/v1 final\n"
HEX64 = re.compile(r"[0-9a-fA-F]{64}")


class Mismatch(Exception):
    def __init__(self, entry, record, recomputed):
        super().__init__(entry)
        self.entry, self.record, self.recomputed = entry, record, recomputed

    def __str__(self):
        return "%s: the record says %s, recomputed %s" % (self.entry, go_quote(self.record), go_quote(self.recomputed))


def go_quote(s):
    """A string as Go's %q writes it (strconv.Quote)."""
    named = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
             "\\": "\\\\", '"': '\\"'}
    out = []
    for ch in s:
        if ch in named:
            out.append(named[ch])
        elif ch.isprintable() or ch == " ":
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append("\\x%02x" % ord(ch))
        elif ord(ch) < 0x10000:
            out.append("\\u%04x" % ord(ch))
        else:
            out.append("\\U%08x" % ord(ch))
    return '"' + "".join(out) + '"'


def sha256_hex(text):
    return hashlib.sha256(text.encode()).hexdigest()


def lines(*values):
    return "".join(v + "\n" for v in values)


def commitment(seed_hex, queue, opens_at_ms, beacon):
    text = COMMIT_PREFIX + lines(seed_hex, queue, str(opens_at_ms))
    if beacon is not None:
        text += lines(beacon["url"], str(beacon["round"]))
    return sha256_hex(text)


def participants_hash(ids):
    return sha256_hex(PARTICIPANTS_PREFIX + lines(*ids))


def final_seed(seed_hex, phash, randomness):
    return sha256_hex(FINAL_PREFIX + lines(seed_hex, phash, randomness))


def order(final_hex, ids):
    key = bytes.fromhex(final_hex)
    return sorted(ids, key=lambda i: (hmac.new(key, i.encode(), hashlib.sha256).digest(), i.encode()))


# Go's time.Time as JSON: RFC 3339 with up to nine digits of fraction.
RFC3339 = re.compile(r"(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?([Zz]|[+-]\d\d:\d\d)$")
EPOCH = datetime.datetime(1970, 1, 1)


def parse_time(s):
    """An RFC 3339 instant as (Unix nanoseconds, offset in minutes)."""
    m = RFC3339.match(s)
    if not m:
        raise ValueError("%r is not an RFC 3339 time" % s)
    wall = datetime.datetime(*(int(m.group(i)) for i in range(1, 7)))
    frac = int((m.group(7) or "").ljust(9, "0"))
    z = m.group(8)
    offset = 0 if z in ("Z", "z") else (1 if z[0] == "+" else -1) * (int(z[1:3]) * 60 + int(z[4:6]))
    seconds = (wall - EPOCH) // datetime.timedelta(seconds=1) - offset * 60
    return seconds * 10**9 + frac, offset


def format_time(ns, offset=0):
    """Go's Format(time.RFC3339Nano) of an instant at an offset."""
    seconds, frac = divmod(ns, 10**9)
    wall = EPOCH + datetime.timedelta(seconds=seconds + offset * 60)
    # Not strftime: its %Y drops the leading zeros of years before 1000 on glibc.
    text = "%04d-%02d-%02dT%02d:%02d:%02d" % (wall.year, wall.month, wall.day, wall.hour, wall.minute, wall.second)
    if frac:
        text += "." + ("%09d" % frac).rstrip("0")
    if offset == 0:
        return text + "Z"
    sign, offset = ("+", offset) if offset > 0 else ("-", -offset)
    return text + "%s%02d:%02d" % (sign, offset // 60, offset % 60)


def is_int(v):
    """Whether a JSON value is an integer, as Go's int64 takes one: not true or false (bool is an int
    in Python), not 5.0."""
    return isinstance(v, int) and not isinstance(v, bool)


def compare_list(name, got, want):
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            raise Mismatch("%s[%d]" % (name, i), str(g), str(w))
    if len(got) != len(want):
        raise Mismatch(name + " length", str(len(got)), str(len(want)))


class Int(int):
    """A JSON integer that keeps its text: a value of the wrong type is shown as written."""
    def __new__(cls, text):
        v = int.__new__(cls, text)
        v.text = text
        return v


class Float(float):
    """A JSON number with a fraction or an exponent, as written (Go's int64 takes no 5.0)."""
    def __new__(cls, text):
        v = float.__new__(cls, text)
        v.text = text
        return v


def load_json(f):
    return json.load(f, parse_int=Int, parse_float=Float)


# A record's JSON fields in Go's Record order, with the kind each takes (see kind_ok).
RECORD_FIELDS = [("version", "int"), ("queue", "string"), ("commitment", "string"), ("opensAtMs", "int"),
                 ("opensAt", "time"), ("seed", "string"), ("beacon", "beacon"), ("participants", "strings"),
                 ("participantsHash", "string"), ("finalSeed", "string"), ("order", "strings"),
                 ("firstTicket", "int"), ("tickets", "ints"), ("drawnAt", "time")]
ZERO = {"int": 0, "uint": 0, "string": "", "time": None, "strings": [], "ints": [], "beacon": None}
GO_TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:[.,]\d+)?(?:Z|[+-](\d\d):(\d\d))$")


def shown(v):
    """A JSON value as a mismatch shows it (as Go's draw.DecodeRecord does)."""
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    if isinstance(v, bool):
        return "true" if v else "false"
    return getattr(v, "text", str(v))


def go_time(s):
    """Whether Go's time.Time takes s from JSON (RFC 3339, its ranges checked)."""
    m = GO_TIME.match(s)
    if not m:
        return False
    try:
        datetime.datetime(*(int(m.group(i)) for i in range(1, 7)))
    except ValueError:
        return False
    return m.group(7) is None or (int(m.group(7)) <= 24 and int(m.group(8)) < 60)


def kind_ok(entry, kind, v):
    """v as Go reads a value of kind (int64, uint64, string, time), or Mismatch."""
    if v is None:
        return ZERO[kind]  # Go's JSON leaves the zero value
    if kind == "int" and is_int(v) and -2**63 <= v < 2**63 or kind == "uint" and is_int(v) and 0 <= v < 2**64:
        return int(v)
    if kind == "string" and isinstance(v, str) or kind == "time" and isinstance(v, str) and go_time(v):
        return v
    want = {"int": "an integer", "uint": "an integer from 0", "string": "a string", "time": "an RFC 3339 time"}[kind]
    raise Mismatch(entry, shown(v), want)


def typed(r):
    """The record as Go's Record reads it: each field of its kind (nulls as zero values), or
    Mismatch at the first value Go's JSON would refuse, named as draw.DecodeRecord names it."""
    if not isinstance(r, dict):
        raise Mismatch("record", shown(r), "an object")
    out = {}
    for name, kind in RECORD_FIELDS:
        v = r.get(name)
        if v is not None and kind in ("strings", "ints"):
            if not isinstance(v, list):
                raise Mismatch(name, shown(v), "an array")
            out[name] = [kind_ok("%s[%d]" % (name, i), kind[:-1], e) for i, e in enumerate(v)]
        elif v is not None and kind == "beacon":
            if not isinstance(v, dict):
                raise Mismatch(name, shown(v), "an object")
            out[name] = {k: kind_ok("beacon." + k, bk, v.get(k)) for k, bk in (("url", "string"), ("round", "uint"), ("randomness", "string"))}
        else:
            out[name] = ZERO[kind] if v is None else kind_ok(name, kind, v)
    return out


def verify(r):
    """Raises Mismatch at the first entry that differs, in Verify's order
    (a value of the wrong type first, as Go's reading the record does)."""
    r = typed(r)
    if r.get("version", 0) != VERSION:
        raise Mismatch("version", str(r.get("version", 0)), str(VERSION))
    seed = r.get("seed") or ""
    if not HEX64.fullmatch(seed):
        raise Mismatch("seed", seed, "64 hex digits")
    seed = seed.lower()
    opens_ms = r.get("opensAtMs", 0)
    opens_at = r.get("opensAt")
    if opens_at and opens_at != "0001-01-01T00:00:00Z":
        ns, offset = parse_time(opens_at)
        if ns // 10**6 != opens_ms:
            raise Mismatch("opensAt", format_time(ns, offset), format_time(opens_ms * 10**6))
    beacon = r.get("beacon")
    randomness = ""
    if beacon is not None:
        beacon = {"url": beacon.get("url") or "", "round": beacon.get("round") or 0, "randomness": beacon.get("randomness") or ""}
        randomness = beacon["randomness"]
    c = commitment(seed, r.get("queue") or "", opens_ms, beacon)
    if c != r.get("commitment"):
        raise Mismatch("commitment", r.get("commitment") or "", c)
    ids = r.get("participants") or []
    for i in range(len(ids)):
        # An id is 32 lowercase hex digits: one holding a newline would hash as two.
        if len(ids[i]) != 32 or any(ch not in "0123456789abcdef" for ch in ids[i]):
            raise Mismatch("participants[%d]" % i, ids[i], "32 lowercase hex digits")
        if i > 0 and ids[i - 1].encode() >= ids[i].encode():
            raise Mismatch("participants[%d]" % i, ids[i], "an id above " + ids[i - 1] + " (ascending, each once)")
    h = participants_hash(ids)
    if h != r.get("participantsHash"):
        raise Mismatch("participantsHash", r.get("participantsHash") or "", h)
    f = final_seed(seed, r["participantsHash"], randomness)
    if f != r.get("finalSeed"):
        raise Mismatch("finalSeed", r.get("finalSeed") or "", f)
    drawn = order(f, ids)
    compare_list("order", r.get("order") or [], drawn)
    first = r.get("firstTicket", 0)
    compare_list("tickets", r.get("tickets") or [], [first + i for i in range(len(drawn))])


def fetch(addr, queue, commitment_hex):
    url = addr.rstrip("/") + "/api/v1/queues/" + urllib.parse.quote(queue, safe="") + "/draw"
    if commitment_hex:
        url += "?commitment=" + urllib.parse.quote(commitment_hex, safe="")
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            return load_json(resp)
    except urllib.error.HTTPError as e:
        try:
            err = json.load(e)["error"]
            raise SystemExit("verify_draw: GET %s: %s (%s)" % (url, err["message"], err["code"]))
        except (ValueError, KeyError, TypeError):
            raise SystemExit("verify_draw: GET %s: %s %s" % (url, e.code, e.reason))


def get_json(url, what):
    """url's JSON answer (drand's), or None when it answers 404 or 425 (a round not out yet)."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers={"Accept": "application/json"}), timeout=45) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as e:
        if what == "round" and e.code in (404, 425):
            return None
        raise SystemExit("verify_draw: GET %s: %s %s" % (url, e.code, e.reason))


def first_round_from(info, at_ns):
    """The first round of a chain whose time, genesis + (round - 1) * period, is at or after at_ns."""
    since, period = at_ns - info["genesis_time"] * 10**9, info["period"] * 10**9
    return 1 if since <= 0 else 1 + -(-since // period)


def check_beacon(chain, r):
    """Asks a drand chain (the record's beacon URL or a mirror of its chain)
    for its info and the record's round: the line to print after the
    verdict, or a Mismatch of beacon.round (a round less than a full period
    after the opening: its randomness could be out while the list was
    open) or beacon.randomness. Checks the randomness is SHA-256 of the
    round's signature, not the BLS signature itself."""
    beacon = r.get("beacon")
    if beacon is None:
        return "beacon: the record names none"
    chain = chain.rstrip("/")
    info = get_json(chain + "/info", "info")
    if not (is_int(info.get("genesis_time")) and is_int(info.get("period"))) or info["genesis_time"] <= 0 or info["period"] <= 0:
        raise SystemExit("verify_draw: %s/info: genesis_time %r and period %r are not a chain's" % (
            chain, info.get("genesis_time"), info.get("period")))
    first = first_round_from(info, r.get("opensAtMs", 0) * 10**6 + info["period"] * 10**9)
    if (beacon.get("round") or 0) < first:
        raise Mismatch("beacon.round", str(beacon.get("round") or 0), "a round from %d (a period or more after the opening)" % first)
    url = "%s/public/%d" % (chain, beacon.get("round") or 0)
    answer = get_json(url, "round")
    if answer is None:
        raise SystemExit("verify_draw: beacon: round %d is not out yet at %s" % (beacon.get("round") or 0, chain))
    try:
        signature = bytes.fromhex(answer["signature"])
    except (KeyError, TypeError, ValueError):
        signature = b""
    if answer.get("round") != beacon.get("round") or not signature:
        raise SystemExit("verify_draw: %s answered round %r with signature %r" % (url, answer.get("round"), answer.get("signature")))
    randomness = hashlib.sha256(signature).hexdigest()
    if answer.get("randomness") and answer["randomness"].lower() != randomness:
        raise SystemExit("verify_draw: %s: randomness %s is not SHA-256 of its signature (%s)" % (url, answer["randomness"], randomness))
    if randomness != (beacon.get("randomness") or ""):
        raise Mismatch("beacon.randomness", beacon.get("randomness") or "", randomness)
    return "beacon: round %d's randomness is the chain's at %s" % (beacon["round"], chain)


def check_ledger(ledger, queue):
    """The record, its ledger entry (drawn) and the commitments withdrawn
    before it, or a line saying what is wrong."""
    r, listed = ledger.get("record"), ledger.get("commitments") or []
    if r is None:
        if not listed:
            return None, None, [], "queue %s: no draw is published yet (no commitment either)" % queue
        c = listed[-1]
        opens, _ = parse_time(c["opensAt"])
        return None, None, [], "queue %s: no draw is published yet (its newest commitment, %s, is %s, opening %s)" % (
            queue, c["commitment"], c["state"], format_time(opens - opens % 10**9))
    if r.get("queue") != queue:
        return None, None, [], "the record is queue %s's, not %s's" % (go_quote(r.get("queue") or ""), go_quote(queue))
    withdrawn = []
    for c in listed:
        if c.get("commitment") != r.get("commitment"):
            if c.get("state") == "withdrawn":
                withdrawn.append(c)
        elif c.get("state") != "drawn":
            return None, None, [], "ledger: the record's commitment %s is listed %s, not drawn" % (r.get("commitment"), c.get("state") or "")
        else:
            return r, c, withdrawn, None
    return None, None, [], "ledger: the record's commitment %s is not among queue %s's %d commitments" % (
        r.get("commitment"), queue, len(listed))


def instant(c, key):
    """c[key] as Go's Format(time.RFC3339Nano) in UTC writes it; Go's zero time when absent."""
    if not c.get(key):
        return "0001-01-01T00:00:00Z"
    return format_time(parse_time(c[key])[0])


def withdrawn_note(c):
    return "withdrawn before it: %s (opening %s, withdrawn %s)" % (c["commitment"], instant(c, "opensAt"), instant(c, "withdrawnAt"))


def late_note(r, c):
    """Said when the commitment was made at the record's opening or after it:
    published when nobody could join any more, it proves nothing (exit 2)."""
    made, _ = parse_time(c["madeAt"])
    opens = r.get("opensAtMs", 0) * 10**6
    if made < opens:
        return None
    return ("committed only at the opening: commitment %s was made at %s, not before the opening at %s: "
            "the record matches it, but a commitment that late proves nothing") % (
        c["commitment"], format_time(made), format_time(opens))


def main(argv):
    p = argparse.ArgumentParser(description="Recompute a waitroom draw from its published record.")
    p.add_argument("file", nargs="?", help="a record's JSON")
    p.add_argument("--addr", help="the waitroom instance's URL (reads GET /api/v1/queues/{q}/draw)")
    p.add_argument("--queue", help="the queue, with --addr")
    p.add_argument("--commitment", help="with --addr, the commitment whose record to check")
    p.add_argument("--drand", help="also ask this drand chain (the record's beacon URL, or a mirror of the same chain) "
                                   "for the record's round and compare its randomness")
    a = p.parse_args(argv)
    if (a.file is None) == (a.addr is None) or (a.addr is not None and not a.queue):
        p.error("give a record file, or --addr with --queue")
    notes, late = [], None
    try:
        if a.file is not None:
            with open(a.file, encoding="utf-8") as f:
                r = typed(load_json(f))
        else:
            ledger = fetch(a.addr, a.queue, a.commitment)
            if ledger.get("record") is not None:
                ledger["record"] = typed(ledger["record"])
    except Mismatch as m:  # a value of the wrong type: Go's reading the record names it so
        print(m)
        return 1
    if a.file is None:
        r, c, withdrawn, wrong = check_ledger(ledger, a.queue)
        if wrong:
            print(wrong)
            return 1
        notes, late = [withdrawn_note(w) for w in withdrawn], late_note(r, c)
    beacon = None
    try:
        verify(r)
        if a.drand:
            beacon = check_beacon(a.drand, r)
    except Mismatch as m:
        print(m)
        for line in notes:
            print(line)
        return 1
    print("matches: %d participants, commitment %s" % (len(r["participants"]), r["commitment"]))
    for line in [beacon] + notes + [late]:
        if line:
            print(line)
    return 2 if late else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
