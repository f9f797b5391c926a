"""Importing generated Triton source, compiled for a GPU or under Triton's CPU interpreter.

Triton reads TRITON_INTERPRET when a kernel is decorated and when it runs, so both happen
inside `triton_mode`, one thread at a time.

The interpreter evaluates Triton's integer-overflow check for every add, sub and mul of
fewer than 64 bits (casts to int64, the operation again, two comparisons) and then drops
the assertion unless `debug` is on, as compiled kernels do. In our limb arithmetic that
discarded work is most of an interpreted kernel's time, so `triton_mode(True)` turns the
check off whenever debug is off; results cannot change, since nothing read it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import io
import os
import threading
from pathlib import Path

_import_lock = threading.RLock()


@contextlib.contextmanager
def triton_mode(interpret: bool):
    """TRITON_INTERPRET as Triton reads it while decorating and running kernels."""
    with _import_lock:
        if interpret:
            _skip_discarded_overflow_checks()
        old = os.environ.get("TRITON_INTERPRET")
        os.environ["TRITON_INTERPRET"] = "1" if interpret else "0"
        try:
            yield
        finally:
            if old is None:
                del os.environ["TRITON_INTERPRET"]
            else:
                os.environ["TRITON_INTERPRET"] = old


def _skip_discarded_overflow_checks():
    try:
        from triton.runtime.interpreter import interpreter_builder as builder
    except ImportError:                     # a Triton without the interpreter's global builder
        return
    opts = getattr(builder, "options", None)
    if dataclasses.is_dataclass(opts) and not getattr(opts, "debug", True) \
            and getattr(opts, "sanitize_overflow", False):
        builder.options = dataclasses.replace(opts, sanitize_overflow=False)


_loaded: dict = {}                  # (kind, key) -> module: the generated modules this process loaded
_kind_locks: dict = {}
_loaded_lock = threading.Lock()


def loaded_module(kind: str, key: tuple, make_source, version: str, tag: str, kernels: list,
                  interpret: bool):
    """A kernel family's generated module (`kind`, e.g. "ntt_triton"), made once a process
    per `key`: `make_source()` is the Triton source, stored in the kernel cache under
    entry_key(source, version, tag) (`generated_module`). One family makes its modules one at
    a time (its lock); families do not wait for each other."""
    with _loaded_lock:
        mod = _loaded.get((kind, key))
        if mod is not None:
            return mod
        lock = _kind_locks.setdefault(kind, threading.Lock())
    from . import cache
    with lock:
        mod = _loaded.get((kind, key))
        if mod is None:
            src = make_source()
            mod = generated_module(src, cache.entry_key(src, version, tag), {"kind": kind, "kernels": kernels},
                                   interpret)
            with _loaded_lock:
                _loaded[(kind, key)] = mod
        return mod


def forget_loaded() -> None:
    """Forget the modules `loaded_module` made: the next use of each looks it up in the
    kernel cache again (`prebuild.recording` records those lookups)."""
    with _loaded_lock:
        _loaded.clear()


def generated_module(src: str, key: str, meta: dict, interpret: bool):
    """Generated Triton source as a loaded module: written once to the kernel cache's entry
    `key` (`meta`: the entry's description, e.g. {"kind", "kernels"}), found there (or in the
    pre-built folder) later, and imported (`load_triton_module`)."""
    from . import cache

    def build(d):
        with open(f"{d}/kernels.py", "w") as f:
            f.write(src)
        return meta
    entry = cache.lookup(key) or cache.build(key, build)
    return load_triton_module(str(entry / "kernels.py"), interpret)


def load_triton_module(path: str, interpret: bool):
    """Import generated Triton source; `interpret` picks the CPU interpreter. Compiled, each
    function's Triton cache key is given from the file's text (`preset_cache_keys`)."""
    with open(path, "rb") as f:
        data = f.read()
    with triton_mode(interpret), _sources_from(path, data.decode()):
        name = f"zktensor_gen_{Path(path).parent.name}_{'i' if interpret else 'c'}"
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    if not interpret:
        preset_cache_keys(mod, path, data)
    return mod


def preset_cache_keys(mod, path: str, data: bytes) -> int:
    """Give every @jit function of a generated module its Triton cache key ahead of time:
    sha256 of the file's bytes (``data``), the function's name and first line. Returns how many.

    Triton computes `JITFunction.cache_key` (the source half of its compile-cache key) on a
    kernel's first launch in each process by parsing the kernel and walking its AST and
    those of everything it calls, hashing their sources. Our device functions are the
    whole field and curve formulas, so that walk is seconds per process for the device
    MSM's modules (the figures are in the commit that made this), every time, binary cache
    hit or not. The walk's result depends only on text that this file holds: a generated
    module calls nothing outside itself but `triton.language` (its header imports only
    triton, and os to pick one of its own functions by TRITON_INTERPRET), and names no
    global but its own functions. So the file's hash decides as
    much as Triton's would, and a changed formula still makes a new key. Triton adds its
    own version, the target and the options to this key, as before.

    What the walk also did is list the globals a kernel reads, so that a launch can refuse
    one that changed since compiling; a generated module has no mutable global to change.
    tests/runtime/test_triton_sources.py checks that Triton's own walk accepts every kind
    of generated module, and that the keys differ per function and per text."""
    import hashlib
    digest = hashlib.sha256(data).hexdigest()
    n, seen = 0, set()
    for obj in vars(mod).values():
        code = getattr(getattr(obj, "fn", None), "__code__", None)
        if code is None or code.co_filename != path or not hasattr(obj, "hash") or id(obj) in seen:
            continue                                    # (a function under two names: once)
        seen.add(id(obj))
        obj.hash = hashlib.sha256(f"{digest}:{code.co_name}:{code.co_firstlineno}".encode()).hexdigest()
        obj.used_global_vals = {}
        n += 1
    return n


def source_blocks(path: str, text: str | None = None) -> dict[int, tuple[list[str], int]]:
    """{first line: (lines, first line)} of every top-level function of a generated module,
    decorators included, as `inspect.getsourcelines` gives them: from the first decorator
    to the function's last line of code (comment and blank lines after it left out).

    Triton's `@jit` takes each function's source from `inspect.getsourcelines`, which
    tokenizes the function in pure Python: for our large straight-line modules most of
    their load, paid by every process that loads them (on a GPU, part of each new
    process's first proof; the figures are in the commit that made this). Our generators write every function at column 0, its header on
    the `def` line and its body indented, with no multi-line string reaching column 0, so
    a function ends where the next code line at column 0 begins; tests/runtime compares this
    with inspect for every generated module kind."""
    if text is None:
        with open(path) as f:
            lines = f.readlines()
    else:                   # the file's text, read by the caller: split as open() would
        lines = io.StringIO(text, newline=None).readlines()
    blocks, i, n = {}, 0, len(lines)
    while i < n:
        if not lines[i].startswith(("@", "def ")):
            i += 1
            continue
        first = i
        while not lines[i].startswith("def "):         # the decorators
            i += 1
        last, i = i, i + 1
        while i < n and (lines[i][:1] in (" ", "\t", "#") or not lines[i].strip()):
            if lines[i].strip() and not lines[i].lstrip().startswith("#"):
                last = i
            i += 1
        blocks[first + 1] = (lines[first:last + 1], first + 1)
    return blocks


@contextlib.contextmanager
def _sources_from(path: str, text: str | None = None):
    """`inspect.getsourcelines` answered from `source_blocks(path)` for the functions of
    that file while it is imported (one import at a time: `triton_mode` holds the import
    lock); any other object is inspect's own business."""
    import inspect
    blocks, real = source_blocks(path, text), inspect.getsourcelines

    def getsourcelines(obj):
        code = getattr(obj, "__code__", None)
        if code is not None and code.co_filename == path and code.co_firstlineno in blocks:
            src, first = blocks[code.co_firstlineno]
            return list(src), first
        return real(obj)
    inspect.getsourcelines = getsourcelines
    try:
        yield
    finally:
        inspect.getsourcelines = real


# a compile pass in N processes (runtime/compile_shards.py): every module that launches
# Triton kernels imports this one first
from .compile_shards import install_from_env  # noqa: E402
install_from_env()
