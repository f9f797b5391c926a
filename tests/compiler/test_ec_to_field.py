"""The `ec` dialect and the ec-to-field pass: IR that verifies, formulas at their cost.

No kernel is compiled here: the checks stop at the `field` program that the
rest of the pipeline takes (and the MLIR verifier on both sides).
"""
from __future__ import annotations

from collections import Counter

import pytest

from zktensor.algebra.curves import group as group_record
from zktensor.ir import dialects
from zktensor.ir import ec as E
from zktensor.passes import canonicalize, field_io, lower_ec


def _field_ops(prog):
    f = canonicalize.run_func(field_io.FieldFunc.from_program(lower_ec(prog)))
    return Counter(n.op for n in f.nodes)


def _products(c):
    return c["mul"] + c["square"]


@pytest.mark.parametrize("name", ["bn254.g1", "bls12_381.g2", "mnt4753.g1"])
def test_trace_prints_and_verifies(name):
    G = group_record(name)
    prog = E.trace(lambda P, Q, m: (E.select(m, P + Q, P).double(),) + P.cross(Q), G,
                   ("xyzz", "affine", "fq"))
    text = prog.text()
    assert text.startswith(f"ec_program({name} [")
    assert "ec.add %0, %1" in text and "ec.select" in text and "ec.cross" in text
    module = dialects.parse(prog.to_mlir(), dialects.context())
    assert "ec.double" in str(module)
    assert prog.key() == E.trace(lambda P, Q, m: (E.select(m, P + Q, P).double(),) + P.cross(Q), G,
                                 ("xyzz", "affine", "fq")).key()


def test_irdl_rejects_wrong_types():
    G = group_record("bn254.g1")
    prog = E.trace(lambda P, Q, m: E.select(m, P, Q), G, ("xyzz", "xyzz", "fq"))
    bad = prog.to_mlir().replace('"ec.select"(%a2', '"ec.select"(%a0', 1).replace(
        '(!field.elem<"bn254.fq">, !ec.point', '(!ec.point<"bn254.g1", "xyzz">, !ec.point', 1)
    with pytest.raises(ValueError, match="invalid IR|failed to verify"):
        dialects.parse(bad, dialects.context())


def test_tracer_type_errors():
    G = group_record("bn254.g1")
    with pytest.raises(TypeError, match="no addition formula"):
        E.trace(lambda P, Q: P + Q, G, ("jacobian", "xyzz"))
    with pytest.raises(TypeError, match="no conversion"):
        E.trace(lambda P: P.to("affine"), G, ("xyzz",))
    with pytest.raises(ValueError, match="unknown input kind"):
        E.trace(lambda P: P, G, ("projective",))


@pytest.mark.parametrize("kinds,fn,cost", [
    (("xyzz", "xyzz"), lambda P, Q: P + Q, 14),          # add-2008-s: 12M + 2S
    (("xyzz", "affine"), lambda P, Q: P + Q, 10),        # madd-2008-s: 8M + 2S
    (("xyzz",), lambda P: P.double(), 9),                # dbl-2008-s-1 (a = 0): 6M + 3S
    (("affine",), lambda P: P.double(), 7),              # mdbl-2008-s-1 (a = 0)
    (("jacobian", "jacobian"), lambda P, Q: P + Q, 16),  # add-2007-bl: 11M + 5S
    (("jacobian", "affine"), lambda P, Q: P + Q, 12),    # madd-2007-bl: 7M + 4S
    (("jacobian",), lambda P: P.double(), 7),            # dbl-2009-l: 2M + 5S
    (("xyzz", "xyzz"), lambda P, Q: (P + Q,) + P.cross(Q), 14),   # cross shares the add's products
])
def test_formula_costs_g1(kinds, fn, cost):
    assert _products(_field_ops(E.trace(fn, group_record("bn254.g1"), kinds))) == cost


def test_fq2_costs():
    """Over Fq2 (beta = -1) a product is 3 Fq products (Karatsuba), a square 2."""
    G2 = group_record("bn254.g2")
    assert _products(_field_ops(E.trace(lambda a, b: a * b, G2, ("coord", "coord")))) == 3
    assert _products(_field_ops(E.trace(lambda a: a.square(), G2, ("coord",)))) == 2
    assert _products(_field_ops(E.trace(lambda P, Q: P + Q, G2, ("xyzz", "xyzz")))) == 12 * 3 + 2 * 2


def test_curve_coefficient_a():
    """MNT4-753 has a = 2: doubling gains the a·ZZ^2 term, as additions (no constant product)."""
    G = group_record("mnt4753.g1")
    c = _field_ops(E.trace(lambda P: P.double(), G, ("xyzz",)))
    assert _products(c) == 10 and "constant" not in c


def test_select_and_parts_lowering():
    G2 = group_record("bls12_381.g2")
    prog = E.trace(lambda m, P, Q: E.select(m, P, Q), G2, ("fq", "xyzz", "xyzz"))
    fp = lower_ec(prog)
    assert fp.n_inputs == 1 + 8 + 8 and len(fp.outputs) == 8
    assert _products(_field_ops(prog)) == 8                 # one product per Fq component
    prog = E.trace(lambda a: E.join(*reversed(a.parts())), G2, ("coord",))
    f = canonicalize.run_func(field_io.FieldFunc.from_program(lower_ec(prog)))
    assert f.outputs == (1, 0) and not f.nodes
