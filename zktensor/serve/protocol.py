"""The service's wire format: one JSON object per message, after its length (4 bytes,
big-endian). A connection carries one request and its reply.

Requests: {"op": "prove", "zkey", "witness", "r1cs", "check", "verify", "profile", "trace",
"workers"} (absolute paths: the service runs on this machine as this user), {"op": "status"},
{"op": "stop"}, {"op": "ping"}; over TCP each also carries "token". Replies: {"ok": true, ...}
or {"ok": false, "error": one line, "status": the exit status the CLI should give}.

A message is read with the rules of the hostile-JSON file readers
(``groth16.formats.json_io``), restated here because the thin client imports only the
standard library: a bounded length (``MAX_REQUEST`` for what the service reads), UTF-8,
nesting at most ``MAX_DEPTH`` deep (checked before parsing: Python's parser ends deep
nesting in a RecursionError), integers of at most ``MAX_DIGITS`` digits (Python's int()
refuses 4300 and is quadratic), no NaN or infinity, and an object at the top. Anything
else is a `Malformed` message, which the service answers with one line.
"""
from __future__ import annotations

import json
import math
import re
import socket
import struct

MAX_MESSAGE = 64 << 20      # a reply carries public.json: large for circuits with many public signals
MAX_REQUEST = 1 << 20       # a request is a few paths and flags
MAX_DEPTH = 8
MAX_DIGITS = 30
VERSION = 1


class ProtocolError(ConnectionError):
    """The peer closed the connection early or sent something that is not a message."""


class Malformed(ProtocolError):
    """A whole message arrived, but it is not one this protocol accepts (the reply says why)."""


def send(sock: socket.socket, obj: dict) -> None:
    data = json.dumps(obj).encode()
    sock.sendall(struct.pack(">I", len(data)) + data)


def recv(sock: socket.socket, limit: int = MAX_MESSAGE) -> dict:
    head = _exactly(sock, 4)
    (n,) = struct.unpack(">I", head)
    if n > limit:
        raise Malformed(f"a message of {n} bytes (at most {limit})")
    return decode(_exactly(sock, n))


def decode(data: bytes) -> dict:
    """One message's bytes -> its object, or `Malformed` saying why not (module doc)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Malformed(f"not UTF-8 (byte {e.start})") from None
    if _deeper_than(text, MAX_DEPTH):
        raise Malformed(f"JSON nested deeper than {MAX_DEPTH} levels")
    try:
        obj = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except (ValueError, RecursionError) as e:     # json.JSONDecodeError is a ValueError
        raise Malformed(f"not JSON ({_short(str(e))})") from None
    if not isinstance(obj, dict):
        raise Malformed("a message must be a JSON object")
    return obj


# -- requests --------------------------------------------------------------------------------

MAX_PATH = 4096
MAX_WORKERS = 256
MAX_STALL_S = 600.0


def _path(v, optional=False) -> str | None:
    if v is None and optional:
        return None
    if not isinstance(v, str):
        return f"expected an absolute path (a string), got {_kind(v)}"
    if not v.startswith("/"):
        return f"expected an absolute path, got {_short(repr(v), 60)}"
    if len(v) > MAX_PATH or "\0" in v:
        return f"not a path ({len(v)} characters{', a NUL' if chr(0) in v else ''})"
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        return "not a path (a lone surrogate)"
    return None


def _flag(v, optional=False) -> str | None:
    return None if isinstance(v, bool) or (v is None and optional) else f"expected true or false, got {_kind(v)}"


def _workers(v) -> str | None:
    ok = v is None or (type(v) is int and 1 <= v <= MAX_WORKERS)
    return None if ok else f"expected a number of threads from 1 to {MAX_WORKERS}, got {_short(repr(v), 40)}"


def _text(v) -> str | None:
    return None if isinstance(v, str) and len(v) <= 64 else f"expected a short string, got {_kind(v)}"


def _seconds(v) -> str | None:
    ok = type(v) in (int, float) and 0 <= v <= MAX_STALL_S
    return None if ok else f"expected seconds from 0 to {MAX_STALL_S:.0f}, got {_short(repr(v), 40)}"


# per op: field -> (check, required); every request may carry "op" and "token"
_COMMON = {"op": (_text, True), "token": (_text, False)}
_PROVE = {"zkey": (_path, True), "witness": (_path, True), "r1cs": (lambda v: _path(v, True), False),
          "check": (_flag, False), "verify": (lambda v: _flag(v, True), False), "profile": (_flag, False),
          "trace": (_flag, False), "workers": (_workers, False),
          "test_stall_s": (_seconds, False), "test_stall_node": (_text, False)}   # tests (server's hooks)
REQUESTS = {"prove": _PROVE, "ping": {}, "status": {}, "stop": {}}


def request_error(req: dict) -> str | None:
    """What is wrong with a request (one line), or None: the op is known, the fields are
    its fields, of their types and sizes."""
    op = req.get("op")
    if not isinstance(op, str) or op not in REQUESTS:
        return f"bad request: unknown op {_short(repr(op), 40)} (expected one of {', '.join(REQUESTS)})"
    fields = {**_COMMON, **REQUESTS[op]}
    for name in req:
        if name not in fields:
            return f"bad request: {op} has no field {_short(repr(name), 40)}"
    for name, (check, required) in fields.items():
        if name not in req:
            if required:
                return f"bad request: {op} needs {name!r}"
            continue
        why = check(req[name])
        if why:
            return f"bad request: {name}: {why}"
    return None


def _kind(v) -> str:
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list",
            dict: "an object", type(None): "null"}.get(type(v), type(v).__name__)


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise ValueError(f"a number of {len(text.lstrip('-'))} digits")
    return int(text)


def _float(text: str) -> float:
    if len(text) > 2 * MAX_DIGITS:
        raise ValueError(f"a number of {len(text)} characters")
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"{text} is out of range")
    return v


def _constant(name: str):
    raise ValueError(f"{name} is not JSON")


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def _deeper_than(text: str, limit: int) -> bool:
    """Whether brackets nest deeper than ``limit`` (strings ignored), without recursion:
    keep only the brackets, then strip innermost pairs once per level."""
    shape = _NOT_BRACKET.sub("", _STRING.sub("", text))
    if re.search("[\\[{]{%d}" % (limit + 1), shape):      # a run of openers: deep even if unclosed
        return True
    for _ in range(limit):
        if not shape:
            return False
        stripped = shape.replace("[]", "").replace("{}", "")
        if stripped == shape:           # unbalanced: the parser says where
            return False
        shape = stripped
    return "[]" in shape or "{}" in shape


def _short(s: str, n: int = 120) -> str:
    return s if len(s) <= n else s[:n] + "..."


def _exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ProtocolError("the connection closed mid-message" if buf else "the connection closed")
        buf += chunk
    return bytes(buf)
