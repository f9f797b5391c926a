"""zktensor: a Groth16 prover written as a tensor compiler.

    import zktensor as zt
    F = zt.field("bn254.fr")
    a, b = F.random(1024), F.random(1024)
    c = a * b - a.square()

The names below load on first use (PEP 562 ``__getattr__``): importing zktensor does
not import PyTorch or numpy, so ``zktensor verify`` and the thin client of ``zktensor
prove`` (`zktensor.serve.client`) start without them; tests/serve checks the client's
import list.
"""
from .runtime.host_memory import keep_freed_memory_before_heavy_imports
keep_freed_memory_before_heavy_imports()    # first: threads made after numpy's or torch's import
                                            # share one malloc arena (see host_memory)

from .config import config  # noqa: E402
from .version import __version__  # noqa: E402
from . import groth16  # noqa: E402  (lazy itself: zt.groth16.Prover, zt.groth16.verify)

# name -> the module that defines it
_LAZY = {
    "jit": ".jit",
    "batch_inverse": ".ops.elementwise",
    "ntt": ".ops.ntt", "intt": ".ops.ntt", "NTTConfig": ".ops.ntt",
    "field": ".tensor", "FieldSpace": ".tensor", "FieldTensor": ".tensor", "cat": ".tensor",
    "stack": ".tensor",
    "group": ".points", "GroupSpace": ".points", "PointTensor": ".points",
    "msm": ".ops.msm", "msm_prepare": ".ops.msm", "msm_many": ".ops.msm", "msm_plan": ".ops.msm",
    "MSMPlan": ".ops.msm", "MSMConfig": ".ops.msm", "MSMBases": ".ops.msm",
}


__all__ = ["field", "FieldSpace", "FieldTensor", "jit", "batch_inverse", "cat", "stack", "config",
           "ntt", "intt", "NTTConfig",
           "group", "GroupSpace", "PointTensor", "msm", "msm_prepare", "msm_many", "msm_plan", "MSMPlan",
           "MSMConfig", "MSMBases"]


def __getattr__(name):
    import importlib            # here: importlib (and the warnings it imports) is start-up time
    if name == "zkml":          # the package, loaded on first use (zt.zkml.compile, ...)
        return importlib.import_module(".zkml", __name__)
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(mod, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
