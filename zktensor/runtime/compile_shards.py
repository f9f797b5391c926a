"""Compiling a program's Triton kernels in N processes at once.

    ZKTENSOR_COMPILE_SHARD=3/16 python -m bench.msm ...     # one of 16 such processes

Triton compiles a kernel for the GPU when a process first launches it, on that process's
one core, one kernel after another: a whole proof's kernels wait minutes in one process
(bench/results/sass_proof_kernels_fp64_triton36.json). Run the same program in N
processes, each with ``ZKTENSOR_COMPILE_SHARD=k/N``, and process k compiles only the
kernels whose (kernel, specialization) hash falls to it, into Triton's on-disk cache that
all of them share; every other launch is skipped. An ordinary run afterwards finds all of
its kernels on disk. `zktensor warmup --device cuda` and `scripts/gpu.sh` work this way.

A sharded run is a compile pass: its results mean nothing. A skipped kernel's tensor
arguments are zeroed, outputs and inputs alike, because the buffers it would have written
hold whatever the allocator last kept there; zeros keep every index, count and loop bound
that a later kernel or torch operation reads in range, where garbage could send a gather
out of bounds and end the process's CUDA context before it reached its other kernels.
The programs must launch the same kernels whatever their data (the device graph reads
nothing back), so every shard sees the same launches and each kernel has one owner.
"""
from __future__ import annotations

import hashlib
import os
import threading

ENV = "ZKTENSOR_COMPILE_SHARD"

_installed: tuple[int, int] | None = None
_local = threading.local()
compiled: list[str] = []         # this process's own compiles, in order (names)
skipped: set[str] = set()        # kernels left to other shards


def parse(spec: str) -> tuple[int, int]:
    """'k/N' -> (k, N), 0 <= k < N."""
    try:
        k, n = (int(x) for x in spec.split("/"))
    except ValueError:
        raise ValueError(f"{ENV}={spec!r}: expected k/N, e.g. 3/16") from None
    if not 0 <= k < n:
        raise ValueError(f"{ENV}={spec!r}: needs 0 <= k < N")
    return k, n


def owner(kernel: str, key: str, n: int) -> int:
    """The shard that compiles `kernel` in specialization `key` (the same in every process:
    no salted hash)."""
    h = hashlib.sha256(f"{kernel}\0{key}".encode()).digest()
    return int.from_bytes(h[:8], "little") % n


def install(k: int, n: int) -> None:
    """Make this process shard k of n (see the module). Once per process."""
    global _installed
    if _installed is not None:
        if _installed != (k, n):
            raise RuntimeError(f"compile shard {_installed} already installed")
        return
    import torch
    from triton import knobs
    from triton.runtime.jit import JITFunction

    run = JITFunction.run

    def run_remembering_args(self, *args, grid, warmup, **kwargs):
        _local.args = args
        try:
            return run(self, *args, grid=grid, warmup=warmup, **kwargs)
        finally:
            _local.args = None

    def hook(*, key, repr, fn, compile, is_manual_warmup, **_):
        name = f"{fn.module}:{fn.name}"
        if owner(name, str(key), n) == k:
            compiled.append(fn.name)
            return False                    # compile it (and launch it)
        skipped.add(f"{name}:{key}")
        for a in getattr(_local, "args", None) or ():
            if isinstance(a, torch.Tensor):
                a.zero_()
        return True                         # Triton neither compiles nor launches it

    JITFunction.run = run_remembering_args
    knobs.runtime.jit_cache_hook = hook
    _installed = (k, n)


def install_from_env() -> tuple[int, int] | None:
    spec = os.environ.get(ENV)
    if not spec:
        return None
    k, n = parse(spec)
    install(k, n)
    return k, n


def active() -> bool:
    return _installed is not None
