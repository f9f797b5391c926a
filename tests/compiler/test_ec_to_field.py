"""The `ec` dialect and the ec-to-field pass: IR that verifies, formulas at their cost, and
the lowered program compiled by the rest of the pipeline and run against the Python-int
oracle (tests/oracles/ec.py).

Most checks stop at the `field` program that the rest of the pipeline takes (and the
MLIR verifier on both sides); one compiles it for the CPU target and runs it.
"""
from __future__ import annotations

import random
from collections import Counter

import pytest

from compiler_support import run_program
from tests.ec.ec_support import oracle_points
from tests.oracles import ec as O
from tests.oracles import field as ff
from zktensor.algebra.curves import group as group_record
from zktensor.algebra.towers import tower
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


def _mul(g, a, b):
    """A product of coordinates (Fq ints, or Fq2 pairs) on Python ints."""
    return ff.mul(a, b, g.p) if g.degree == 1 else ff.fq2_mul(a, b, g.p, tower(g.tower).beta)


def _parts(g, a) -> list[int]:
    return [a] if g.degree == 1 else list(a)


@pytest.mark.parametrize("name", ["bn254.g1", "bn254.g2"])
def test_lowered_program_compiles_and_runs(name):
    """IR in, IR out, and the run: P + Q and (over G1) 2(P + Q), for P in XYZZ (scaled by a
    random z) and Q affine, lowered to the field dialect, compiled by the pipeline to the CPU
    target (one tensor per Fq component) and run on four pairs: each result, as XYZZ, is
    the oracle's point (X = x·ZZ, Y = y·ZZZ, ZZ^3 = ZZZ^2, ZZ != 0). G2 stops at the sum:
    its doubling would treble a compile that runs on every test run (no kernel cache)."""
    g = group_record(name)
    if g.degree == 1:
        prog = E.trace(lambda P, Q: (P + Q, (P + Q).double()), g, ("xyzz", "affine"))
    else:
        prog = E.trace(lambda P, Q: (P + Q,), g, ("xyzz", "affine"))
    pts = oracle_points(name, 8)
    rng = random.Random(name)
    cols = []                                   # per pair: P's XYZZ and Q's affine coordinates
    for P, Q in zip(pts[:4], pts[4:]):
        z = rng.randrange(1, g.p) if g.degree == 1 else (rng.randrange(g.p), rng.randrange(1, g.p))
        zz = _mul(g, z, z)
        zzz = _mul(g, zz, z)
        cols.append([_mul(g, P[0], zz), _mul(g, P[1], zzz), zz, zzz, Q[0], Q[1]])
    inputs = [[_parts(g, c[k])[i] for c in cols] for k in range(6) for i in range(g.degree)]
    outs = run_program(prog, inputs)
    K = 4 * g.degree                            # components of one XYZZ point
    assert len(outs) == K * len(prog.outputs)
    zero = 0 if g.degree == 1 else (0, 0)
    for j, (P, Q) in enumerate(zip(pts[:4], pts[4:])):
        S = O.add(g, P, Q)
        for n, want in enumerate((S, O.double(g, S))[:len(prog.outputs)]):
            comps = [o[j] for o in outs[n * K:(n + 1) * K]]
            X, Y, ZZ, ZZZ = (comps[k] if g.degree == 1 else tuple(comps[k:k + 2]) for k in range(0, K, g.degree))
            assert ZZ != zero
            assert X == _mul(g, want[0], ZZ) and Y == _mul(g, want[1], ZZZ)
            assert _mul(g, _mul(g, ZZ, ZZ), ZZ) == _mul(g, ZZZ, ZZZ)
