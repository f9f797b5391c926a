"""snarkjs's pairing values (``vk_alphabeta_12`` in verification_key.json).

A value of Gt is printed as ffjavascript's ``Gt.toObject`` writes it: [[c00, c01, c02],
[c10, c11, c12]] for sum_ij c_ij·v^j·w^i in the tower Fq2[v]/(v^3 - xi), Fq6[w]/(w^2 - v),
xi = 9 + u (BN254) or 1 + u (BLS12-381), u^2 = -1, each c_ij as [a, b] = a + b·u: the tower
of `zktensor.algebra.pairing`, so its values need no change of basis.

The exponent differs. snarkjs's pairing is the reduced ate pairing to a fixed power lambda,
which the hard part of its final exponentiation (wasmcurves) multiplies in:
- BN254: lambda = 2x(6x^2 + 3x + 1), x the BN seed (Fuentes-Castañeda, Knapp and
  Rodríguez-Henríquez, "Faster hashing to G2", 2011, compute this multiple of
  (p^4 - p^2 + 1)/r);
- BLS12-381: lambda = -3 (zkcrypto's bls12_381 hard part computes 3·(p^4 - p^2 + 1)/r, and
  its Miller loop conjugates for the negative seed).
Neither changes whether a Groth16 equation holds; only the printed value.
"""
from __future__ import annotations

from ...algebra.curves import family
from ...algebra.fields import field


def snarkjs_gt_exponent(curve: str) -> int:
    """lambda (mod r): snarkjs's e is the reduced ate pairing e_0 (py_ecc's value) to lambda."""
    r = field(f"{curve}.fr").p
    fam, x = family(curve)
    if fam == "bn":
        return 2 * x * (6 * x * x + 3 * x + 1) % r
    if fam == "bls12":
        return -3 % r
    raise ValueError(f"no snarkjs pairing for {curve}")


__all__ = ["snarkjs_gt_exponent"]
