"""A proof's blinding on the host: r, s and the terms they scale, as snarkjs applies them.

    pi_a = alpha_1 + A + r·delta_1
    pi_b = beta_2 + B2 + s·delta_2
    pi_c = C + H + s·pi_a + r·b1 − r·s·delta_1,   b1 = beta_1 + B1 + s·delta_1
         = C + H + (s·A + r·B1) + (s·alpha_1 + r·beta_1 + r·s·delta_1)

(A, B1, B2, C, H: the witness and quotient MSMs.) Each scaled term is an MSM of one to
three points with full-width scalars. They run in the CPU lanes kernel (`msm_small_cpu`)
beside the proof's own MSMs, over small tables of the key's points (`affine_table`):
double-and-add on Python ints spent hundreds of group operations a term in the
interpreter, G2's most of all, and the tensor fixed-base tables a hundred small launches.

    bl = Blinding.of_key(zkey, G1, G2)           # the key's alpha_1, beta_1, delta_1, beta_2, delta_2
    r, s = draw(bl.G1.r)                         # the scalar field's order
    fixed = msm_many(bl.fixed_jobs(r, s), threads=1)      # r·delta_1, pi_c's constant part, s·delta_2
    ab = msm_many([bl.ab_job(A, B1, r, s)], threads=1)[0]  # s·A + r·B1, once A and B1 are known
    pi_a, pi_b, pi_c = bl.assemble(A, B2, C, [H], ab, *fixed)

A prover that keeps the key for many proofs makes the fixed points' ladders once
(`with_ladders`: 2^i·P for every bit i, ~255 points a base), after which `fixed_terms`
sums the ladder points of the scalars' set bits, eight a trip (`msm_small_cpu.unit_sum`):
a call each, where the windows loop made a call per eight windows, their digits, and
its lanes' doublings on Python ints.

Host code without torch, shared by `numpy_prover` and the tensor prover on the CPU.
"""
from __future__ import annotations

import secrets

import numpy as np

from ..algebra.curves import doublings, lincomb
from ..kernels import msm_small_cpu
from ..kernels.host_words import affine_table, words


def draw(order: int) -> tuple[int, int]:
    """r, s uniform in [1, order) from the operating system's CSPRNG (snarkjs draws them in
    [0, order); zero would leave the proof unblinded)."""
    return secrets.randbelow(order - 1) + 1, secrets.randbelow(order - 1) + 1


class Blinding:
    """The key's blinding points as lanes-kernel tables: G1 (alpha_1, beta_1, delta_1), G2
    (delta_2). Jobs are `msm_small_cpu.msm_many`'s (G, table, neg_off, cols, scalar words)."""

    def __init__(self, G1, G2, alpha_1, beta_1, delta_1, beta_2, delta_2):
        self.G1, self.G2 = G1, G2
        self.alpha_1, self.beta_2 = alpha_1, beta_2
        self.fixed_1, self.fixed_2 = [alpha_1, beta_1, delta_1], [delta_2]
        self.t1 = affine_table(G1, self.fixed_1)
        self.t2 = affine_table(G2, self.fixed_2)
        self.ladders = None         # `with_ladders`

    @classmethod
    def of_key(cls, zkey, G1, G2) -> "Blinding":
        """From a `formats.ZKey`'s points (affine Python ints); G1, G2: its groups' records."""
        return cls(G1, G2, zkey.alpha_1, zkey.beta_1, zkey.delta_1, zkey.beta_2, zkey.delta_2)

    def _job(self, G, table, cols, scalars):
        T, neg_off = table
        n = -(-G.r.bit_length() // 32)
        return (G, T, neg_off, np.asarray(cols, dtype=np.int64), words([k % G.r for k in scalars], n))

    def fixed_jobs(self, r: int, s: int) -> list:
        """The terms without an MSM result: r·delta_1, s·alpha_1 + r·beta_1 + r·s·delta_1 (G1)
        and s·delta_2 (G2), in that order."""
        return [self._job(self.G1, self.t1, [2], [r]),
                self._job(self.G1, self.t1, [0, 1, 2], [s, r, r * s]),
                self._job(self.G2, self.t2, [0], [s])]

    def with_ladders(self) -> "Blinding":
        """Make the ladders of the fixed points (2^i·P for i below the scalar field's bit
        length; G1 as one table of the three, then delta_2's); returns self."""
        if self.ladders is None:
            n = self.G1.r.bit_length()
            self.ladders = (affine_table(self.G1, [Q for P in self.fixed_1 for Q in doublings(self.G1, P, n)]),
                            affine_table(self.G2, doublings(self.G2, self.fixed_2[0], n)), n)
        return self

    def fixed_terms(self, r: int, s: int) -> list:
        """`fixed_jobs`' three points: from the ladders where made, else by `msm_many`."""
        if self.ladders is None:
            return msm_small_cpu.msm_many(self.fixed_jobs(r, s), threads=1)
        (t1, neg1), (t2, neg2), n = self.ladders
        q = self.G1.r

        def bits(k, base=0):        # the ladder columns of k·(the base-th fixed point)
            return [base * n + i for i in range(k.bit_length()) if k >> i & 1]

        def total(G, table, neg_off, cols):
            return msm_small_cpu.unit_sum(G, table, neg_off, cols, [1] * len(cols))
        return [total(self.G1, t1, neg1, bits(r % q, 2)),
                total(self.G1, t1, neg1, bits(s % q, 0) + bits(r % q, 1) + bits(r * s % q, 2)),
                total(self.G2, t2, neg2, bits(s % q))]

    def ab_job(self, A, B1, r: int, s: int):
        """s·A + r·B1 (G1), A and B1 the witness MSMs as affine points (None: the identity)."""
        return self._job(self.G1, affine_table(self.G1, [A, B1]), [0, 1], [s, r])

    def assemble(self, A, B2, C, H: list, ab, r_delta_1, c_fixed, s_delta_2) -> tuple:
        """(pi_a, pi_b, pi_c) from the MSMs' affine points (H: the quotient MSM's parts) and
        the blinding terms (module docstring): sums of a few points, one inversion each."""
        def total(G, *points):
            return lincomb(G, None, [(1, P) for P in points])
        return (total(self.G1, self.alpha_1, A, r_delta_1), total(self.G2, self.beta_2, B2, s_delta_2),
                total(self.G1, C, *H, ab, c_fixed))


__all__ = ["Blinding", "draw"]
