"""Elliptic-curve groups as data, one record per group (gnark-crypto style).

Groups: ``bn254.g1``, ``bn254.g2``, ``bls12_381.g1``, ``bls12_381.g2``,
``mnt4753.g1``. Each is a subgroup of prime order r of a short Weierstrass
curve y^2 = x^3 + a·x + b over Fq (G1) or over Fq2 (G2, a sextic twist).

What is pasted, with its source: the G1 coefficients a and b, the generators,
the curve-family seed of BN254 and BLS12-381, and which kind of twist carries
G2. Everything else is computed here and checked when the record is built:

* the G2 coefficient b' from G1's b and the twist: b / xi for BN254's D-type
  twist, b · xi for BLS12-381's M-type twist (xi from ``towers``);
* the curve's order #E: from the family's trace of Frobenius (BN: t = 6x^2 + 1;
  BLS12: t = x + 1; both moduli are checked against the family polynomials in
  x), lifted to Fq2 and to the sextic twist for G2; for MNT4-753, whose G1 has
  prime order, as the only multiple of r inside the Hasse interval;
* the cofactor h = #E / r.

Checks at build time: the generator is on the curve, is not the identity and
r·G = O; r divides #E; #E lies in the Hasse interval; #E·P = O for a few points
P found by solving the curve equation at small x (so the order is the order of
the curve these coefficients define, and a wrong b' or twist would fail). The
two scalar-multiplication checks are left to the test suite for the records
built here from the pasted constants (``check_orders=False``; see the field).

Points are Python-int affine tuples: a G1 point is ``(x, y)``, a G2 point
``((x0, x1), (y0, y1))`` with coordinates c0 + c1·u, and ``None`` is the
identity (the point at infinity). The arithmetic here is slow reference code for
these checks and for ``in_subgroup``; tests of fast paths use ``tests/oracles``.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field as dc_field

from .fields import Field, field
from .towers import Fq2, fq_sqrt, tower

# -- pasted parameters, with sources --------------------------------------------

_FAMILIES = {
    # BN254 / alt_bn128 (EIP-196, EIP-197): y^2 = x^3 + 3, BN seed x = 0x44e992b44a6909f1.
    "bn254": dict(family="bn", seed=4965661367192848881, a=0, b=3, twist="D"),
    # BLS12-381 (IETF draft-irtf-cfrg-pairing-friendly-curves): y^2 = x^3 + 4,
    # seed x = -0xd201000000010000.
    "bls12_381": dict(family="bls12", seed=-0xD201000000010000, a=0, b=4, twist="M"),
    # MNT4-753 (Coda/Mina; arkworks ark-mnt4-753 g1.rs): a = 2, b as below.
    "mnt4753": dict(family="mnt4", seed=None, a=2,
                    b=0x01373684A8C9DCAE7A016AC5D7748D3313CD8E39051C596560835DF0C9E50A5B59B882A92C78DC537E51A16703EC9855C77FC3D8BB21C8D68BB8CFB9DB4B8C8FBA773111C36C8B1B4E8F1ECE940EF9EAAD265458E06372009C9A0491678EF4,
                    twist=None),
}

_GENERATORS = {
    # EIP-196: (1, 2).
    "bn254.g1": (1, 2),
    # EIP-197: x = x0 + x1·i, y = y0 + y1·i.
    "bn254.g2": (
        (10857046999023057135944570762232829481370756359578518086990519993285655852781,
         11559732032986387107991004021392285783925812861821192530917403151452391805634),
        (8495653923123431417604973247489272438418190587263600148770280649306958101930,
         4082367875863433681332203403145435568316851327593401208105741076214120093531),
    ),
    # IETF draft-irtf-cfrg-pairing-friendly-curves, BLS12_381 G1 base point.
    "bls12_381.g1": (
        0x17F1D3A73197D7942695638C4FA9AC0FC3688C4F9774B905A14E3A3F171BAC586C55E83FF97A1AEFFB3AF00ADB22C6BB,
        0x08B3F481E3AAA0F1A09E30ED741D8AE4FCF5E095D5D00AF600DB18CB2C04B3EDD03CC744A2888AE40CAA232946C5E7E1,
    ),
    # IETF draft, BLS12_381 G2 base point.
    "bls12_381.g2": (
        (0x024AA2B2F08F0A91260805272DC51051C6E47AD4FA403B02B4510B647AE3D1770BAC0326A805BBEFD48056C8C121BDB8,
         0x13E02B6052719F607DACD3A088274F65596BD0D09920B61AB5DA61BBDC7F5049334CF11213945D57E5AC7D055D042B7E),
        (0x0CE5D527727D6E118CC9CDC6DA2E351AADFD9BAA8CBDD3A76D429A695160D12C923AC9CC3BACA289E193548608B82801,
         0x0606C4A02EA734CC32ACD2B02BC28B99CB3E287E85A763AF267492AB572E99AB3F370D275CEC1DA1AAA9075FF05F79BE),
    ),
    # arkworks ark-mnt4-753 g1.rs G1_GENERATOR_X / _Y (the Coda/Mina parameters).
    "mnt4753.g1": (
        7790163481385331313124631546957228376128961350185262705123068027727518350362064426002432450801002268747950550964579198552865939244360469674540925037890082678099826733417900510086646711680891516503232107232083181010099241949569,
        6913648190367314284606685101150155872986263667483624713540251048208073654617802840433842931301128643140890502238233930290161632176167186761333725658542781350626799660920481723757654531036893265359076440986158843531053720994648,
    ),
}

# -- field adapters: Fq and Fq2 behind one small interface ----------------------


class _Fq:
    """Fq with the interface of ``towers.Fq2`` (elements are ints)."""

    def __init__(self, p: int):
        self.p = p
        self.zero, self.one = 0, 1

    def elem(self, c: int) -> int:
        return c % self.p

    def add(self, a, b):
        return (a + b) % self.p

    def sub(self, a, b):
        return (a - b) % self.p

    def neg(self, a):
        return -a % self.p

    def mul(self, a, b):
        return a * b % self.p

    def scale(self, a, k):
        return a * k % self.p

    def inv(self, a):
        return pow(a, -1, self.p)

    def sqrt(self, a):
        return fq_sqrt(a, self.p)


def _small(F, i: int):
    """The i-th small element of F, used as trial x-coordinates."""
    return i % F.p if isinstance(F, _Fq) else F.elem(i, 1)


# -- implementation choices of the Triton kernels, per group ------------------------------
#
# A kernel must fit sm_90a's 255 registers per thread without spilling (register and spill
# counts from ahead-of-time compilation, tests/kernels/test_msm_triton.py). What a group needs:
#   split_add   its complete point addition as two kernels (`kernels.msm_triton.add_split`),
#               cut where add-2008-s has the fewest live values, after the products of the
#               inputs; the parts compute the same field values and outputs are canonical;
#   split_lane  the suffix-sum step of the bucket reduction as three kernels
#               (`kernels.msm_reduce.lane_step`), the same way;
#   cuts        every point program compiled as a chain of small elementwise kernels:
#               fuse-elementwise's cuts (max_products: base-field products a kernel;
#               max_inputs: values a kernel reads), the values between them through memory.
#   device_maxnreg  the register cap (ptxas's .maxnreg) of the device MSM's kernels when
#               MSMConfig.max_registers leaves it open (`ops.msm.device.register_cap`).
# BN254 G2: the fused addition spills (35 STL), the parts do not. BLS12-381 G2 (12-word Fq):
# both addition parts still spill, and so does every cut with one Fq2 product (three Fq
# products) a kernel; with two Fq products none does. MNT4-753 G1 (24-word Fq): two products
# a kernel spill; with one, all fit once a kernel reads at most 4 values.
# BLS12-381 G2's device-MSM chain kernel (fp64, sm_90a): left to itself ptxas gave it 32
# registers and a 17.7 KB stack, 86,215 of its 143,232 instructions spill code; told 255, it
# uses them and spills 12,167 of 78,432 (bench/results/sass_device_msm_maxnreg.json, with
# the compile times). MNT4-753 G1's chain the same: 32 registers
# and 110,109 spill instructions of 172,648 left alone, 22,728 of 90,968 with 255. BN254's
# kernels change by a few percent either way with the same cap, so it is these groups'
# choice, not everyone's.
_TRITON = {
    "bn254.g2": dict(split_add=True, split_lane=True),
    "bls12_381.g2": dict(cuts={"max_products": 2}, device_maxnreg=255),
    "mnt4753.g1": dict(cuts={"max_products": 1, "max_inputs": 4}, device_maxnreg=255),
}


# -- the group record -------------------------------------------------------------


@dataclass(frozen=True)
class Group:
    """A prime-order subgroup of a short Weierstrass curve y^2 = x^3 + a x + b."""

    name: str                  # "bn254.g1"
    curve: str                 # "bn254"
    base_field: str            # field of the coordinates' components, "bn254.fq"
    degree: int                # 1: coordinates in Fq; 2: in Fq2 = tower
    scalar_field: str          # "bn254.fr"
    a: object                  # int (degree 1) or (c0, c1) (degree 2)
    b: object
    generator: tuple
    order: int                 # #E over F_{q^degree}
    tower: str | None = None   # "bn254.fq2" for G2
    twist: str | None = None   # "D" or "M" for G2
    triton_split_add: bool = False      # implementation choices of the Triton kernels (_TRITON)
    triton_split_lane: bool = False
    triton_cuts: dict | None = None
    triton_device_maxnreg: int | None = None
    r: int = dc_field(init=False)
    cofactor: int = dc_field(init=False)
    trace: int = dc_field(init=False)  # q^degree + 1 - order
    # False: skip the scalar multiplications of the checks (r·G = O, #E·P = O), the dear
    # part of building a record in every process. `_build` passes False for the pasted
    # records: their constants cannot change at run time, and tests/algebra/test_curves.py
    # builds every one of them again with the full checks.
    check_orders: bool = dc_field(default=True, repr=False, compare=False)

    def __post_init__(self):
        r = self.fr.p
        q_k = self.fq.p ** self.degree
        set_ = functools.partial(object.__setattr__, self)
        set_("r", r)
        set_("trace", q_k + 1 - self.order)
        if self.order % r:
            raise ValueError(f"{self.name}: r does not divide the curve order")
        set_("cofactor", self.order // r)
        if self.trace * self.trace > 4 * q_k:
            raise ValueError(f"{self.name}: curve order outside the Hasse interval")
        F = self.F
        a, b = self.a, self.b
        if F.add(F.scale(F.mul(F.mul(a, a), a), 4), F.scale(F.mul(b, b), 27)) == F.zero:
            raise ValueError(f"{self.name}: singular curve (4a^3 + 27b^2 = 0)")
        G = self.generator
        if G is None or not is_on_curve(self, G):
            raise ValueError(f"{self.name}: generator is not on the curve")
        if not self.check_orders:
            return
        # (Jacobian `lincomb`, one inversion a product: the affine `_mul` inverted at every
        # step, and these checks ran in every process that built a group)
        if lincomb(self, None, [(r, G)]) is not None:
            raise ValueError(f"{self.name}: generator does not have order r")
        for P in _trial_points(self, 2):
            if lincomb(self, None, [(self.order, P)]) is not None:
                raise ValueError(f"{self.name}: #E·P != O for P = {P}: wrong order or coefficients")

    @property
    def fq(self) -> Field:
        return field(self.base_field)

    @property
    def fr(self) -> Field:
        return field(self.scalar_field)

    @property
    def p(self) -> int:
        return self.fq.p

    @functools.cached_property
    def F(self):
        """The coordinate field's arithmetic: ``towers.Fq2`` or an Fq adapter with the same methods."""
        return tower(self.tower) if self.degree == 2 else _Fq(self.fq.p)

    def __repr__(self) -> str:
        return f"Group({self.name}, {self.curve} over {self.tower or self.base_field}, r: {self.r.bit_length()} bits, h = {self.cofactor})"


