"""Search spaces: the configurations each op's kernels expose on a device.

A `Space` is a base configuration (the cost model's choice, always measured first)
and axes; the tuner walks the axes one at a time (coordinate descent: every value of
an axis with the others at the best so far), so the number of candidates is the sum
of the axes' lengths, not their product, and a run cut short by its budget still
ends with the best of what the most important axes (first) offered.

Per op and device (values outside what the hardware has are never offered):

| op | CPU | CUDA (Triton) |
|---|---|---|
| mul | strategy × lanes × IFMA (fp64 8-lane IFMA / FMA-split, scalar fp64, int64, int32) | strategy int32/fp64, BLOCK with num_warps = BLOCK / 32 (or / 64), num_stages |
| ntt | rows split (`cpu_rows_log`), unroll, threads, IFMA, kernels vs per-stage | B stages per pass, G groups, num_warps, max_block, register cap, strategy |
| msm | window, reduction lanes K, tree block, inversion block, strategy, sparse split, then the lanes loop against the best tree | the device MSM: window (around `device_window`), point-major arrays, segment, BLOCK (warps = BLOCK / 32), register cap, strategy |
| msm_prepared | as msm, plus the GZKP checkpoint interval M (as copies of the bases, capped) | as msm (the device keeps prepared bases as they are) |
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Callable

import torch

from ..runtime.target import gpu_default


@dataclass
class Axis:
    """One knob. Each value is a scalar for `name`, a dict of fields, or a callable
    (current config) -> dict (values that depend on the others, e.g. a checkpoint
    interval from the current window)."""
    name: str
    values: list

    def apply(self, current: dict, value) -> dict:
        if callable(value):
            return {**current, **value(current)}
        if isinstance(value, dict):
            return {**current, **value}
        return {**current, self.name: value}


@dataclass
class Space:
    base: dict
    axes: list[Axis] = field(default_factory=list)
    valid: Callable[[dict], bool] | None = None

    def size(self) -> int:
        return 1 + sum(len(a.values) for a in self.axes)


def canonical(cfg: dict) -> str:
    """A candidate's identity: its non-None fields as sorted JSON."""
    return json.dumps({k: v for k, v in cfg.items() if v is not None}, sort_keys=True)


def clean(cfg: dict) -> dict:
    return {k: v for k, v in sorted(cfg.items()) if v is not None}


def _uniq(values):
    out = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def hw_cpu() -> dict:
    """What the CPU has, independent of zt.config and the tuning cache."""
    from ..config import config
    from ..runtime.cpu_isa import cpu_options
    with config(tuned=False):
        o = cpu_options("fp64")
    return o


WARPS_OF = 32           # threads a warp


def threads_values(n_threads: int) -> list:
    vals = [None, 1]
    t = 2
    while t < n_threads:
        vals.append(t)
        t *= 2
    return _uniq(vals)


# -- mul -----------------------------------------------------------------------------------------


