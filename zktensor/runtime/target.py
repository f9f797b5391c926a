"""Which multiplication strategy and target a computation uses.

`choose` resolves them in the order `zktensor.config` describes: the caller's argument,
`zt.config(...)`, the environment (ZKTENSOR_STRATEGY, ZKTENSOR_TARGET), the tuning cache's
value for the running op, then the defaults: Triton with `int32` on a CUDA tensor; the CPU
target on a CPU tensor, with `fp64` where the CPU has 8-lane AVX-512 vectors, else `int64`.

Which strategies a target compiles is written once, in `STRATEGIES`: `int64` (64-bit machine
words) is a CPU strategy. A strategy asked for without naming the target (the environment,
`zt.config(strategy=...)`) that the target lacks takes the target's nearest (`int64` ->
`int32` on Triton); the compiler, which is always told both, refuses the pair (`check`).
"""
from __future__ import annotations

from ..config import env, tuned_strategy, user
from .cpu_isa import cpu_options

STRATEGIES = {"triton": ("int32", "fp64"), "cpu": ("int32", "int64", "fp64")}
NEAREST = {("triton", "int64"): "int32"}


def choose(device_type: str, strategy: str | None = None, target: str | None = None) -> tuple[str, str]:
    """(strategy, target) for a computation on a tensor of `device_type`."""
    target = target or user("target") or env("ZKTENSOR_TARGET") or ("triton" if device_type == "cuda" else "cpu")
    if device_type == "cuda" and target == "cpu":
        raise ValueError("the CPU target runs on CPU tensors; move the tensor with .to('cpu')")
    strategy = (strategy or user("strategy") or env("ZKTENSOR_STRATEGY") or tuned_strategy(target)
                or ("int32" if target == "triton" else cpu_default()))
    return NEAREST.get((target, strategy), strategy), target


def cpu_default() -> str:
    """The CPU target's default strategy: `fp64` with 8-lane vectors, else `int64`."""
    return "fp64" if cpu_options("fp64")["lanes"] == 8 else "int64"


def check(strategy: str, target: str) -> None:
    """Refuse a strategy the target does not compile."""
    if target in STRATEGIES and strategy not in STRATEGIES[target]:
        raise ValueError(f"strategy {strategy!r} does not compile for the {target} target; "
                         f"it takes {' or '.join(repr(s) for s in STRATEGIES[target])}")
