"""Which multiplication strategy and target a computation uses.

`choose` resolves them in the order `zktensor.config` describes: the caller's argument,
`zt.config(...)`, the environment (ZKTENSOR_STRATEGY, ZKTENSOR_TARGET), the tuning cache's
value for the running op, then the defaults: Triton on a CUDA tensor, with `fp64` where the
GPU runs FP64 at full rate, else `int32` (`gpu_default`); the CPU target on a CPU tensor,
with `fp64` where the CPU has 8-lane AVX-512 vectors, else `int64`.

Which strategies a target compiles is written once, in `STRATEGIES`: `int64` (64-bit machine
words) is a CPU strategy. A strategy asked for without naming the target (the environment,
`zt.config(strategy=...)`) that the target lacks takes the target's nearest (`int64` ->
`int32` on Triton); the compiler, which is always told both, refuses the pair (`check`).
"""
from __future__ import annotations

import functools

from ..config import env, tuned_strategy, user
from .cpu_isa import cpu_options

STRATEGIES = {"triton": ("int32", "fp64"), "cpu": ("int32", "int64", "fp64")}
NEAREST = {("triton", "int64"): "int32"}
# compute capabilities whose FP64 rate is half the FP32 rate (the CUDA programming guide's
# throughput table: P100, V100, A100, H100/H200, B200); the others run FP64 at 1/32 to 1/64
# of it, too slow for 52-bit limbs in doubles
FULL_RATE_FP64 = {(6, 0), (7, 0), (8, 0), (9, 0), (10, 0)}


def choose(device_type: str, strategy: str | None = None, target: str | None = None) -> tuple[str, str]:
    """(strategy, target) for a computation on a tensor of `device_type`."""
    target = target or user("target") or env("ZKTENSOR_TARGET") or ("triton" if device_type == "cuda" else "cpu")
    if device_type == "cuda" and target == "cpu":
        raise ValueError("the CPU target runs on CPU tensors; move the tensor with .to('cpu')")
    strategy = (strategy or user("strategy") or env("ZKTENSOR_STRATEGY") or tuned_strategy(target)
                or (cpu_default() if target == "cpu" else gpu_default() if device_type == "cuda" else "int32"))
    return NEAREST.get((target, strategy), strategy), target


def cpu_default() -> str:
    """The CPU target's default strategy: `fp64` with 8-lane vectors, else `int64`."""
    return "fp64" if cpu_options("fp64")["lanes"] == 8 else "int64"


def gpu_default(device=None) -> str:
    """The Triton target's default strategy on a CUDA device (default: the current one):
    `fp64` where it runs FP64 at full rate (`FULL_RATE_FP64`), else `int32`. On those GPUs
    fp64 is the strategy the lent GPUs have checked end to end, and its kernels compile far
    sooner than int32's, which keeps a first proof's wait short
    (bench/results/gpu/h200_2026-11-27b.md, bench/results/sass_device_msm.json).
    `zktensor autotune` may choose otherwise per op."""
    import torch
    if not torch.cuda.is_available():
        return "int32"              # (nothing runs on such a tensor here; the choice stays cheap)
    index = torch.device(device).index if device is not None else None
    return _gpu_default(torch.cuda.current_device() if index is None else index)


@functools.lru_cache(maxsize=None)
def _gpu_default(index: int) -> str:
    import torch
    return "fp64" if tuple(torch.cuda.get_device_capability(index)) in FULL_RATE_FP64 else "int32"


def check(strategy: str, target: str) -> None:
    """Refuse a strategy the target does not compile."""
    if target in STRATEGIES and strategy not in STRATEGIES[target]:
        raise ValueError(f"strategy {strategy!r} does not compile for the {target} target; "
                         f"it takes {' or '.join(repr(s) for s in STRATEGIES[target])}")
