"""The service's wire format: one JSON object per message, after its length (4 bytes,
big-endian). A connection carries one request and its reply.

Requests: {"op": "prove", "zkey", "witness", "r1cs", "check", "verify", "profile"} (absolute
paths: the service runs on this machine as this user), {"op": "status"}, {"op": "stop"},
{"op": "ping"}; over TCP each also carries "token". Replies: {"ok": true, ...} or
{"ok": false, "error": one line, "status": the exit status the CLI should give}.
"""
from __future__ import annotations

import json
import socket
import struct

MAX_MESSAGE = 64 << 20
VERSION = 1


class ProtocolError(ConnectionError):
    """The peer closed the connection early or sent something that is not a message."""


def send(sock: socket.socket, obj: dict) -> None:
    data = json.dumps(obj).encode()
    sock.sendall(struct.pack(">I", len(data)) + data)


def recv(sock: socket.socket) -> dict:
    head = _exactly(sock, 4)
    (n,) = struct.unpack(">I", head)
    if n > MAX_MESSAGE:
        raise ProtocolError(f"message of {n} bytes (at most {MAX_MESSAGE})")
    try:
        obj = json.loads(_exactly(sock, n))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ProtocolError(f"not a JSON message ({e})") from None
    if not isinstance(obj, dict):
        raise ProtocolError("a message must be a JSON object")
    return obj


def _exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ProtocolError("the connection closed mid-message" if buf else "the connection closed")
        buf += chunk
    return bytes(buf)
