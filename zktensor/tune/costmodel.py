"""Defaults where the tuning cache has no entry for (device, field, op, size bucket).

`defaults(op, space, n, device, batch)` returns a dict of config fields (missing or
None fields: the op's own rules decide). Two layers:

1. Rules, the ones the kernels were hand-tuned with, gathered here:
   - mul: on CUDA the device's default (`runtime.target.gpu_default`: `fp64` where FP64
     runs at full rate, else `int32`); on a CPU `fp64` with 8 lanes (AVX-512, IFMA where present),
     else `int64`; Triton elementwise blocks of 128 elements, 4 warps.
   - ntt: CPU two-pass kernels with N = 2^rows·2^cols, rows a little over half the
     stages (`default_rows_log`, measured on Zen 4), 2 butterflies unrolled;
     Triton B = 3 stages per pass (compile time grows steeply with B), G = 32 groups,
     4 warps; below 2^6 the CPU runs the per-stage algorithm (no kernel covers it).
   - msm: left to `ops.msm`'s own model (fields None): the window from Pippenger's
     operation count (`choose_window`: entries through the batch-affine tree plus
     buckets through the reduction, weighted by measured per-operation costs), K ~
     sqrt(buckets) reduction lanes; the prover prepares bases without GZKP weighted
     copies (memory first).
2. Transfer: size-independent fields (strategy, launch and ISA options, unroll,
   tree/inversion blocks) of the nearest tuned bucket of the same device, field and
   op, whatever its distance, replace the rules' values; the size-dependent ones
   (window, checkpoint, rows split, threads) stay with the rules.
"""
from __future__ import annotations

import math


from ..config import tuning_enabled
from ..runtime.target import cpu_default, gpu_default
from .cache import bucket, default_cache, device_name, op_key

PORTABLE = {
    "mul": ("strategy", "lanes", "ifma", "block", "num_warps", "num_stages"),
    "ntt": ("strategy", "cpu_unroll", "B", "G", "num_warps", "max_block", "ifma"),
    "msm": ("strategy", "tree_block", "inverse_block", "sparse"),
    "msm_prepared": ("strategy", "tree_block", "inverse_block", "sparse"),
}


def default_rows_log(log_n: int) -> int:
    """The CPU NTT's split of 2^log_n into 2^rows · 2^cols: rows of the column pass a little
    over half the stages (the column pass does more stages per load, and the row pass's tile
    still fits in L2), at least 2^3 rows and columns."""
    return max(3, min(log_n - 3, log_n // 2 + 1))


def _is_cuda(device) -> bool:
    # by name: a CPU computation (a host array's "cpu") needs no torch
    return str(getattr(device, "type", device) or "cpu").startswith("cuda")


def rules(op: str, space, n: int, device=None, batch: int = 1) -> dict:
    """The built-in rules for op at size n (see the module docstring)."""
    base = op.split(".")[0]
    cuda = _is_cuda(device)
    if base == "mul":
        if cuda:
            return {"strategy": gpu_default(device), "block": 128, "num_warps": 4}
        return {"strategy": cpu_default()}
    if base == "ntt":
        log_n = max(0, int(n).bit_length() - 1)
        if cuda:
            return {"B": 3, "G": 32, "num_warps": 4, "max_block": 1024}
        out = {"cpu_unroll": 2}
        if log_n >= 6:
            out["cpu_rows_log"] = default_rows_log(log_n)
        return out
    # msm / msm_prepared: window and chunks stay None, so that `ops.msm` applies its own
    # operation-count model (`choose_window`, with the config's cost weights and the batch)
    return {}


def defaults(op: str, space, n: int, device=None, batch: int = 1, cache=None) -> dict:
    """Rules, with the portable fields of the nearest tuned bucket laid over them."""
    out = rules(op, space, n, device, batch)
    near = nearest_entry(op, space.name, n, device, batch, cache)
    if near:
        for k in PORTABLE.get(op.split(".")[0], ()):
            if near.get(k) is not None:
                out[k] = near[k]
    return out


def nearest_entry(op: str, field: str, n: int, device=None, batch: int = 1, cache=None) -> dict | None:
    """The config of the tuned entry of (device, field, op) nearest to n in log size, any
    distance; None without one (or with tuning disabled)."""
    if cache is None:
        if not tuning_enabled():
            return None
        cache = default_cache()
    cache.refresh()
    if not cache.entries:
        return None
    dev = device_name(device)
    b = bucket(n)
    for o in dict.fromkeys((op_key(op, batch), op)):
        cands = [e for e in cache.entries.values()
                 if e.get("device") == dev and e.get("field") == field and e.get("op") == o]
        if cands:
            best = min(cands, key=lambda e: (abs(math.log2(int(e["bucket"])) - math.log2(b)), -int(e["bucket"])))
            return dict(best["config"])
    return None
