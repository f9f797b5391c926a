"""The native thin client (``native_client.c``): built with this machine's C compiler and
installed as the environment's ``zktensor`` command.

    python -m zktensor.serve.native install     # scripts/setup_env.sh runs this
    python -m zktensor.serve.native remove      # pip's Python command back in its place

``install`` keeps a copy of pip's console script beside it as ``zktensor-py`` (the command
that the native client hands every command line but a plain ``prove`` through a running
service to), compiles the client into a temporary file there, runs it once
(``--help``, which it hands over, so both programs are tried), and renames it over
``zktensor``. Without a C compiler (``$CC``, else ``cc``, ``gcc`` or ``clang``) it says so and
changes nothing: ``zktensor prove`` keeps the Python client, which does the same work after
Python's start-up. Running ``install`` again rebuilds the client (after ``pip install``
has put its script back, too).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "native_client.c")
COMMAND = "zktensor"
PYTHON_COMMAND = "zktensor-py"
FLAGS = ["-std=c99", "-O2", "-Wall", "-Wextra"]

_ELF = b"\x7fELF"


class NativeError(RuntimeError):
    """The client could not be built or does not run."""


def compiler() -> str | None:
    cc = os.environ.get("CC")
    if cc:
        return shutil.which(cc) or cc
    return next(filter(None, map(shutil.which, ("cc", "gcc", "clang"))), None)


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def build(out: str, fallback: str, cc: str | None = None, flags: list[str] | None = None) -> None:
    """Compile the client into ``out``; it hands what it does not do itself to ``fallback``."""
    cc = cc or compiler()
    if cc is None:
        raise NativeError("no C compiler (set CC, or install cc, gcc or clang)")
    cmd = [cc, *(FLAGS if flags is None else flags), f"-DZKT_FALLBACK={_c_string(fallback)}", SOURCE, "-o", out]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise NativeError(f"{cc}: {e}") from None
    if res.returncode != 0:
        raise NativeError(f"{' '.join(cmd)} failed:\n{res.stderr.strip()}")


def is_native(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == _ELF
    except OSError:
        return False


def install(bin_dir: str | None = None) -> str:
    """Build and install the client in ``bin_dir`` (default: this interpreter's); what was done."""
    bin_dir = bin_dir or os.path.dirname(sys.executable)
    command, python_command = os.path.join(bin_dir, COMMAND), os.path.join(bin_dir, PYTHON_COMMAND)
    if not os.path.isfile(command):
        raise NativeError(f"no {command}: install zktensor (pip install) first")
    cc = compiler()
    if cc is None:
        return f"no C compiler (cc, gcc, clang or $CC): {command} stays the Python command"
    if not is_native(command):          # pip's console script: kept as the one we hand over to
        _replace_with(python_command, lambda tmp: shutil.copy2(command, tmp))
    elif not os.path.isfile(python_command):
        raise NativeError(f"{command} is a native client but {python_command} is missing: "
                          "pip install zktensor again, then run this again")

    def built(tmp):
        build(tmp, python_command, cc)
        res = subprocess.run([tmp, "--help"], capture_output=True, text=True, timeout=120)
        if res.returncode != 0 or "usage: zktensor" not in res.stdout:
            raise NativeError(f"the built client does not run (status {res.returncode}): "
                              f"{(res.stderr or res.stdout).strip()[-400:]}")
    _replace_with(command, built)
    return f"{command}: the native client (built with {os.path.basename(cc)}); {python_command}: the Python command"


def remove(bin_dir: str | None = None) -> str:
    """Put pip's Python command back as ``zktensor``; what was done."""
    bin_dir = bin_dir or os.path.dirname(sys.executable)
    command, python_command = os.path.join(bin_dir, COMMAND), os.path.join(bin_dir, PYTHON_COMMAND)
    if not is_native(command):
        return f"{command} is not the native client: nothing to do"
    if not os.path.isfile(python_command):
        raise NativeError(f"{python_command} is missing: pip install zktensor again to get the Python command back")
    os.replace(python_command, command)
    return f"{command}: the Python command again"


def _replace_with(path: str, make) -> None:
    """``make(tmp)`` writes a file beside ``path``, which then replaces it (never half of one)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        make(tmp)
        os.chmod(tmp, 0o755)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv not in (["install"], ["remove"]):
        print("usage: python -m zktensor.serve.native install | remove", file=sys.stderr)
        return 2
    try:
        print((install if argv[0] == "install" else remove)())
    except NativeError as e:
        print(f"zktensor.serve.native: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
