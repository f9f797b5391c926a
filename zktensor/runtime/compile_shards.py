"""Compiling a program's Triton kernels in N processes at once.

    ZKTENSOR_COMPILE_SHARD=3/16 python -m bench.msm ...     # one of 16 such processes

Triton compiles a kernel for the GPU when a process first launches it, on that process's
one core, one kernel after another: a whole proof's kernels wait minutes in one process
(bench/results/sass_proof_kernels_fp64_triton36.json). Run the same program in N
processes, each with ``ZKTENSOR_COMPILE_SHARD=k/N``, and process k compiles only the
kernels it owns, into Triton's on-disk cache that all of them share; every other launch
is skipped. An ordinary run afterwards finds all of its kernels on disk. `zktensor warmup
--device cuda` and `scripts/gpu.sh` work this way.

Who owns a kernel: with ``ZKTENSOR_COMPILE_CLAIMS=<folder>`` (the warmup's and gpu.sh's
passes), the first process to reach it, which claims it by creating a file named by its
hash there (O_EXCL: one winner); the others skip it and go on to claim the next ones. So a
process busy with a long compile (G2's accumulate kernel) claims nothing meanwhile, and
the work is shared out greedily, in launch order. Without a folder, the shard whose number
the (kernel, specialization) hash gives: no shared state, but a process may draw several
of the long compiles and finish long after the others (the commit that added the claims
has a simulation of both over a proof's compile times).
"""
from __future__ import annotations

import hashlib
import os
import threading

ENV = "ZKTENSOR_COMPILE_SHARD"
CLAIMS_ENV = "ZKTENSOR_COMPILE_CLAIMS"

_installed: tuple[int, int] | None = None
_claims: str | None = None
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


def claim(kernel: str, key: str, folder: str, k: int) -> bool:
    """Whether this process (shard k) is the first to claim `kernel` in specialization `key`
    in `folder` (then it compiles it; see the module)."""
    name = hashlib.sha256(f"{kernel}\0{key}".encode()).hexdigest()[:32]
    try:
        fd = os.open(os.path.join(folder, name), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as f:
        f.write(f"{k} {kernel}\n")
    return True


def install(k: int, n: int, claims: str | None = None) -> None:
    """Make this process shard k of n (see the module); claims: the folder of first-come
    ownership (None: ownership by hash). Once per process."""
    global _installed, _claims
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
        if claim(name, str(key), claims, k) if claims else owner(name, str(key), n) == k:
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
    _claims = claims


def install_from_env() -> tuple[int, int] | None:
    spec = os.environ.get(ENV)
    if not spec:
        return None
    k, n = parse(spec)
    claims = os.environ.get(CLAIMS_ENV) or None
    if claims and not os.path.isdir(claims):
        raise ValueError(f"{CLAIMS_ENV}={claims!r}: no such folder")
    install(k, n, claims)
    return k, n


def active() -> bool:
    return _installed is not None
