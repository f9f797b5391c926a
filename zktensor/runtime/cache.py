"""The on-disk kernel cache: compiled programs keyed by what determines them.

Key = sha256(program text, strategy, target, compiler fingerprint). The
fingerprint hashes the source of the compiler itself (IR, passes, field
records, the CPU drivers' lowering), so editing a pass invalidates exactly
what it could change, and a cache copied to another machine stays valid
there (CPU kernels also key on the host CPU: `entry_key`). An entry is a directory with `meta.json` (the launch plan) and
`kernels.py` (Triton) or `kernels.so` (CPU); it is written to a temporary
directory and renamed into place, so a reader never sees half an entry.

Location: $ZKTENSOR_CACHE_DIR, else ~/.cache/zktensor; kernels live in
`<root>/kernels/<key>/`.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from ..config import env
from .atomic import publish_dir

_PKG = Path(__file__).resolve().parent.parent
_COMPILER_SOURCES = ("ir", "passes", "algebra/fields.py", "kernels/cpu_code.py")


def cache_root() -> Path:
    root = os.environ.get("ZKTENSOR_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "zktensor")
    return Path(root)


@functools.lru_cache(maxsize=1)
def compiler_fingerprint() -> str:
    h = hashlib.sha256()
    for rel in _COMPILER_SOURCES:
        p = _PKG / rel
        files = sorted(p.rglob("*.py")) if p.is_dir() else [p]
        for f in files:
            h.update(str(f.relative_to(_PKG)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def entry_key(program_text: str, strategy: str, target: str) -> str:
    """The entry of a program. CPU targets ("cpu..."), which LLVM compiles for the host's
    CPU whatever the kernel's options ask, also key on `cpu_isa.host_signature()`: a cache
    copied to a CPU with other features misses instead of handing it instructions it lacks."""
    if target.startswith("cpu"):
        from .cpu_isa import host_signature
        target = f"{target}@{host_signature()}"
    h = hashlib.sha256("\0".join([program_text, strategy, target, compiler_fingerprint()]).encode())
    return h.hexdigest()[:32]


@functools.lru_cache(maxsize=1)
def package_fingerprint() -> str:
    """A hash of every source file of the package: what `memo` keys on. Reading them all
    was a sizeable part of a one-shot command's start-up, so the hash is remembered per
    the files' stat signature (path, size, mtime, inode), as git's index trusts it: an
    edit, a checkout or a reinstall changes it, and the files are read again. As git
    does for "racy" files, a signature with a file modified in the last `RACY_S` is
    neither trusted nor remembered: an edit within the clock's granularity that keeps the
    size would not change it."""
    files = sorted(_PKG.rglob("*.py"))
    sig = hashlib.sha256()
    newest = 0
    for f in files:
        st = f.stat()
        newest = max(newest, st.st_mtime_ns)
        sig.update(f"{f.relative_to(_PKG)}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\n".encode())

    def by_content() -> str:
        h = hashlib.sha256()
        for f in files:
            h.update(str(f.relative_to(_PKG)).encode() + b"\0")
            h.update(f.read_bytes())
        return h.hexdigest()[:16]
    settled = time.time_ns() - newest > RACY_S * 1e9
    return _remembered(cache_root() / "memo" / f"package.{sig.hexdigest()[:32]}", by_content, trust=settled,
                       valid=lambda v: len(v) == 16)


RACY_S = 2.0


def memo(name: str, compute) -> str:
    """compute() (a string that only the package's source determines), remembered on disk
    per `package_fingerprint`: a cache key whose program text takes tracing to make (the
    pairing module's) is then read, not made.
    An unreadable or unwritable memo costs a compute(), never a wrong result; a stale one
    cannot be read, as any edit to the package changes the file's name."""
    return _remembered(cache_root() / "memo" / f"{name}.{package_fingerprint()}", compute)


def _remembered(path: Path, compute, trust: bool = True, valid=bool) -> str:
    """The string in `path` where it is trusted and valid, else compute(), then written
    there (when trusted). A file that cannot be read or written costs a compute()."""
    if trust:
        try:
            value = path.read_text()
            if valid(value):
                return value
        except OSError:
            pass
    value = compute()
    if trust:
        try:
            from .atomic import atomic_write
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_write(path) as f:
                f.write(value)
        except OSError:
            pass
    return value


PREBUILT_DIR = ".zktensor-prebuilt"


def prebuilt_root() -> Path:
    """Read-only entries made ahead of time (`python -m zktensor.prebuild`: the generated Triton
    source): $ZKTENSOR_PREBUILT_DIR, else the folder PREBUILT_DIR beside the package (the
    repository's root in a checkout), which travels with a working tree to a machine that
    cannot compile."""
    root = os.environ.get("ZKTENSOR_PREBUILT_DIR")
    return Path(root) if root else _PKG.parent / PREBUILT_DIR


def lookup(key: str) -> Path | None:
    """The entry of `key` in the cache, else among the pre-built entries, else None."""
    for root in (cache_root(), prebuilt_root()):
        d = root / "kernels" / key
        if (d / "meta.json").exists():
            return d
    return None


class CompilerUnavailable(ImportError):
    """A program has no kernel in the cache (nor in the pre-built Triton source) and this
    process cannot compile one: the MLIR bindings are missing, or ZKTENSOR_NO_COMPILER is set.
    Conversions fall back to torch arithmetic on it (`kernels.field_programs.to_mont`)."""


def compiler_disabled() -> bool:
    """ZKTENSOR_NO_COMPILER=1: behave as a machine without the MLIR bindings (never compile;
    only cached and pre-built kernels run). `build` refuses then, whoever asks."""
    return (env("ZKTENSOR_NO_COMPILER") or "").strip().lower() not in ("", "0", "false", "no")


_compiled = 0
_notes_lock = threading.Lock()


def _notes_on() -> bool:
    return os.environ.get("ZKTENSOR_COMPILE_NOTES", "on") != "off"


def first_use_note(message: str) -> None:
    """One line on stderr for other once-per-machine work that would otherwise be silent
    (a key's tables prepared for the table cache); ZKTENSOR_COMPILE_NOTES=off silences it
    with the compile notes."""
    if _notes_on():
        print(f"zktensor: {message}", file=sys.stderr, flush=True)


def _note_start(label: str) -> int:
    """A cold compile says so on stderr before it starts (a first proof on a fresh machine is
    otherwise silent for as long as its kernels take), and again when it ends;
    ZKTENSOR_COMPILE_NOTES=off silences both. Returns the compile's number in this process."""
    global _compiled
    with _notes_lock:
        _compiled += 1
        n = _compiled
    if _notes_on():
        if n == 1:
            print(f"zktensor: compiling kernels on first use (once; cached in {cache_root() / 'kernels'}; "
                  "`zktensor warmup` compiles them ahead of time)", file=sys.stderr, flush=True)
        print(f"zktensor: compiling kernel {n} ({label}) ...", file=sys.stderr, flush=True)
    return n


def _note_end(label: str, n: int, seconds: float) -> None:
    if _notes_on():
        print(f"zktensor: compiled kernel {n} ({label}) in {seconds:.1f} s", file=sys.stderr, flush=True)


def build(key: str, builder, label: str | None = None) -> Path:
    """Run builder(tmp_dir) -> meta dict, then publish the entry atomically. label: what the
    compile notes call the kernel (default: the builder's module)."""
    if label is None:
        label = (getattr(builder, "__module__", None) or "?").rsplit(".", 1)[-1]
    if compiler_disabled():
        raise CompilerUnavailable(f"no cached kernel ({label}) and compiling is switched off (ZKTENSOR_NO_COMPILER)")
    n = _note_start(label)
    t0 = time.perf_counter()
    final = cache_root() / "kernels" / key
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=final.parent))
    try:
        meta = builder(str(tmp))
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
        publish_dir(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _note_end(label, n, time.perf_counter() - t0)
    return final
