"""The verification key of a proving key, as ``snarkjs zkey export verificationkey`` makes it.

The key is the zkey's header points alpha_1, beta_2, gamma_2, delta_2, its IC
section, and vk_alphabeta_12 = e(alpha_1, beta_2), which snarkjs precomputes for
verifiers that use it (its own verifier and ours do not; see ``formats/gt.py`` for
how its value is laid out). It is computed with ``zktensor.algebra.pairing``,
whose Fq12 is ffjavascript's tower, so only the exponent differs from snarkjs's.
"""
from __future__ import annotations

import functools
import os

from .formats.json_io import VerificationKey, vk_to_json, write_vk
from .formats.zkey import ZKey, read_zkey
from .formats.gt import snarkjs_gt_exponent

# zktensor.algebra.pairing's value is py_ecc's to this power (asserted by its tests)
_OURS_AS_PYECC_POWER = {"bn254": 1, "bls12_381": -3}


@functools.lru_cache(maxsize=64)
def alphabeta_12(curve: str, alpha_1, beta_2) -> tuple:
    """e(alpha_1, beta_2) in snarkjs's layout and exponent (a pairing: cached). snarkjs's
    value is py_ecc's to lambda (``formats.gt.snarkjs_gt_exponent``), ours py_ecc's to
    _OURS_AS_PYECC_POWER, so snarkjs's is ours to lambda / that power (mod r)."""
    from zktensor.algebra import pairing as ate
    from zktensor.algebra.fields import field
    r = field(f"{curve}.fr").p
    f = ate.pairing(curve, alpha_1, beta_2)
    e = snarkjs_gt_exponent(curve) * pow(_OURS_AS_PYECC_POWER[curve], -1, r) % r
    f = ate.pairing_curve(curve).tower.pow12(f, e)
    return tuple(tuple(f[i][j] for j in range(3)) for i in range(2))      # c_ij of v^j·w^i


def verification_key(zkey: ZKey | str | os.PathLike, *, with_alphabeta: bool = True) -> VerificationKey:
    z = zkey if isinstance(zkey, ZKey) else read_zkey(zkey)
    ab = alphabeta_12(z.curve, z.alpha_1, z.beta_2) if with_alphabeta else None
    return VerificationKey(z.curve, z.n_public, z.alpha_1, z.beta_2, z.gamma_2, z.delta_2,
                           tuple(z.IC), ab)


def vk_json(zkey) -> dict:
    """verification_key.json's content, key for key as snarkjs writes it."""
    return vk_to_json(verification_key(zkey))


def export_vk(zkey, path) -> VerificationKey:
    """Write verification_key.json for a proving key (atomically) and return it."""
    vk = verification_key(zkey)
    write_vk(path, vk)
    return vk
