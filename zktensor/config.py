"""Which strategy, target and kernel parameters a computation uses.

Every knob is resolved in this order (the first that says something wins):

1. an explicit argument of the call (`zt.ntt(x, config=NTTConfig(...))`,
   `zt.msm(k, P, config=MSMConfig(...))`, `strategy=` of `zt.jit`);
2. `zt.config(...)` around the call or block (`with zt.config(strategy="fp64"):`);
3. the environment: ZKTENSOR_STRATEGY, ZKTENSOR_TARGET (and ZKTENSOR_CPU_LANES /
   ZKTENSOR_CPU_IFMA, see `runtime.cpu_isa`);
4. the tuning cache written by `zktensor autotune` (`zktensor.tune`), keyed by
   device, field, op, size bucket (a power of two) and zktensor version;
5. the cost model (`zktensor.tune.costmodel`), then the built-in defaults.

This module is a leaf: it imports nothing of the package. It holds the overrides and
reads the environment; `runtime.target.choose` picks a strategy and target from them,
and `tune.resolve` reads the tuning cache and the cost model for the ops.

Built-in defaults: on a CUDA tensor, Triton kernels with the `fp64` strategy where the
GPU runs FP64 at full rate (data-centre parts), else `int32` (`runtime.target.gpu_default`);
on a CPU tensor, the CPU target with the `fp64` strategy where the CPU has AVX-512
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

import contextvars
import os

_override: contextvars.ContextVar[dict] = contextvars.ContextVar("zktensor_config", default={})
# values from the tuning cache for the op being run (set by `tuned_scope`); below the
# user's overrides and the environment, above the built-in defaults
_tuned: contextvars.ContextVar[dict] = contextvars.ContextVar("zktensor_tuned", default={})

KNOWN = {"strategy", "target", "ntt", "msm", "block", "num_warps", "num_stages", "lanes", "ifma", "tuned"}


_ENV_DATA = os.environ._data if os.name == "posix" and hasattr(os.environ, "_data") else None


def env(name: str) -> str | None:
    """os.environ.get(name), for the launch path, which asks for five variables per kernel
    launch: on POSIX a lookup in the dict behind os.environ, skipping the Mapping API,
    which re-encodes the key on every call. Writes to os.environ (and pytest's
    monkeypatch) update that dict, so a change is seen at once."""
    if _ENV_DATA is None:
        return os.environ.get(name)
    key = _env_keys.get(name)
    if key is None:
        key = _env_keys[name] = os.fsencode(name)
    v = _ENV_DATA.get(key)
    return None if v is None else os.fsdecode(v)


_env_keys: dict[str, bytes] = {}


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


def tune_cache_setting() -> str | None:
    """ZKTENSOR_TUNE_CACHE, read here only: None when it turns the tuning cache off (off, 0,
    none, false), else the path it names ("": the default place)."""
    v = (env("ZKTENSOR_TUNE_CACHE") or "").strip()
    return None if v.lower() in ("off", "0", "none", "false") else v


def tuning_enabled() -> bool:
    """False inside `zt.config(tuned=False)` or with ZKTENSOR_TUNE_CACHE=off."""
    if _override.get().get("tuned") is False:
        return False
    return tune_cache_setting() is not None


def current() -> dict:
    """The `zt.config(...)` options in force here: `config(**current())` applies them elsewhere
    (another thread's context, a helper process)."""
    return dict(_override.get())


class _Scope:
    """Within its block (or a call of the function it decorates), a context variable holds
    `merge(its value outside)`; undone on exit. `contextlib.contextmanager` in a class's
    form: contextlib's import, with collections' and functools', would be start-up time
    of the thin client (`zktensor.serve.client` imports this package)."""
    __slots__ = ("_var", "_merge", "_tokens")

    def __init__(self, var: contextvars.ContextVar, merge):
        self._var, self._merge, self._tokens = var, merge, []

    def __enter__(self):
        self._tokens.append(self._var.set(self._merge(self._var.get())))

    def __exit__(self, *exc):
        self._var.reset(self._tokens.pop())

    def __call__(self, fn):
        def scoped(*args, **kwargs):
            with _Scope(self._var, self._merge):        # a scope a call: calls may overlap in threads
                return fn(*args, **kwargs)
        scoped.__name__, scoped.__qualname__, scoped.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
        scoped.__wrapped__ = fn
        return scoped


def config(**options) -> _Scope:
    """Override strategy/target and kernel parameters for the computations inside the block
    (also usable as a decorator)."""
    bad = set(options) - KNOWN
    if bad:
        raise TypeError(f"unknown config option(s) {sorted(bad)}; known: {sorted(KNOWN)}")
    given = {k: v for k, v in options.items() if v is not None}
    return _Scope(_override, lambda outer: {**outer, **given})


def tuned_values(values: dict) -> _Scope:
    """Within the block, `values` (strategy and launch options from the tuning cache, with
    "_target") apply below the user's overrides and the environment; values already in
    force (an enclosing op's) win. `tune.resolve.tuned_scope` finds them."""
    return _Scope(_tuned, lambda outer: {**values, **outer})


def tuned_strategy(target: str) -> str | None:
    """The tuning cache's strategy for the running op, if it was tuned for `target`."""
    t = _tuned.get()
    return t.get("strategy") if t.get("_target", target) == target else None
