"""Our MLIR dialects, declared with IRDL and loaded through the Python bindings.

`field`: values of a prime field, named by a string parameter
(`!field.elem<"bn254.fr">`), with elementwise arithmetic. Integer attributes
(constants, exponents) are decimal strings so that 753-bit values fit.

The bindings are imported here and only here (plus in the passes), so that a
warm kernel cache never loads them.
"""
from __future__ import annotations

import functools

FIELD_IRDL = r"""
irdl.dialect @field {
  irdl.type @elem {
    %name = irdl.base "#builtin.string"
    irdl.parameters(name: %name)
  }
  irdl.operation @constant {
    %t = irdl.base @field::@elem
    %s = irdl.base "#builtin.string"
    irdl.attributes {"value" = %s}
    irdl.results(res: %t)
  }
  irdl.operation @add {
    %t = irdl.base @field::@elem
    irdl.operands(lhs: %t, rhs: %t)
    irdl.results(res: %t)
  }
  irdl.operation @sub {
    %t = irdl.base @field::@elem
    irdl.operands(lhs: %t, rhs: %t)
    irdl.results(res: %t)
  }
  irdl.operation @mul {
    %t = irdl.base @field::@elem
    irdl.operands(lhs: %t, rhs: %t)
    irdl.results(res: %t)
  }
  irdl.operation @neg {
    %t = irdl.base @field::@elem
    irdl.operands(x: %t)
    irdl.results(res: %t)
  }
  irdl.operation @square {
    %t = irdl.base @field::@elem
    irdl.operands(x: %t)
    irdl.results(res: %t)
  }
  irdl.operation @pow {
    %t = irdl.base @field::@elem
    %s = irdl.base "#builtin.string"
    irdl.attributes {"exponent" = %s}
    irdl.operands(x: %t)
    irdl.results(res: %t)
  }
  irdl.operation @to_mont {
    %t = irdl.base @field::@elem
    irdl.operands(x: %t)
    irdl.results(res: %t)
  }
  irdl.operation @from_mont {
    %t = irdl.base @field::@elem
    irdl.operands(x: %t)
    irdl.results(res: %t)
  }
}
"""


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
    ir, _, _, irdl = mlir()
    ctx = ir.Context()
    with ctx:
        irdl.load_dialects(ir.Module.parse(FIELD_IRDL))
        from .ec import EC_IRDL  # the `ec` dialect (points over this field), see ir/ec.py
        irdl.load_dialects(ir.Module.parse(EC_IRDL))
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
