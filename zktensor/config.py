"""Which strategy, target and kernel parameters a computation uses.

Every knob is resolved in this order (the first that says something wins):

1. an explicit argument of the call (`zt.ntt(x, config=NTTConfig(...))`,
   `zt.msm(k, P, config=MSMConfig(...))`, `strategy=` of `zt.jit`);
2. `zt.config(...)` around the call or block (`with zt.config(strategy="fp64"):`);
3. the environment: ZKTENSOR_STRATEGY, ZKTENSOR_TARGET (and ZKTENSOR_CPU_LANES /
   ZKTENSOR_CPU_IFMA, see `kernels.cpu_isa`);
4. the tuning cache written by `zktensor autotune` (`zktensor.tune`), keyed by
   device, field, op, size bucket (a power of two) and zktensor version;
5. the cost model (`zktensor.tune.costmodel`), then the built-in defaults.

Built-in defaults: on a CUDA tensor, Triton kernels with the `int32` strategy; on a
CPU tensor, the CPU target with the `fp64` strategy where the CPU has AVX-512
(8-lane vectors, IFMA products where present: the fastest exact CPU choice
measured, see bench/results/field.json), else `int64` (64-bit machine words,
scalar).

    with zt.config(strategy="fp64", target="triton"):
        c = a * b
    with zt.config(ntt={"cpu_unroll": 4}, msm={"window": 12}):   # fields over the tuned config
        X = zt.ntt(x)
    with zt.config(tuned=False):                                  # ignore the tuning cache
        X = zt.ntt(x)

Keys of `zt.config`:

    strategy, target       as above
    ntt                    an NTTConfig (replaces the tuned one) or a dict of its fields
                           (applied over the tuned / cost-model one)
    msm                    an MSMConfig or a dict of its fields, likewise
    block, num_warps, num_stages   launch parameters of the Triton elementwise kernels
    lanes, ifma            CPU target options (vector lanes 1/4/8, AVX-512 IFMA), clamped
                           to what the CPU has
    tuned                  False: do not read the tuning cache inside the block
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import os

_override: contextvars.ContextVar[dict] = contextvars.ContextVar("zktensor_config", default={})
# values from the tuning cache for the op being run (set by `tuned_scope`); below the
# user's overrides and the environment, above the built-in defaults
_tuned: contextvars.ContextVar[dict] = contextvars.ContextVar("zktensor_tuned", default={})

KNOWN = {"strategy", "target", "ntt", "msm", "block", "num_warps", "num_stages", "lanes", "ifma", "tuned"}
# the keys a tuning-cache entry may set through `tuned_scope`
SCOPED = ("strategy", "block", "num_warps", "num_stages", "lanes", "ifma")


_ENV_DATA = os.environ._data if os.name == "posix" and hasattr(os.environ, "_data") else None


def env(name: str) -> str | None:
    """os.environ.get(name), for the launch path, which asks for five variables per kernel
    launch: on POSIX a lookup in the dict behind os.environ (~0.1 us against ~2 us through
    the Mapping API, which re-encodes the key). Writes to os.environ (and pytest's
    monkeypatch) update that dict, so a change is seen at once."""
    if _ENV_DATA is None:
        return os.environ.get(name)
    v = _ENV_DATA.get(_env_key(name))
    return None if v is None else os.fsdecode(v)


@functools.lru_cache(maxsize=None)
def _env_key(name: str) -> bytes:
    return os.fsencode(name)


def choose(device_type: str, strategy: str | None = None, target: str | None = None) -> tuple[str, str]:
    o = _override.get()
    target = target or o.get("target") or env("ZKTENSOR_TARGET") or (
        "triton" if device_type == "cuda" else "cpu")
    if device_type == "cuda" and target == "cpu":
        raise ValueError("the CPU target runs on CPU tensors; move the tensor with .to('cpu')")
    t = _tuned.get()
    tuned = t.get("strategy") if t.get("_target", target) == target else None
    strategy = strategy or o.get("strategy") or env("ZKTENSOR_STRATEGY") or tuned or (
        "int32" if target == "triton" else _cpu_default())
    if target == "triton" and strategy == "int64":
        strategy = "int32"
    return strategy, target


def _cpu_default() -> str:
    return "fp64" if _lazy("kernels.cpu_isa").cpu_options("fp64")["lanes"] == 8 else "int64"


_modules: dict = {}


def _lazy(name: str):
    """zktensor.<name>, imported on first use (config is imported by what it names; an import
    statement inside a function costs microseconds on every launch)."""
    mod = _modules.get(name)
    if mod is None:
        import importlib
        mod = _modules[name] = importlib.import_module(f"{__package__}.{name}")
    return mod


def get(key: str, default=None):
    """A launch/target option (block, num_warps, num_stages, lanes, ifma): the user's
    `zt.config` value, else the tuning cache's for the running op, else `default`."""
    v = _override.get().get(key)
    if v is None:
        v = _tuned.get().get(key)
    return default if v is None else v


