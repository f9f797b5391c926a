"""The ``serve`` subcommand.

    zktensor serve                  # run the service in the foreground (Ctrl-C stops it)
    zktensor serve --detach         # start it in the background and return once it answers
    zktensor serve --memory 6G      # key memory budget (default: half of physical memory)
    zktensor serve --tcp 7070       # also listen on 127.0.0.1:7070, token in serve.token
    zktensor serve --status         # pid, budget, resident keys and their sizes
    zktensor serve --stop
"""
from __future__ import annotations

import argparse
import sys

from . import client, paths

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(s: str) -> int:
    """'8G', '512M', '1.5g', '1073741824' -> bytes."""
    t = s.strip().lower().removesuffix("ib").removesuffix("b")
    unit = t[-1] if t and t[-1] in _UNITS else ""
    try:
        v = float(t[:-1] if unit else t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {s!r} (e.g. 8G, 512M)") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"the memory budget must be positive, got {s!r}")
    return int(v * _UNITS[unit])


def configure(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--status", action="store_true", help="report the running service and its resident keys")
    g.add_argument("--stop", action="store_true", help="stop the running service")
    g.add_argument("--detach", action="store_true", help="start the service in the background")
    p.add_argument("--memory", type=parse_size, metavar="SIZE",
                   help="memory budget for resident keys, e.g. 6G (default: half of physical memory); "
                        "least recently used keys are evicted past it")
    p.add_argument("--tcp", type=int, metavar="PORT",
                   help="also listen on 127.0.0.1:PORT (0: any free port); requests must carry the token "
                        "written to the run directory's serve.token")
    p.add_argument("--device", help="cpu or cuda (default: cuda when present)")
    p.add_argument("--plain", action="store_true",
                   help="keep plain MSM tables (less memory, slower proofs) instead of GZKP's weighted ones")


def run(a: argparse.Namespace) -> int:
    if a.status or a.stop:
        try:
            reply = client.request({"op": "status" if a.status else "stop"})
        except client.Unavailable:
            print(f"zktensor serve: no service running ({paths.socket_path()})", file=sys.stderr)
            return 1
        except client.Lost as e:
            print(f"zktensor serve: {e}", file=sys.stderr)
            return 1
        print(client.status_text(reply) if a.status else f"zktensor serve: stopping pid {reply['pid']}")
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
