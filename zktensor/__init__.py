"""zktensor: a Groth16 prover written as a tensor compiler.

    import zktensor as zt
    F = zt.field("bn254.fr")
    a, b = F.random(1024), F.random(1024)
    c = a * b - a.square()
"""
from .config import config
from .jit import jit
from .ops.elementwise import batch_inverse
from .tensor import FieldSpace, FieldTensor, cat, field, stack

__version__ = "0.1.0"

__all__ = ["field", "FieldSpace", "FieldTensor", "jit", "batch_inverse", "cat", "stack", "config"]
