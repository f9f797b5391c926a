"""Elementwise field operations on tensors, all through compiled programs.

The operations are the field programs of `kernels.field_programs`, launched over the
tensors' limbs; nothing here does arithmetic itself.
`batch_inverse` is Montgomery's trick: one field inversion and about 3
multiplications per element (`kernels.msm_inverse`).
"""
from __future__ import annotations

from ..kernels import msm_inverse
from ..kernels.field_programs import OPS, run_program
from ..tensor import FieldTensor, check_nonzero


def apply(name: str, *xs: FieldTensor, out: FieldTensor | None = None) -> FieldTensor:
    n, fn = OPS[name]
    F = xs[0].F
    for x in xs:
        if x.F != F:
            raise TypeError(f"cannot mix {F.name} and {x.F.name} tensors")
    (res,) = run_program(F, name, n, fn, [x.data for x in xs], out=[out.data] if out is not None else None)
    return out if out is not None else FieldTensor(F, res)


def power(x: FieldTensor, e: int) -> FieldTensor:
    """x^e elementwise (e < 0: of the inverse)."""
    return x ** e


def inverse(x: FieldTensor) -> FieldTensor:
    """1/x elementwise (Fermat: x^(p-2)); raises ZeroDivisionError on a zero."""
    return x.inverse()


def batch_inverse(x: FieldTensor) -> FieldTensor:
    """Inverses of every element with one field inversion (Montgomery's trick, blocked:
    `kernels.msm_inverse.batch_inverse`, the one batch inversion, which the MSM uses too)."""
    check_nonzero(x)
    F = x.F
    flat = x.data.reshape(F.limbs, -1).contiguous()
    return FieldTensor(F, msm_inverse.batch_inverse(F, flat)).reshape(tuple(x.shape))