# -- points ---------------------------------------------------------------------


def _check_shape(G: Group, P) -> None:
    if G.degree == 1:
        ok = isinstance(P, tuple) and len(P) == 2 and all(isinstance(c, int) for c in P)
    else:
        ok = (isinstance(P, tuple) and len(P) == 2 and all(
            isinstance(c, tuple) and len(c) == 2 and all(isinstance(d, int) for d in c) for c in P))
    if not ok:
        form = "(x, y) of ints" if G.degree == 1 else "((x0, x1), (y0, y1)) of ints"
        raise TypeError(f"{G.name}: a point is None (identity) or {form}; got {P!r}")


def _canonical(G: Group, P) -> bool:
    p = G.p
    coords = P if G.degree == 1 else (*P[0], *P[1])
    return all(0 <= c < p for c in coords)


def is_on_curve(G: Group, P) -> bool:
    """True when P is the identity (None) or an affine point with coordinates in
    [0, q) satisfying y^2 = x^3 + a x + b. Raises TypeError for a malformed point."""
    if P is None:
        return True
    _check_shape(G, P)
    if not _canonical(G, P):
        return False
    F = G.F
    x, y = P
    rhs = F.add(F.add(F.mul(F.mul(x, x), x), F.mul(G.a, x)), G.b)
    return F.mul(y, y) == rhs


