"""`serve.wire`: the thin client's JSON (the C codec called directly) against the json
package, and the hostile-input rules it keeps."""
import json
import math

import pytest

from zktensor.runtime.json_depth import nesting_depth
from zktensor.serve import wire

VALUES = [
    {},
    {"op": "prove", "zkey": "/tmp/a b/ü.zkey", "check": True, "verify": None, "workers": 2},
    {"ok": True, "proof": json.dumps({"pi_a": ["1", "2", "1"]}, indent=1), "public": "[\n \"33\"\n]",
     "load_s": 0.25, "prove_s": 1e-3, "table": "node\ttime\n\u2500\u2500", "trace": None},
    {"nested": [[1, [2, [3, {"x": -4}]]]], "esc": "quote \" backslash \\ nul \u0000 \U0001f600 \x7f",
     "floats": [0.0, -0.0, 1.5e300, 123456789.125], "big": 10**29, "neg": -(10**29)},
    {"keys": [{"path": "/k.zkey", "bytes": 123, "digest": "ab" * 32, "idle_s": 3.0}]},
]


@pytest.mark.parametrize("obj", VALUES)
def test_same_text_and_values_as_json(obj):
    text = wire.dumps(obj)
    assert text == json.dumps(obj)
    assert wire.loads(text) == obj == json.loads(text)
    assert wire.decode(wire.encode(obj)[4:]) == obj
    assert int.from_bytes(wire.encode(obj)[:4], "big") == len(text.encode())


@pytest.mark.parametrize("text", [" {\"a\": 1}\n", "\t{}\r\n", json.dumps({"a": [1, 2]}, indent=4)])
def test_json_whitespace_around_and_inside(text):
    assert wire.loads(text) == json.loads(text)


@pytest.mark.parametrize("data, why", [
    (b"", "expecting a value"),
    (b"{} {}", "extra data"),
    (b"{\"a\": 1,}", "not JSON"),
    (b"[1, 2]", "a JSON object"),
    (b"\"text\"", "a JSON object"),
    (b"{\"a\": NaN}", "NaN is not JSON"),
    (b"{\"a\": -Infinity}", "-Infinity is not JSON"),
    (b"{\"a\": 1e999}", "out of range"),
    (b"{\"a\": " + b"9" * 31 + b"}", "31 digits"),
    (b"{\"a\": 0." + b"1" * 80 + b"}", "characters"),
    (b"\xff{}", "not UTF-8"),
    (b"\x0b{}", "not JSON"),                    # not JSON's whitespace
    (b"[" * 100_000 + b"]" * 100_000, "nested deeper than 8"),
    (b'{"a":' * 50_000, "nested deeper than 8"),
    (b"[[[[[[[[]" * 10_000, "nested deeper than 8"),        # no run of 9 openers, yet 70,000 deep
    (b'{"a": [[[[[[[[["x"]]]]]]]]]}', "nested deeper than 8"),
])
def test_malformed_messages_say_why(data, why):
    with pytest.raises(wire.Malformed, match=why):
        wire.decode(data)


@pytest.mark.parametrize("text, depth", [
    ("{}", 1), ('{"a": [1, {"b": []}]}', 4), ('{"s": "[[[[{{{{"}', 1), ('{"s": "\\"[[[["}', 1),
    ('{"s": "\\\\", "t": [[]]}', 3), ('{"s": "a\\\\\\"[[", "t": []}', 2), ("[" * 50 + "]" * 50, 50),
    (json.dumps({"proof": json.dumps({"pi_b": [[["1", "2"]] * 3]})}), 1),
])
def test_nesting_depth_ignores_strings(text, depth):
    assert json.loads(text) is not None
    assert nesting_depth(text) == depth


def test_what_json_cannot_carry_is_refused():
    for bad in ({"a": math.nan}, {"a": math.inf}, {"a": object()}, {"a": b"bytes"}):
        with pytest.raises((ValueError, TypeError)):
            wire.dumps(bad)


class _Chunks:
    """A socket that hands out a message a few bytes at a time."""

    def __init__(self, data: bytes, step: int = 3):
        self.data, self.step, self.sent = data, step, b""

    def recv(self, n):
        chunk, self.data = self.data[:min(n, self.step)], self.data[min(n, self.step):]
        return chunk

    def sendall(self, data):
        self.sent += data


def test_framing_over_short_reads_and_limits():
    obj = VALUES[3]
    sock = _Chunks(b"")
    wire.send(sock, obj)
    assert wire.recv(_Chunks(sock.sent)) == obj
    with pytest.raises(wire.Malformed, match="at most 10"):
        wire.recv(_Chunks(sock.sent), limit=10)
    with pytest.raises(wire.ProtocolError, match="mid-message"):
        wire.recv(_Chunks(sock.sent[:-1]))
    with pytest.raises(wire.ProtocolError, match="connection closed"):
        wire.recv(_Chunks(b""))


def test_without_the_c_codec_the_json_package_keeps_the_rules(monkeypatch):
    """Where `_json` is missing, the json package does the work: same text, same refusals."""
    import importlib.util
    import sys
    monkeypatch.setitem(sys.modules, "_json", None)             # import _json -> ImportError
    spec = importlib.util.spec_from_file_location("zktensor.serve.wire_without_c", wire.__file__)
    plain = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plain)
    assert plain._codec is None and wire._codec is not None
    for obj in VALUES:
        assert plain.dumps(obj) == wire.dumps(obj) and plain.loads(wire.dumps(obj)) == obj
    for data, why in [(b"{\"a\": NaN}", "NaN is not JSON"), (b"{\"a\": " + b"9" * 31 + b"}", "31 digits"),
                      (b"[1]", "a JSON object"), (b"[" * 100_000 + b"]" * 100_000, "nested deeper than 8")]:
        with pytest.raises(plain.Malformed, match=why):
            plain.decode(data)
