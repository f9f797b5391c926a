"""The service's protocol: the requests it accepts and how it reads them.

Messages are `wire`'s (a length, then one JSON object); a connection carries one request
and its reply. Requests: {"op": "prove", "zkey", "witness", "r1cs", "check", "verify",
"profile", "trace", "workers"} (absolute paths: the service runs on this machine as this
user), {"op": "status"}, {"op": "stop"}, {"op": "ping"}; over TCP each also carries
"token". Replies: {"ok": true, ...} or {"ok": false, "error": one line, "status": the
exit status the CLI should give}.

{"op": "prove_files", "cwd", "zkey", "witness", "r1cs", "proof", "public", "check",
"verify", "workers"} is the native client's (`native_client.c`): the paths as the user
typed them, relative to "cwd"; the service checks the outputs, proves, writes proof.json
and public.json itself and replies {"ok": true} without them. Unix socket only: there the
service knows the client runs as its own user (`server._UnixServer.deny`).

The service reads a request with `wire`'s hostile-JSON rules (its depth bound among them)
and at most ``MAX_REQUEST`` bytes of it; anything else is a `Malformed` message, which the
service answers with one line. `request_error` then checks the fields.
"""
from __future__ import annotations

from .wire import MAX_DEPTH, MAX_MESSAGE, Malformed, ProtocolError, decode, recv, send  # noqa: F401 (the service's names)
from .wire import short as _short

MAX_REQUEST = 1 << 20       # a request is a few paths and flags
VERSION = 1


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


def _typed_path(v, optional=False) -> str | None:
    """A path as the user typed it: relative to the request's "cwd", or absolute."""
    if v is None and optional:
        return None
    if not isinstance(v, str) or not v:
        return f"expected a path (a non-empty string), got {_kind(v)}"
    return _path(v if v.startswith("/") else "/" + v)


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
PASSED_ON = ("check", "verify", "workers", "test_stall_s", "test_stall_node")
"""The fields of a "prove_files" request that are a "prove" request's as they are."""
_PROVE_FILES = {"cwd": (_path, True), "zkey": (_typed_path, True), "witness": (_typed_path, True),
                "r1cs": (lambda v: _typed_path(v, True), False), "proof": (_typed_path, True),
                "public": (_typed_path, True), **{name: _PROVE[name] for name in PASSED_ON}}
REQUESTS = {"prove": _PROVE, "prove_files": _PROVE_FILES, "ping": {}, "status": {}, "stop": {}}


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