def in_subgroup(G: Group, P) -> bool:
    """True when P is on the curve and r·P is the identity."""
    return is_on_curve(G, P) and lincomb(G, None, [(G.r, P)]) is None


def _add(G: Group, P, Q):
    """Affine P + Q (reference formulas, all special cases)."""
    if P is None:
        return Q
    if Q is None:
        return P
    F = G.F
    (x1, y1), (x2, y2) = P, Q
    if x1 == x2:
        if F.add(y1, y2) == F.zero:
            return None
        lam = F.mul(F.add(F.scale(F.mul(x1, x1), 3), G.a), F.inv(F.scale(y1, 2)))
    else:
        lam = F.mul(F.sub(y2, y1), F.inv(F.sub(x2, x1)))
    x3 = F.sub(F.sub(F.mul(lam, lam), x1), x2)
    return (x3, F.sub(F.mul(lam, F.sub(x1, x3)), y1))


def _mul(G: Group, P, k: int):
    """k·P by double-and-add, k >= 0."""
    result = None
    for bit in bin(k)[2:]:
        result = _add(G, result, result)
        if bit == "1":
            result = _add(G, result, P)
    return result


def lincomb(G: Group, base, terms):
    """base + sum s·P over (s, P) in terms (affine points as Python ints in and out, None
    the identity; s >= 0): the doublings are shared by all terms (Straus) and the additions
    are mixed, in Jacobian coordinates (x = X/Z^2, y = Y/Z^3), so there is one inversion
    in all, where the affine reference `_mul` inverts at every step. The verifier's vk_x
    and the MSM's final combination of its windows on the CPU."""
    F = G.F
    terms = [(s, P) for s, P in terms if s and P is not None]
    acc = None
    for bit in reversed(range(max((s.bit_length() for s, _ in terms), default=0))):
        acc = _jac_double(G, acc)
        for s, P in terms:
            if s >> bit & 1:
                acc = _jac_add_affine(G, acc, P)
    acc = _jac_add_affine(G, acc, base)
    if acc is None:
        return None
    X, Y, Z = acc
    zi = F.inv(Z)
    zi2 = F.mul(zi, zi)
    return (F.mul(X, zi2), F.mul(Y, F.mul(zi2, zi)))


