"""zktensor: a Groth16 prover written as a tensor compiler.

    import zktensor as zt
    F = zt.field("bn254.fr")
    a, b = F.random(1024), F.random(1024)
    c = a * b - a.square()
"""
from .config import config
from .jit import jit
from .ops.elementwise import batch_inverse
from .ops.ntt import NTTConfig, intt, ntt
from .tensor import FieldSpace, FieldTensor, cat, field, stack
from . import groth16  # noqa: E402  (lazy: zt.groth16.Prover, zt.groth16.verify)
from .points import GroupSpace, PointTensor, group
from .ops.msm import MSMBases, MSMConfig, msm, msm_prepare

__version__ = "0.1.0"

__all__ = ["field", "FieldSpace", "FieldTensor", "jit", "batch_inverse", "cat", "stack", "config",
           "ntt", "intt", "NTTConfig",
           "group", "GroupSpace", "PointTensor", "msm", "msm_prepare", "MSMConfig", "MSMBases"]
