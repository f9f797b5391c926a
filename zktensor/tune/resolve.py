"""What the ops read of tuning: the cache's entry for an op, else the cost model's rules.

    with tuned_scope("ntt", F.name, n, device) as values: ...   # strategy, launch options
    cfg, values = resolve(NTTConfig, "ntt", "ntt", F, n, device)

`tuned_scope` puts the entry's strategy and launch options in force for the block (below
the user's `zt.config` and the environment, see `zktensor.config`); `resolve` builds an
op's config dataclass from `zt.config(<key>=...)`, the cache and the cost model. The ops
define their config classes (`ops.ntt.NTTConfig`, `ops.msm.MSMConfig`) and hand them in,
so this module, below the ops, names none of them.
"""
from __future__ import annotations

import contextlib
import warnings
from dataclasses import fields as dc_fields, replace

from ..config import tuned_values, tuning_enabled, user
from . import costmodel
from .cache import default_cache

# the keys a tuning-cache entry may set through `tuned_scope`
SCOPED = ("strategy", "block", "num_warps", "num_stages", "lanes", "ifma")


def lookup(op: str, field: str, size: int, device, batch: int = 1) -> dict | None:
    """The tuned configuration (a dict of fields) for `op` on `field` at `size` elements on
    `device`, or None (no entry, tuning disabled, or an unreadable cache: never raises)."""
    if user("tuned") is False:
        return None
    try:
        c = default_cache()
        return None if c.path is None else c.lookup(op, field, size, device, batch=batch)
    except Exception as e:  # a broken cache must never break a computation
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
    with tuned_values({**add, "_target": target}):
        yield found


def resolve(cls, key: str, op: str, space, n: int, device, batch: int = 1):
    """(config, values) for `op` over `space` (a field or group) at n elements: an instance of
    `cls` from `zt.config(<key>=...)` (an instance replaces, a dict of fields is laid over),
    else the tuning cache, else the cost model (`costmodel.defaults`), else cls(). `values`:
    what the cache or model said, including keys that are not fields of `cls` (strategy,
    ifma: run the op inside `tuned_scope(..., values=values)`); {} when the user's instance
    was taken as it is."""
    o = user(key)
    if isinstance(o, cls):
        return o, {}
    names = {f.name for f in dc_fields(cls)}
    found = lookup(op, space.name, n, device, batch) or {}
    values = found or _cost(op, space, n, device, batch)
    cfg = cls(**{k: v for k, v in values.items() if k in names})
    if isinstance(o, dict):
        cfg = replace(cfg, **o)
    return cfg, values


def _cost(op, space, n, device, batch) -> dict:
    try:
        return costmodel.defaults(op, space, n, device, batch)
    except Exception:  # pragma: no cover - the model is advisory
        return {}


__all__ = ["lookup", "tuned_scope", "resolve", "tuning_enabled", "SCOPED"]
