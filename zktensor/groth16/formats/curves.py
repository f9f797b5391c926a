"""Which curve a file is for, from the primes it stores; snarkjs's names for curves.

circom and snarkjs name a curve only by its primes: ``.r1cs`` and ``.wtns`` store
the scalar field r, a ``.zkey`` stores both q and r. JSON files use snarkjs's names
("bn128", "bls12381"); zktensor uses "bn254" and "bls12_381".
"""
from __future__ import annotations

from zktensor.algebra import field

CURVES = ("bn254", "bls12_381")
SNARKJS_NAME = {"bn254": "bn128", "bls12_381": "bls12381"}
FROM_SNARKJS_NAME = {v: k for k, v in SNARKJS_NAME.items()}


def r_of(curve: str) -> int:
    return field(f"{curve}.fr").p


def q_of(curve: str) -> int:
    return field(f"{curve}.fq").p


def curve_from_r(r: int) -> str | None:
    return next((c for c in CURVES if r_of(c) == r), None)


def curve_from_q(q: int) -> str | None:
    return next((c for c in CURVES if q_of(c) == q), None)


def curve_from_name(name: str) -> str:
    """Accepts snarkjs's names and ours ("bn128", "bn254", "bls12381", "bls12_381")."""
    key = FROM_SNARKJS_NAME.get(name, name)
    if key not in CURVES:
        raise ValueError(f"unknown curve {name!r}; known: bn128 (bn254), bls12381 (bls12_381)")
    return key


def n8_of(p: int) -> int:
    """Bytes per element on the wire: whole 64-bit words, as snarkjs computes n8q/n8r."""
    return ((p.bit_length() - 1) // 64 + 1) * 8