def mul_space(device: torch.device, limbs: int, thorough: bool = False) -> Space:
    from .costmodel import rules
    if device.type == "cuda":
        # block and warps move together (no warp repeating another's elements): one element
        # a thread, or two; the point kernels take the same block, one column a thread
        # (`kernels.msm_triton.launch_shape`)
        base = {"strategy": rules("mul", None, 0, device)["strategy"], "block": 128, "num_warps": 4,
                "num_stages": None}
        blocks = [64, 128, 256, 512] + ([1024] if thorough else [])
        return Space(base, [
            Axis("strategy", ["int32", "fp64"]),
            Axis("block", [{"block": b, "num_warps": b // WARPS_OF} for b in blocks]),
            Axis("num_warps", [lambda cur: {"num_warps": max(1, cur["block"] // (2 * WARPS_OF))}]),
            Axis("num_stages", [1, 2, 3]),
        ])
    hw = hw_cpu()
    base = {"strategy": rules("mul", None, 0, device)["strategy"], "lanes": hw["lanes"], "ifma": hw["ifma"]}
    isa = []
    if hw["lanes"] > 1:
        isa.append({"strategy": "fp64", "lanes": hw["lanes"], "ifma": hw["ifma"]})
        if hw["ifma"]:
            isa.append({"strategy": "fp64", "lanes": hw["lanes"], "ifma": False})
    isa += [{"strategy": "fp64", "lanes": 1, "ifma": False},
            {"strategy": "int64", "lanes": 1, "ifma": False},
            {"strategy": "int32", "lanes": 1, "ifma": False}]
    if base["strategy"] != "fp64":
        base = {**base, "lanes": 1, "ifma": False}
    return Space(base, [Axis("isa", isa)])


# -- ntt -----------------------------------------------------------------------------------------


def ntt_space(device: torch.device, log_n: int, limbs: int, thorough: bool = False) -> Space:
    from .costmodel import rules
    base = dict(rules("ntt", None, 1 << log_n, device))
    if device.type == "cuda":
        base.setdefault("strategy", gpu_default(device))
        return Space(base, [
            Axis("G", [8, 16, 32, 64, 128]),
            Axis("num_warps", [2, 4, 8]),
            Axis("B", [2, 3] + ([4] if thorough else [])),
            Axis("max_block", [512, 1024, 2048]),
            Axis("max_registers", [128]),
            Axis("strategy", ["int32", "fp64"]),
        ])
    hw = hw_cpu()
    from ..runtime.threads import num_threads
    if log_n >= 6 and hw["lanes"] == 8:
        d = base.get("cpu_rows_log")
        rows = [r for r in range(d - 2, d + 3) if 3 <= r <= log_n - 3] if d is not None else []
        axes = [Axis("cpu_rows_log", rows), Axis("cpu_unroll", [1, 2, 4])]
        if num_threads() > 1:
            axes.append(Axis("threads", threads_values(num_threads())))
        if hw["ifma"]:
            base["ifma"] = True
            axes.append(Axis("ifma", [True, False]))
        if log_n <= 16 or thorough:
            base["algorithm"] = "auto"
            axes.append(Axis("algorithm", ["stages"]))
        return Space(base, axes)
    # no CPU kernel for this size/CPU: the per-stage algorithm, whose launches a strategy picks
    mul = mul_space(device, limbs)
    base = {**base, "algorithm": "stages", **mul.base}
    return Space(base, mul.axes)


# -- msm -----------------------------------------------------------------------------------------


def msm_space(device: torch.device, group, n: int, batch: int = 1, prepared: bool = False,
              sparse: bool = False, max_copies: int = 4, thorough: bool = False) -> Space:
    from ..ops.msm import MAX_WINDOW, auto_strategy, choose_chunks, choose_window, n_windows
    bits = group.r.bit_length()
    span = 3 if thorough else 2
    if device.type == "cuda":
        return _device_msm_space(device, group, n, batch, bits, span)
    c0 = choose_window(max(n, 1), bits, batch=max(batch, 1))
    windows = [c for c in range(c0 - span, c0 + span + 1) if 2 <= c <= MAX_WINDOW and c != c0]
    base = {"window": c0}
    axes = [Axis("window", windows)]

    def chunks_for(factor):
        return lambda cur: {"chunks": max(1, min(1 << (cur["window"] - 1),
                                                 int(choose_chunks(1 << (cur["window"] - 1)) * factor)))}
    axes.append(Axis("chunks", [chunks_for(0.5), chunks_for(2.0)]))
    axes.append(Axis("reduction", ["suffix"]))            # against the default halving
    if prepared and max_copies > 1:
        def copies(k):
            return lambda cur: {"checkpoint": math.ceil(n_windows(bits, cur["window"]) / k)}
        ks = [k for k in (2, 4, 8, 16) if k <= max_copies]
        axes.append(Axis("copies", [copies(k) for k in ks]))
    axes += [Axis("tree_block", [4, 8]), Axis("inverse_block", [4, 8])]      # against 2, 2
    auto = auto_strategy(group, device)
    base["strategy"] = auto
    strategies = [s for s in ("fp64", "int64") if s != auto]
    axes.append(Axis("strategy", strategies))
    if sparse:
        axes.append(Axis("sparse", [False]))
    from ..kernels import msm_small_cpu
    if msm_small_cpu.available():
        # the knobs above are the tree's: it is the base, and the loop (its own window) last
        base["accumulation"] = "tree"
        axes.append(Axis("accumulation", ["lanes"]))
    return Space(base, axes)


def _device_msm_space(device, group, n: int, batch: int, bits: int, span: int) -> Space:
    """The device MSM (`ops.msm.device`, prepared bases included: it keeps them as they are):
    its window around `device_window`, point-major arrays (`MSMConfig.point_major`), the
    segment a lane of the accumulation adds and the first round's lane order
    (`MSMConfig.balanced`), the point kernels' block (warps = block // 32,
    one column a thread), a register cap (`MSMConfig.max_registers`) and the strategy; the
    CPU plan's knobs (chunks, reduction, tree and inversion blocks, checkpoints, the sparse
    split) do nothing there. The window is the program's: with the GLV split (on for G1
    and G2 of BN254 and BLS12-381), 2n points of half the bits; off is an axis too."""
    from ..ops.msm.device import MAX_DEVICE_WINDOW, MSMConfig, device_window, glv_endomorphism
    e = glv_endomorphism(group, MSMConfig(), n, bits)
    c0 = device_window(max(2 * n if e else n, 1), e.bits if e else bits, max(batch, 1))
    windows = [c for c in range(c0 - span, c0 + span + 1) if 2 <= c <= MAX_DEVICE_WINDOW and c != c0]
    first = gpu_default(device)
    base = {"window": c0, "segment": 16, "block": 64, "strategy": first}
    axes = [Axis("window", windows), Axis("point_major", [True]), Axis("segment", [8, 32]),
            Axis("balanced", [False]), Axis("block", [32, 128]), Axis("max_registers", [168, 128]),
            Axis("strategy", [s for s in ("int32", "fp64") if s != first])]
    return Space(base, axes + ([Axis("glv", [False])] if e else []))
