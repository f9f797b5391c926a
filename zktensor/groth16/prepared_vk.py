"""A verification key prepared once for many pairing checks (the prover verifies every proof).

Groth16's check is e(-A, B)·e(alpha_1, beta_2)·e(vk_x, gamma_2)·e(C, delta_2) = 1, and
three of its G2 points (beta_2, gamma_2, delta_2) belong to the key. So, once per key:

* e(alpha_1, beta_2) needs no Miller loop per proof: its Miller loop value is kept and
  multiplied in (the final exponentiation is multiplicative);
* gamma_2 and delta_2 are "prepared": the Miller loop's running point R (doublings and
  additions of Q, then pi(Q) and -pi^2(Q) for BN) does not depend on the G1 point, so the
  coefficients of each line are computed once. A line at P is then (c_y·yP, c_x·xP, c)
  with two Fq2 scalings instead of a doubling or addition step.

Per proof only (-A, B) runs a full step; the lines of all three pairs are multiplied
into one f sharing its squarings, in the order of ``algebra.pairing.multi_miller_loop``,
whose value this reproduces exactly (tests compare them and py_ecc's pairing).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from zktensor.algebra import pairing as ate

from .formats.json_io import VerificationKey


def _neg2(a):
    return (-a[0], -a[1])


def prepare_g2(curve: str, Q) -> tuple:
    """The line coefficients of Q's Miller loop, in loop order: ("d" | "a", (cy, cx, c)),
    "d" lines scaled at P by (2yP, -3xP), "a" lines by (yP, -xP) (as ``_double_step``
    and ``_add_step`` scale them)."""
    C = ate.pairing_curve(curve)
    T = C.tower
    negQ = (Q[0], _neg2(Q[1]))
    R = (Q[0], Q[1], (1, 0))
    steps = []
    for digit in C.loop:
        R, line = ate._double_step(T, C.b3, R, 1, 1)
        steps.append(("d", line))
        if digit:
            R, line = ate._add_step(T, R, Q if digit > 0 else negQ, 1, 1)
            steps.append(("a", line))
    if C.family == "bn":
        Q1 = ate._frobenius_twist(C, Q)
        Q2 = ate._frobenius_twist(C, Q1)
        R, line = ate._add_step(T, R, Q1, 1, 1)
        steps.append(("a", line))
        _, line = ate._add_step(T, R, (Q2[0], _neg2(Q2[1])), 1, 1)
        steps.append(("a", line))
    return tuple(steps)


def miller_loop(curve: str, pairs, prepared) -> tuple:
    """prod f_Q(P) over ``pairs`` ((P, Q): full steps) and ``prepared`` ((P, prepare_g2(Q)));
    a pair with the identity contributes 1."""
    C = ate.pairing_curve(curve)
    T = C.tower
    p = T.p
    mul_by_line = T.mul_by_line_d if C.twist == "D" else T.mul_by_line_m
    scale2 = T.scale2
    live = [(P, Q) for P, Q in pairs if P is not None and Q is not None]
    fixed = [((y % p, -x % p, 2 * y % p, -3 * x % p), steps) for (P, steps) in prepared
             if P is not None and steps for x, y in (P,)]
    f = T.one
    if not live and not fixed:
        return f
    Qs = [Q for _, Q in live]
    negQs = [(Q[0], _neg2(Q[1])) for Q in Qs]
    Ps = [(y % p, -x % p, 2 * y % p, -3 * x % p) for (x, y), _ in live]
    Rs = [(Q[0], Q[1], (1, 0)) for Q in Qs]
    k = 0                                   # the next prepared line

    def fixed_lines(f, k):
        for (yp, nxp, yp2, nxp3), steps in fixed:
            kind, (cy, cx, c) = steps[k]
            f = mul_by_line(f, scale2(cy, yp2), scale2(cx, nxp3), c) if kind == "d" else \
                mul_by_line(f, scale2(cy, yp), scale2(cx, nxp), c)
        return f

    first = True
    for digit in C.loop:
        if not first:
            f = T.sqr12(f)
        first = False
        for i, (yp, nxp, yp2, nxp3) in enumerate(Ps):
            Rs[i], line = ate._double_step(T, C.b3, Rs[i], yp2, nxp3)
            f = mul_by_line(f, *line)
        f = fixed_lines(f, k)
        k += 1
        if digit:
            addends = Qs if digit > 0 else negQs
            for i, (yp, nxp, _, _) in enumerate(Ps):
                Rs[i], line = ate._add_step(T, Rs[i], addends[i], yp, nxp)
                f = mul_by_line(f, *line)
            f = fixed_lines(f, k)
            k += 1
    if C.family == "bn":
        for i, (yp, nxp, _, _) in enumerate(Ps):
            Q1 = ate._frobenius_twist(C, Qs[i])
            Q2 = ate._frobenius_twist(C, Q1)
            R, line = ate._add_step(T, Rs[i], Q1, yp, nxp)
            f = mul_by_line(f, *line)
            _, line = ate._add_step(T, R, (Q2[0], _neg2(Q2[1])), yp, nxp)
            f = mul_by_line(f, *line)
        f = fixed_lines(f, k)
        f = fixed_lines(f, k + 1)
    if C.loop_negative:
        f = T.conj12(f)
    return f


@dataclass(frozen=True)
class PreparedVK:
    curve: str
    alphabeta_ml: tuple      # the Miller loop value of (alpha_1, beta_2)
    gamma_2: tuple           # prepare_g2(gamma_2), () for the identity
    delta_2: tuple


@functools.lru_cache(maxsize=16)
def prepare(vk: VerificationKey) -> PreparedVK:
    """The key's fixed part of every check (cached per key)."""
    c = vk.curve
    return PreparedVK(c, ate.multi_miller_loop(c, [(vk.alpha_1, vk.beta_2)]),
                      prepare_g2(c, vk.gamma_2) if vk.gamma_2 is not None else (),
                      prepare_g2(c, vk.delta_2) if vk.delta_2 is not None else ())


def groth16_check(vk: VerificationKey, neg_a, b, vk_x, c) -> bool:
    """e(-A, B)·e(alpha_1, beta_2)·e(vk_x, gamma_2)·e(C, delta_2) = 1."""
    prep = prepare(vk)
    T = ate.pairing_curve(vk.curve).tower
    f = miller_loop(vk.curve, [(neg_a, b)], [(vk_x, prep.gamma_2), (c, prep.delta_2)])
    f = T.mul12(f, prep.alphabeta_ml)
    return ate.final_exponentiation(vk.curve, f) == T.one


__all__ = ["prepare_g2", "miller_loop", "prepare", "groth16_check", "PreparedVK"]