def doublings(G: Group, P, n: int) -> list:
    """[P, 2P, 4P, ..., 2^(n-1)·P] as affine points (None: the identity): a fixed base's
    ladder, whose sums with signs ±1 are its multiples (`groth16.blinding`; made once a key)."""
    out = [P] if n > 0 else []
    while len(out) < n:
        out.append(_add(G, out[-1], out[-1]))
    return out


def _jac_double(G: Group, A):
    if A is None:
        return None
    F = G.F
    X, Y, Z = A
    if Y == F.zero:
        return None
    YY = F.mul(Y, Y)
    S = F.scale(F.mul(X, YY), 4)
    M = F.scale(F.mul(X, X), 3)
    if G.a != F.zero:
        ZZ = F.mul(Z, Z)
        M = F.add(M, F.mul(G.a, F.mul(ZZ, ZZ)))
    X3 = F.sub(F.mul(M, M), F.scale(S, 2))
    return (X3, F.sub(F.mul(M, F.sub(S, X3)), F.scale(F.mul(YY, YY), 8)), F.scale(F.mul(Y, Z), 2))


def _jac_add_affine(G: Group, A, P):
    if P is None:
        return A
    if A is None:
        return (P[0], P[1], G.F.one)
    F = G.F
    X, Y, Z = A
    ZZ = F.mul(Z, Z)
    H = F.sub(F.mul(P[0], ZZ), X)                 # x_P·Z^2 - X
    R = F.sub(F.mul(P[1], F.mul(ZZ, Z)), Y)       # y_P·Z^3 - Y
    if H == F.zero:
        return _jac_double(G, A) if R == F.zero else None
    HH = F.mul(H, H)
    HHH = F.mul(H, HH)
    V = F.mul(X, HH)
    X3 = F.sub(F.sub(F.mul(R, R), HHH), F.scale(V, 2))
    return (X3, F.sub(F.mul(R, F.sub(V, X3)), F.mul(Y, HHH)), F.mul(Z, H))


