"""The verification key of a proving key, as ``snarkjs zkey export verificationkey`` makes it.

The key is the zkey's header points alpha_1, beta_2, gamma_2, delta_2, its IC
section, and vk_alphabeta_12 = e(alpha_1, beta_2), which snarkjs precomputes for
verifiers that use it (its own verifier and ours do not; see ``pairing.py`` for
how its value is laid out).
"""
from __future__ import annotations

import functools
import os

from .formats.json_io import VerificationKey, vk_to_json, write_vk
from .formats.zkey import ZKey, read_zkey
from .pairing import gt_to_snarkjs, pairing


@functools.lru_cache(maxsize=64)
def alphabeta_12(curve: str, alpha_1, beta_2) -> tuple:
    """e(alpha_1, beta_2) in snarkjs's layout and exponent (a pairing: cached)."""
    return gt_to_snarkjs(curve, pairing(curve, alpha_1, beta_2))


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