def user(key: str):
    """The value `zt.config(...)` set for `key`, or None."""
    return _override.get().get(key)


def tuned_value(key: str):
    """The tuning cache's value of `key` for the running op (see `tuned_scope`), or None."""
    return _tuned.get().get(key)


def tuning_enabled() -> bool:
    """False inside `zt.config(tuned=False)` or with ZKTENSOR_TUNE_CACHE=off."""
    if _override.get().get("tuned") is False:
        return False
    return (env("ZKTENSOR_TUNE_CACHE") or "").strip().lower() not in ("off", "0", "none", "false")


def current() -> dict:
    """The `zt.config(...)` options in force here: `config(**current())` applies them elsewhere
    (another thread's context, a helper process)."""
    return dict(_override.get())


@contextlib.contextmanager
def config(**options):
    """Override strategy/target and kernel parameters for the computations inside the block
    (also usable as a decorator)."""
    bad = set(options) - KNOWN
    if bad:
        raise TypeError(f"unknown config option(s) {sorted(bad)}; known: {sorted(KNOWN)}")
    token = _override.set({**_override.get(), **{k: v for k, v in options.items() if v is not None}})
    try:
        yield
    finally:
        _override.reset(token)


# -- the tuning cache --------------------------------------------------------------------------


def lookup(op: str, field: str, size: int, device, batch: int = 1) -> dict | None:
    """The tuned configuration (a dict of fields) for `op` on `field` at `size` elements on
    `device`, or None (no entry, tuning disabled, or an unreadable cache: never raises)."""
    if _override.get().get("tuned") is False:
        return None
    try:
        c = _lazy("tune.cache").default_cache()
        return None if c.path is None else c.lookup(op, field, size, device, batch=batch)
    except Exception as e:  # a broken cache must never break a computation
        import warnings
        warnings.warn(f"zktensor: tuning cache lookup failed ({e}); using defaults", stacklevel=2)
        return None


@contextlib.contextmanager
def tuned_scope(op: str, field: str, size: int, device, batch: int = 1, values: dict | None = None):
    """Within the block, the tuning cache's strategy and launch options for `op` apply where
    the user and the environment set none. Values already in force (an enclosing op's
    tuned configuration) win over this op's. `values`: use these instead of a lookup."""
    found = lookup(op, field, size, device, batch) if values is None else values
    add = {k: found[k] for k in SCOPED if found and found.get(k) is not None}
    if not add:
        yield found or {}
        return
    target = "triton" if getattr(device, "type", str(device)).startswith("cuda") else "cpu"
    cur = _tuned.get()
    token = _tuned.set({**add, "_target": target, **cur})
    try:
        yield found
    finally:
        _tuned.reset(token)


def ntt_config(F, n: int, device, batch: int = 1):
    """(NTTConfig, values) for an NTT of length n over F: `zt.config(ntt=...)`, else the
    tuning cache, else the cost model (`tune.costmodel`), else NTTConfig(). `values` also
    holds what is not an NTTConfig field (strategy, ifma): run the NTT inside
    `tuned_scope(..., values=values)`."""
    from dataclasses import fields as dc_fields, replace
    from .ops.ntt import NTTConfig
    names = {f.name for f in dc_fields(NTTConfig)}
    o = user("ntt")
    if isinstance(o, NTTConfig):
        return o, {}
    found = lookup("ntt", F.name, n, device, batch) or {}
    values = found or _cost("ntt", F, n, device, batch)
    cfg = _build(NTTConfig, names, values)
    if isinstance(o, dict):
        cfg = replace(cfg, **o)
    return cfg, values


def msm_config(G, n: int, device, batch: int = 1, prepared: bool = False):
    """MSMConfig for an MSM of n points of group G (`prepared`: bases for `msm_prepare`):
    `zt.config(msm=...)`, else the tuning cache, else the cost model (None fields: msm's
    own window/chunks model), else MSMConfig()."""
    from dataclasses import fields as dc_fields, replace
    from .ops.msm import MSMConfig
    o = user("msm")
    if isinstance(o, MSMConfig):
        return o
    names = {f.name for f in dc_fields(MSMConfig)}
    op = "msm_prepared" if prepared else "msm"
    found = lookup(op, G.name, n, device, batch) or {}
    cfg = _build(MSMConfig, names, found or _cost(op, G, n, device, batch))
    if isinstance(o, dict):
        cfg = replace(cfg, **o)
    return cfg


def _cost(op, space, n, device, batch) -> dict:
    try:
        from .tune import costmodel
        return costmodel.defaults(op, space, n, device, batch)
    except Exception:  # pragma: no cover - the model is advisory
        return {}


def _build(cls, names, values: dict):
    return cls(**{k: v for k, v in values.items() if k in names})