def _trial_points(G: Group, count: int):
    """The first ``count`` points of the curve with x = 1, 2, ... (x = i + u over Fq2)."""
    F = G.F
    i = 0
    while count:
        i += 1
        x = _small(F, i)
        y = F.sqrt(F.add(F.add(F.mul(F.mul(x, x), x), F.mul(G.a, x)), G.b))
        if y is not None and y != F.zero:
            count -= 1
            yield (x, y)


# -- orders from the trace of Frobenius --------------------------------------------


def family(curve: str) -> tuple[str, int | None]:
    """(family, seed) of a curve as its record states them: ("bn", x), ("bls12", x), or
    ("mnt4", None); the seed is checked against q and r when the curve's groups are built."""
    spec = _FAMILIES[curve]
    return spec["family"], spec["seed"]


# The families' polynomials in the seed x: q(x), r(x) and the trace of Frobenius t(x), as
# integer coefficients (lowest degree first) over a common denominator, BN (Barreto and
# Naehrig 2005) and BLS12 (Barreto, Lynn and Scott 2002: q(x) = (x - 1)^2 r(x) / 3 + x).
FAMILY_POLYNOMIALS = {
    "bn": {"q": ((1, 6, 24, 36, 36), 1), "r": ((1, 6, 18, 36, 36), 1), "t": ((1, 0, 6), 1)},
    "bls12": {"q": ((1, 1, 0, 2, 0, -2, 1), 3), "r": ((1, 0, -1, 0, 1), 1), "t": ((1, 1), 1)},
}


def _family_value(family_name: str, which: str, x: int) -> int:
    coeffs, den = FAMILY_POLYNOMIALS[family_name][which]
    num = sum(c * x**k for k, c in enumerate(coeffs))
    if num % den:
        raise ValueError(f"{family_name}: {which}(x) is not an integer at x = {x}")
    return num // den


