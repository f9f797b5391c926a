"""Where the service's files live: a private directory in the user's runtime dir.

``$ZKTENSOR_SERVE_DIR`` if set; else ``$XDG_RUNTIME_DIR/zktensor`` (a per-user tmpfs,
gone at logout: the natural home of a socket); else ``<cache root>/run`` (the kernel
cache's root, ``$ZKTENSOR_CACHE_DIR`` or ``~/.cache/zktensor``). The directory is
made 0700 and must be owned by this user, so the socket inside it (also 0600) is
reachable by its owner alone.

Files: ``serve.sock`` (the socket), ``serve.json`` (pid, socket, TCP port of the
running service), ``serve.token`` (the TCP token, 0600, only with ``--tcp``),
``serve.log`` (a detached service's output).

Paths are strings (os.path), not pathlib's: the thin client imports this module, and
pathlib's import was a sizeable part of its start-up.
"""
from __future__ import annotations

import os
import stat


def _cache_root() -> str:
    return os.environ.get("ZKTENSOR_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "zktensor")


def run_dir(create: bool = False) -> str:
    if os.environ.get("ZKTENSOR_SERVE_DIR"):
        d = os.environ["ZKTENSOR_SERVE_DIR"]
    elif os.environ.get("XDG_RUNTIME_DIR") and os.path.isdir(os.environ["XDG_RUNTIME_DIR"]):
        d = os.path.join(os.environ["XDG_RUNTIME_DIR"], "zktensor")
    else:
        d = os.path.join(_cache_root(), "run")
    if create:
        os.makedirs(d, mode=0o700, exist_ok=True)
        check_private(d)
    return d


def check_private(d: str) -> None:
    """Refuse a run directory that another user owns; make ours 0700."""
    st = os.stat(d)
    if st.st_uid != os.getuid():
        raise PermissionError(f"{d}: owned by uid {st.st_uid}, not by this user ({os.getuid()})")
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(d, 0o700)


def socket_path() -> str:
    return os.path.join(run_dir(), "serve.sock")


def info_path() -> str:
    return os.path.join(run_dir(), "serve.json")


def token_path() -> str:
    return os.path.join(run_dir(), "serve.token")


def log_path() -> str:
    return os.path.join(run_dir(), "serve.log")
