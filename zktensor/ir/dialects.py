"""Our MLIR dialects, declared with IRDL and loaded through the Python bindings.

`field`: values of a prime field, named by a string parameter
(`!field.elem<"bn254.fr">`), with elementwise arithmetic. Integer attributes
(constants, exponents) are decimal strings so that 753-bit values fit. The IRDL
text of both dialects is generated from their op tables (`irdl`).

The bindings are imported here and only here (plus in the passes), so that a
warm kernel cache never loads them.
"""
from __future__ import annotations

import functools

from . import irdl
from .ec import EC_IRDL
from .program import FIELD_BASES, FIELD_SIGNATURES, FIELD_TYPES

FIELD_IRDL = irdl.dialect("field", FIELD_TYPES, FIELD_SIGNATURES, FIELD_BASES)


@functools.lru_cache(maxsize=1)
def mlir():
    """The MLIR Python modules (imported on first use: a cache miss)."""
    try:
        from torch_mlir import execution_engine, ir, passmanager
        from torch_mlir.dialects import irdl
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError(
            "compiling a new kernel needs the MLIR Python bindings (pip install torch-mlir); "
            "a machine with a warm kernel cache runs without them") from e
    return ir, passmanager, execution_engine, irdl


def context():
    """A fresh MLIR context with the `field` and `ec` dialects loaded and verified."""
    ir, _, _, irdl_bindings = mlir()
    ctx = ir.Context()
    with ctx:
        irdl_bindings.load_dialects(ir.Module.parse(FIELD_IRDL))
        irdl_bindings.load_dialects(ir.Module.parse(EC_IRDL))      # points over the field, see ir/ec.py
    return ctx


def parse(text: str, ctx):
    """Parse and verify a module in `ctx`; errors name the offending IR."""
    ir = mlir()[0]
    with ctx:
        try:
            module = ir.Module.parse(text)
        except Exception as e:
            raise ValueError(f"invalid IR:\n{text}\n{e}") from None
        if not module.operation.verify():
            raise ValueError(f"IR failed to verify:\n{text}")
    return module
