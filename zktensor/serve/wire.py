"""The service's messages on the wire: a length (4 bytes, big-endian), then one JSON
object in UTF-8. A connection carries one request and its reply.

This is the part that the thin client needs, and it imports no module that Python's
start-up has not loaded already: a proof through the service costs a start-up and a
round trip, and every import is paid by every `zktensor prove`. So the JSON is the
standard library's C codec, `_json` (what the `json` package runs on), called directly:
the package itself imports `re` (the two were most of the client's import time; the
figures are in the commit that made this), and the sockets are `_socket`'s (the
`socket` module adds `enum` and `selectors`). Where `_json` is missing (an interpreter
other than CPython) the `json` package does the work, with the same limits.

Reading keeps the hostile-JSON rules of the file readers (``groth16.formats.json_io``):
integers of at most ``MAX_DIGITS`` digits (Python's int() is quadratic), no NaN or
infinity, an object at the top, and nesting at most ``MAX_DEPTH`` deep, checked before
parsing (`runtime.json_depth` says why).

    send(sock, {"op": "ping"})
    reply = recv(sock)              # a dict, or ProtocolError / Malformed
"""
from __future__ import annotations


from ..runtime.json_depth import nesting_depth

MAX_MESSAGE = 64 << 20      # a reply carries public.json: large for circuits with many public signals
MAX_DIGITS = 30
MAX_DEPTH = 8


class ProtocolError(ConnectionError):
    """The peer closed the connection early or sent something that is not a message."""


class Malformed(ProtocolError):
    """A whole message arrived, but it is not one this protocol accepts (the reply says why)."""


_INF = float("inf")


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise ValueError(f"a number of {len(text.lstrip('-'))} digits")
    return int(text)


def _float(text: str) -> float:
    if len(text) > 2 * MAX_DIGITS:
        raise ValueError(f"a number of {len(text)} characters")
    v = float(text)
    if v != v or v in (_INF, -_INF):
        raise ValueError(f"{text} is out of range")
    return v


class _Options:
    """The decoder attributes that `_json.make_scanner` reads (types.SimpleNamespace's role:
    types is start-up time)."""

    def __init__(self, **values):
        self.__dict__.update(values)


def _constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _unserialisable(obj):
    raise TypeError(f"{type(obj).__name__} is not JSON")


def _c_codec():
    """(the C scanner, the C encoder) of `_json`, or None where there is no `_json` or its
    calls are not the ones we know (json.decoder.JSONDecoder's and json.encoder.JSONEncoder's
    attributes, with our limits and json.dumps' separators), checked on a small object."""
    try:
        import _json
        scan = _json.make_scanner(_Options(strict=True, object_hook=None, object_pairs_hook=None,
                                                  parse_float=_float, parse_int=_int, parse_constant=_constant))
        encode = _json.make_encoder(None, _unserialisable, _json.encode_basestring_ascii, None, ": ", ", ",
                                    False, False, False)
        obj, text = {"a": [1, "\u00e9", True, None, 0.5]}, '{"a": [1, "\\u00e9", true, null, 0.5]}'
        if "".join(encode(obj, 0)) != text or scan(text, 0) != (obj, len(text)):
            return None
        return scan, encode
    except (ImportError, AttributeError, TypeError, ValueError):
        return None


_codec = _c_codec()

if _codec is not None:
    _scan, _encode = _codec

    def dumps(obj) -> str:
        return "".join(_encode(obj, 0))

    def loads(text: str):
        text = text.strip(" \t\n\r")        # JSON's whitespace, which the scanner does not skip
        try:
            obj, end = _scan(text, 0)
        except StopIteration as e:          # no value where one must start
            raise ValueError(f"expecting a value at character {e.value}") from None
        if end != len(text):
            raise ValueError(f"extra data at character {end}")
        return obj
else:                                   # not CPython: the json package, same limits
    import json

    def dumps(obj) -> str:
        return json.dumps(obj, allow_nan=False, default=_unserialisable)

    def loads(text: str):
        return json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)


def encode(obj: dict) -> bytes:
    data = dumps(obj).encode()
    return len(data).to_bytes(4, "big") + data


def decode(data: bytes) -> dict:
    """One message's bytes -> its object, or `Malformed` saying why not."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Malformed(f"not UTF-8 (byte {e.start})") from None
    if nesting_depth(text) > MAX_DEPTH:
        raise Malformed(f"JSON nested deeper than {MAX_DEPTH} levels")
    try:
        obj = loads(text)
    except ValueError as e:             # json.JSONDecodeError is a ValueError
        raise Malformed(f"not JSON ({short(str(e))})") from None
    if not isinstance(obj, dict):
        raise Malformed("a message must be a JSON object")
    return obj


def send(sock, obj: dict) -> None:
    sock.sendall(encode(obj))


def recv_bytes(sock, limit: int = MAX_MESSAGE) -> bytes:
    """One message's bytes (after its length), at most ``limit`` of them."""
    n = int.from_bytes(_exactly(sock, 4), "big")
    if n > limit:
        raise Malformed(f"a message of {n} bytes (at most {limit})")
    return _exactly(sock, n)


def recv(sock, limit: int = MAX_MESSAGE) -> dict:
    return decode(recv_bytes(sock, limit))


def _exactly(sock, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ProtocolError("the connection closed mid-message" if buf else "the connection closed")
        buf += chunk
    return bytes(buf)


def short(s: str, n: int = 120) -> str:
    return s if len(s) <= n else s[:n] + "..."
