"""The thin client: what ``zktensor prove`` runs before it knows whether it must prove itself.

Standard library only (no torch, no numpy, nothing of the compiler), so a proof through
the service costs a Python start-up and a round trip. ``prove_via_service`` returns the
CLI's exit status, or None when there is no service (the caller then proves in-process).
The proof and public files (and the trace, with ``--trace``) are written here, as one set
(`groth16.outputs`), once the whole reply is in: a service killed mid-request leaves no
file behind, and the caller proves in-process. The service is sent absolute paths; its
error messages are given back with the paths as the user typed them.
"""
from __future__ import annotations

import _socket          # not socket: its import (enum, selectors) is start-up time (`wire`)
import os
import sys
import time

from . import paths, wire

CONNECT_TIMEOUT_S = 2.0


class Unavailable(ConnectionError):
    """No service answers (no socket, a stale one, refused)."""


class Lost(ConnectionError):
    """The service went away mid-request."""


def _address():
    """("unix", path) or ("tcp", (host, port), token): $ZKTENSOR_SERVE_ADDR=127.0.0.1:PORT
    (with $ZKTENSOR_SERVE_TOKEN, or the token file) picks a TCP service."""
    addr = os.environ.get("ZKTENSOR_SERVE_ADDR")
    if addr:
        host, _, port = addr.rpartition(":")
        token = os.environ.get("ZKTENSOR_SERVE_TOKEN")
        if token is None:
            try:
                with open(paths.token_path()) as f:
                    token = f.read().strip()
            except OSError:
                raise Unavailable(f"ZKTENSOR_SERVE_ADDR={addr} but no token (ZKTENSOR_SERVE_TOKEN or "
                                  f"{paths.token_path()})") from None
        return "tcp", (host or "127.0.0.1", int(port)), token
    return "unix", paths.socket_path(), None


def connect() -> tuple[_socket.socket, str | None]:
    kind, where, token = _address()
    if kind == "unix" and not os.path.exists(where):
        raise Unavailable(f"no service socket at {where}")
    s = _socket.socket(_socket.AF_UNIX if kind == "unix" else _socket.AF_INET, _socket.SOCK_STREAM)
    s.settimeout(CONNECT_TIMEOUT_S)
    try:
        s.connect(where)
    except OSError as e:
        s.close()
        raise Unavailable(f"no service at {where} ({e.strerror or e})") from None
    s.settimeout(None)              # a first proof may load a key for a while
    return s, token


def request(obj: dict) -> dict:
    s, token = connect()
    try:
        if token is not None:
            obj = dict(obj, token=token)
        try:
            wire.send(s, obj)
            return wire.recv(s)
        except (OSError, wire.ProtocolError) as e:
            raise Lost(f"the prover service went away mid-request ({e})") from None
    finally:
        s.close()


def running() -> bool:
    try:
        return bool(request({"op": "ping"}).get("ok"))
    except (Unavailable, Lost):
        return False


def start(wait_s: float = 60.0, args: list[str] | None = None) -> None:
    """Start a detached service (``zktensor serve``) and wait until it answers."""
    import subprocess       # only here: the client's start-up does not pay for it
    d = paths.run_dir(create=True)
    log = os.fdopen(os.open(paths.log_path(), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab")
    cmd = [sys.executable, "-m", "zktensor.cli", "serve", *(args or [])]
    env = dict(os.environ)
    pkg_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_root, env.get("PYTHONPATH")) if p)
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                         env=env, cwd=str(d))
    log.close()
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        if running():
            return
        if p.poll() is not None:
            raise RuntimeError(f"the prover service exited at start (status {p.returncode}); see "
                               f"{paths.log_path()}")
        time.sleep(0.05)
    raise RuntimeError(f"the prover service did not answer within {wait_s:.0f} s; see {paths.log_path()}")


def _abs(p):
    return None if p is None else os.path.abspath(p)


def typed_paths(*typed, cwd: str | None = None) -> dict[str, str]:
    """{a form of a path the service may name (absolute, resolved): the path as typed},
    relative to ``cwd`` (default: this process's working directory)."""
    out = {}
    for p in typed:
        if p is None:
            continue
        full = os.path.abspath(p if cwd is None else os.path.join(cwd, p))
        for form in (full, os.path.realpath(full)):
            if form != p:
                out.setdefault(form, p)
    return out