def _family_trace(curve: str) -> int:
    """The trace of Frobenius over Fq of the family curve, after checking q and r against the
    seed (the one check of the seed: every user of it builds the curve's groups first)."""
    spec = _FAMILIES[curve]
    x = spec["seed"]
    q, r = field(curve + ".fq").p, field(curve + ".fr").p
    if spec["family"] not in FAMILY_POLYNOMIALS:
        raise ValueError(f"{curve}: no family trace")
    if (_family_value(spec["family"], "q", x), _family_value(spec["family"], "r", x)) != (q, r):
        raise ValueError(f"{curve}: moduli do not match the family polynomials at the seed")
    return _family_value(spec["family"], "t", x)


def _prime_order(q: int, r: int) -> int:
    """#E for a curve over Fq known to have a point of prime order r > 4·sqrt(q):
    the only multiple of r in the Hasse interval [q + 1 - 2 sqrt q, q + 1 + 2 sqrt q]."""
    lo, hi = q + 1 - 2 * math.isqrt(q) - 2, q + 1 + 2 * math.isqrt(q) + 2
    multiples = [m for m in range(-(-lo // r) * r, hi + 1, r)]
    if len(multiples) != 1:
        raise ValueError("r is too small to pin the curve order down by the Hasse bound")
    return multiples[0]


def _sextic_twist_order(q: int, r: int, t: int) -> int:
    """#E'(Fq2) of the sextic twist of E/Fq (trace t, j = 0) whose order r divides.

    Over Fq2 the trace is t2 = t^2 - 2q; with t2^2 - 4q^2 = -3 f^2 the twists of
    E/Fq2 have traces ±t2 and (±t2 ± 3f)/2; E itself (trace t2) is excluded."""
    t2 = t * t - 2 * q
    f2, rem = divmod(4 * q * q - t2 * t2, 3)
    f = math.isqrt(f2)
    if rem or f * f != f2:
        raise ValueError("4q^2 - t2^2 is not 3 times a square: not a j = 0 curve trace")
    traces = {-t2, (t2 + 3 * f) // 2, (t2 - 3 * f) // 2, (-t2 + 3 * f) // 2, (-t2 - 3 * f) // 2}
    orders = [q * q + 1 - tr for tr in traces if (q * q + 1 - tr) % r == 0]
    if len(orders) != 1:
        raise ValueError(f"expected exactly one sextic twist of order divisible by r, found {len(orders)}")
    return orders[0]


@functools.lru_cache(maxsize=None)
def _build(key: str) -> Group:
    curve, grp = key.split(".")
    spec = _FAMILIES[curve]
    q, r = field(curve + ".fq").p, field(curve + ".fr").p
    common = dict(name=key, curve=curve, base_field=curve + ".fq", scalar_field=curve + ".fr",
                  generator=_GENERATORS[key],
                  **{f"triton_{k}": v for k, v in _TRITON.get(key, {}).items()})
    if grp == "g1":
        order = _prime_order(q, r) if spec["seed"] is None else q + 1 - _family_trace(curve)
        return Group(degree=1, a=spec["a"] % q, b=spec["b"] % q, order=order, check_orders=False, **common)
    # G2 on the sextic twist y^2 = x^3 + b' over Fq2 (a = 0 for both pairing curves here).
    F2: Fq2 = tower(curve + ".fq2")
    b = F2.elem(spec["b"])
    b2 = {"D": F2.div(b, F2.xi), "M": F2.mul(b, F2.xi)}[spec["twist"]]
    order = _sextic_twist_order(q, r, _family_trace(curve))
    return Group(degree=2, a=F2.elem(spec["a"]), b=b2, order=order, tower=F2.name,
                 twist=spec["twist"], check_orders=False, **common)


GROUP_NAMES = tuple(sorted(_GENERATORS))


def group(name: str) -> Group:
    """The group record named like ``"bn254.g1"``, ``"bls12_381.g2"``, ``"mnt4753.g1"``
    (built and checked on first use, then cached)."""
    key = name.lower().replace("-", "_").replace("bls12381", "bls12_381").replace("bn128", "bn254")
    if key not in _GENERATORS:
        raise ValueError(f"unknown group {name!r}; known: {', '.join(GROUP_NAMES)}")
    return _build(key)
