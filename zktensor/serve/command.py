"""The ``serve`` subcommand.

    zktensor serve                  # run the service in the foreground (Ctrl-C stops it)
    zktensor serve --detach         # start it in the background and return once it answers
    zktensor serve --memory 6G      # key memory budget (default: half of physical memory)
    zktensor serve --tcp 7070       # also listen on 127.0.0.1:7070, token in serve.token
    zktensor serve --status         # pid, budget, resident keys and their sizes
    zktensor serve --stop           # returns once the service has exited and its socket is gone

A bad ``--memory`` is refused in one line (exit 2) before anything starts. The arguments
are `cli.SERVE_ARGS`.
"""
from __future__ import annotations

import os
import sys
import time

from . import client, paths

TYPE_CHECKING = False           # typing's flag without typing's import (`--status` is a thin client)
if TYPE_CHECKING:
    import argparse

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SIZE = r"(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?"
MAX_BUDGET = 1 << 60
STOP_WAIT_S = 30.0


def parse_size(s: str) -> int:
    """'8G', '512M', '1.5g', '6GiB', '1073741824' -> bytes; ValueError (one line) for
    anything else, nothing at all, or a size under a byte or past any machine."""
    import re               # here: `--status` and `--stop` do not pay for it
    m = re.fullmatch(_SIZE, s.strip(), re.IGNORECASE)
    if m is None:
        raise ValueError(f"--memory {s!r}: not a size (e.g. 8G, 512M, 1.5g)")
    n = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if not 1 <= n <= MAX_BUDGET:
        raise ValueError(f"--memory {s!r}: the budget must be from 1 byte to 1 EiB")
    return n


def _alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie, waiting for its parent to reap it, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass                            # EPERM: it exists
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def wait_stopped(pid: int, timeout: float = STOP_WAIT_S) -> bool:
    """Wait until the service `pid` has exited and its socket is gone."""
    end = time.monotonic() + timeout
    while _alive(pid) or os.path.exists(paths.socket_path()):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def run(a: argparse.Namespace) -> int:
    if a.memory is not None:
        try:
            a.memory = parse_size(a.memory)
        except ValueError as e:
            print(f"zktensor: error: {e}", file=sys.stderr)
            return 2
    if a.status or a.stop:
        try:
            reply = client.request({"op": "status" if a.status else "stop"})
        except client.Unavailable:
            print(f"zktensor serve: no service running ({paths.socket_path()})", file=sys.stderr)
            return 1
        except client.Lost as e:
            print(f"zktensor serve: {e}", file=sys.stderr)
            return 1
        if not reply.get("ok") or not isinstance(reply.get("pid"), int):
            print(f"zktensor serve: the service refused: {reply.get('error', 'no reason given')}", file=sys.stderr)
            return 1
        if a.status:
            print(client.status_text(reply))
            return 0
        if not wait_stopped(reply["pid"]):
            print(f"zktensor serve: pid {reply['pid']} did not stop within {STOP_WAIT_S:.0f} s", file=sys.stderr)
            return 1
        print(f"zktensor serve: stopped pid {reply['pid']}")
        return 0
    args = []
    if a.memory:
        args += ["--memory", str(a.memory)]
    if a.tcp is not None:
        args += ["--tcp", str(a.tcp)]
    if a.device:
        args += ["--device", a.device]
    if a.plain:
        args += ["--plain"]
    if a.detach:
        if client.running():
            print(f"zktensor serve: already running ({paths.socket_path()})", file=sys.stderr)
            return 1
        try:
            client.start(args=args)
        except RuntimeError as e:
            print(f"zktensor serve: {e}", file=sys.stderr)
            return 1
        print(f"zktensor serve: listening on {paths.socket_path()} (log: {paths.log_path()})")
        return 0
    from .server import Service
    try:
        return Service(a.memory, device=a.device, plain=a.plain, tcp_port=a.tcp).run()
    except PermissionError as e:
        print(f"zktensor serve: {e}", file=sys.stderr)
        return 1
