"""Which strategy and target a computation uses.

Defaults: on a CUDA tensor, Triton kernels with the `int32` strategy; on a CPU
tensor, the CPU target with the `fp64` strategy where the CPU has AVX-512
(8-lane vectors, IFMA products where present: the fastest exact CPU choice
measured, see bench/results/field.json), else `int64` (64-bit machine words,
scalar). Environment
variables ZKTENSOR_STRATEGY and ZKTENSOR_TARGET override the defaults, and
`zt.config(...)` overrides both for a block:

    with zt.config(strategy="fp64", target="triton"):
        c = a * b
"""
from __future__ import annotations

import contextlib
import contextvars
import os

_override: contextvars.ContextVar[dict] = contextvars.ContextVar("zktensor_config", default={})

KNOWN = {"strategy", "target"}


def choose(device_type: str, strategy: str | None = None, target: str | None = None) -> tuple[str, str]:
    o = _override.get()
    target = target or o.get("target") or os.environ.get("ZKTENSOR_TARGET") or (
        "triton" if device_type == "cuda" else "cpu")
    if device_type == "cuda" and target == "cpu":
        raise ValueError("the CPU target runs on CPU tensors; move the tensor with .to('cpu')")
    default = "int32" if target == "triton" else _cpu_default()
    strategy = strategy or o.get("strategy") or os.environ.get("ZKTENSOR_STRATEGY") or default
    if target == "triton" and strategy == "int64":
        strategy = "int32"
    return strategy, target


def _cpu_default() -> str:
    from .kernels.cpu_isa import cpu_options
    return "fp64" if cpu_options("fp64")["lanes"] == 8 else "int64"


@contextlib.contextmanager
def config(**options):
    """Override strategy/target for the computations inside the block."""
    bad = set(options) - KNOWN
    if bad:
        raise TypeError(f"unknown config option(s) {sorted(bad)}; known: {sorted(KNOWN)}")
    token = _override.set({**_override.get(), **{k: v for k, v in options.items() if v is not None}})
    try:
        yield
    finally:
        _override.reset(token)