def as_typed(message: str, names: dict[str, str]) -> str:
    """``message`` with the service's absolute paths replaced by the user's (the longest
    first, so that a path is never cut at another that is a prefix of it)."""
    if not names:
        return message
    import re               # here: only an error message pays for it
    pattern = re.compile("|".join(re.escape(k) for k in sorted(names, key=len, reverse=True)))
    return pattern.sub(lambda m: names[m.group(0)], message)


def prove_via_service(a, start_if_needed: bool = False) -> int | None:
    """``zktensor prove`` through the service: the exit status, or None to prove in-process
    (no service, or it went away mid-request: said on stderr)."""
    req = {"op": "prove", "zkey": _abs(a.zkey), "witness": _abs(a.witness), "r1cs": _abs(a.r1cs),
           "check": not a.no_check, "verify": not (getattr(a, "no_verify", False) or a.no_check),
           "profile": bool(a.profile)}
    if getattr(a, "trace", None):           # only when given: a service refuses fields it does not know
        req["trace"] = True
    if getattr(a, "workers", None) is not None:
        req["workers"] = a.workers
    if os.environ.get("ZKTENSOR_SERVE_TEST_STALL"):          # tests: honoured only by a service run with hooks
        req["test_stall_s"] = float(os.environ["ZKTENSOR_SERVE_TEST_STALL"])
        if os.environ.get("ZKTENSOR_SERVE_TEST_STALL_NODE"):
            req["test_stall_node"] = os.environ["ZKTENSOR_SERVE_TEST_STALL_NODE"]
    try:
        reply = request(req)
    except Unavailable:
        if not start_if_needed:
            return None
        try:
            start()
            reply = request(req)
        except (RuntimeError, Unavailable, Lost) as e:
            print(f"zktensor: {e}; proving in-process", file=sys.stderr)
            return None
    except Lost as e:
        print(f"zktensor: {e}; proving in-process", file=sys.stderr)
        return None
    if not reply.get("ok"):
        error = as_typed(str(reply.get("error", "the service refused the request")),
                         typed_paths(a.zkey, a.witness, a.r1cs))
        print(f"zktensor: error: {error}", file=sys.stderr)
        status = reply.get("status", 1)
        return status if type(status) is int and 1 <= status <= 125 else 1
    from ..groth16.outputs import OutputError, write_outputs
    outputs = [(a.proof, reply.get("proof")), (a.public, reply.get("public"))]
    if getattr(a, "trace", None):
        outputs.append((a.trace, reply.get("trace")))
    if not all(isinstance(text, str) for _, text in outputs):
        print("zktensor: error: the prover service's reply has no proof (a service of another "
              "version? zktensor serve --stop, then prove again)", file=sys.stderr)
        return 1
    try:         # all of them or none
        write_outputs(outputs, sync=False)        # as write_proof_pair: the outputs module's doc
    except (OutputError, OSError) as e:
        print(f"zktensor: error: {e}", file=sys.stderr)
        return 1
    if a.profile or getattr(a, "trace", None):       # --trace implies --profile, as in-process
        print(f"load key {1e3 * reply['load_s']:.1f} ms (service: "
              f"{'resident' if reply.get('resident') else 'loaded now'}), prove {1e3 * reply['prove_s']:.1f} ms")
        if reply.get("table"):
            print(reply["table"])
    if getattr(a, "trace", None):
        print(f"trace written to {a.trace}")
    return 0


def status_text(reply: dict) -> str:
    lines = [f"zktensor serve: pid {reply['pid']}, up {reply['uptime_s']:.0f} s, {reply['requests']} requests, "
             f"resident {_mib(reply['resident_bytes'])} of {_mib(reply['budget_bytes'])} budget, "
             f"process RSS {_mib(reply.get('rss_bytes') or 0)}",
             f"  socket {reply['socket']}" + (f", tcp 127.0.0.1:{reply['tcp_port']}" if reply.get("tcp_port") else "")]
    for k in reply["keys"]:
        lines.append(f"  {k['path']}  {_mib(k['bytes'])}  sha256 {k['digest'][:12]}  {k['proofs']} proofs, "
                     f"loaded in {k['load_s']:.2f} s ({k['tables']}), idle {k['idle_s']:.0f} s")
    if not reply["keys"]:
        lines.append("  no resident keys")
    return "\n".join(lines)


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"
