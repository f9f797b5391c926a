"""Groth16 verification: e(A, B) = e(alpha, beta) · e(vk_x, gamma) · e(C, delta).

vk_x = IC[0] + sum_i pub_i·IC[i+1] binds the public signals (``vk_x``): one Straus (the
doublings shared by all signals) compiled in the same module as the pairing or on Python
ints (``curves.lincomb``), or our MSM (``zt.msm`` over the key's IC prepared once), whichever
costs least here (`_vk_x_way`: the MSM pays for many full-width signals in a process that
has loaded torch already). The check runs as
e(-A, B)·e(alpha, beta)·e(vk_x, gamma)·e(C, delta) = 1: Miller loops sharing their
squarings and a single final exponentiation, the key's part prepared once per key
(``prepared_vk``: e(alpha, beta)'s Miller loop value, gamma_2's and delta_2's lines),
compiled (``kernels.pairing_cpu``: where it is cached, or compiled in this process, which a
process without torch loaded, such as a one-shot ``zktensor verify``, does not do) or else on
Python ints (``algebra.pairing``). B's membership in G2 is psi(B) = [t - 1]B
(``algebra.pairing.g2_in_subgroup``, compiled the same way), a BLS12-381 G1 point's r·P = O
in Jacobian coordinates. Importing the verifier loads neither py_ecc nor torch.

What raises and what returns False:

* Malformed or mismatched inputs raise (``FormatError``/``ValueError``): a file
  that is not the JSON snarkjs writes, a proof for another curve than the key,
  a public-signal count other than the key's nPublic, a verification key whose
  points are not in their groups (the key is trusted input; a bad one is a bug).
* A well-formed proof that is wrong returns False: a point off its curve, not in
  the prime-order subgroup, or with a coordinate >= q; a public signal outside
  [0, r); a failing pairing equation.

Stricter than snarkjs 0.7 on purpose: snarkjs checks that proof points are on
the curve but not that B is in the subgroup of G2 (nor A, C for BLS12-381's G1),
and it reduces coordinates >= q instead of refusing them; both are malleability
holes zktensor does not copy.
"""
from __future__ import annotations

import functools
import os
import sys

from zktensor.algebra.curves import group, is_on_curve, lincomb
from zktensor.algebra.pairing import g2_in_subgroup

from .formats.errors import FormatError, WitnessError
from .formats.json_io import (Proof, VerificationKey, proof_from_json, public_from_json,
                              read_json, vk_from_json)
from .formats.zkey import ZKey
from .formats.curves import r_of
from .prepared_vk import groth16_check

_PATH = (str, bytes, os.PathLike)


def _load(v, parse, what: str):
    if isinstance(v, _PATH):
        name = os.fsdecode(v)
        return parse(read_json(name), name)
    return parse(v, what)


def as_vk(vk) -> VerificationKey:
    """A VerificationKey from itself, a dict as loaded from JSON, a path, or a ZKey."""
    if isinstance(vk, VerificationKey):
        return vk
    if isinstance(vk, ZKey):
        from .vk import verification_key
        return verification_key(vk, with_alphabeta=False)
    return _load(vk, vk_from_json, "verification key")


def as_proof(proof) -> Proof:
    return proof if isinstance(proof, Proof) else _load(proof, proof_from_json, "proof")


def as_public(public_signals) -> list[int]:
    if isinstance(public_signals, _PATH):
        return _load(public_signals, public_from_json, "public signals")
    return public_from_json(list(public_signals), "public signals")


def _in_group(curve: str, which: str, P) -> bool:
    """P (None: infinity) is in the prime-order subgroup (coordinates reduced)."""
    G = group(f"{curve}.{which}")
    if not is_on_curve(G, P):
        return False
    if G.cofactor == 1 or P is None:
        return True
    if which == "g2":
        from zktensor.kernels import pairing_cpu
        cp = pairing_cpu.compiled(curve)
        return cp.g2_in_subgroup(P) if cp is not None else g2_in_subgroup(curve, P)
    return lincomb(G, None, [(G.r, P)]) is None


# vk_x's three ways and their costs, in steps of the compiled Straus (a doubling or an
# addition; bench/pairing.py's vk_x rows measure all three): curves.lincomb's Straus on
# Python ints costs PY_STEP of them a step; zt.msm over the key's prepared IC about
# MSM_FIXED + MSM_PER_POINT·n, plus TORCH_LOAD in a process that has not loaded torch.
PY_STEP, MSM_FIXED, MSM_PER_POINT, TORCH_LOAD = 14, 10_000, 40, 4_000_000


def _vk_x_way(terms, compiled: bool) -> str:
    """"compiled", "python" or "msm": the cheapest way to the lincomb of `terms` here."""
    steps = max((s.bit_length() for s, _ in terms), default=0) + sum(bin(s).count("1") for s, _ in terms)
    costs = {"compiled" if compiled else "python": steps * (1 if compiled else PY_STEP),
             "msm": MSM_FIXED + MSM_PER_POINT * len(terms) + (0 if "torch" in sys.modules else TORCH_LOAD)}
    return min(costs, key=costs.get)


@functools.lru_cache(maxsize=16)
def _ic_bases(vk: VerificationKey):
    """The key's IC[1:] as MSM bases (prepared once per key)."""
    from ..ops.msm import msm_prepare
    from ..points import group as point_group
    return msm_prepare(point_group(f"{vk.curve}.g1").tensor(list(vk.IC[1:])))


def vk_x(vk: VerificationKey, pub: list[int], way: str | None = None):
    """IC[0] + sum_i pub[i]·IC[i+1] (pub in [0, r), the IC in G1), the cheapest way here
    (``way``: "compiled", "python" or "msm" to choose; the first two are one Straus, compiled
    or on Python ints). A signal above r/2 is taken as (r - s)·(-P): small negative signals
    (a zkml circuit's quantized values) then cost as few steps as small positive ones."""
    from zktensor.kernels import pairing_cpu
    G1 = group(f"{vk.curve}.g1")
    r, p = G1.r, G1.p
    terms = [(s, P) if s <= r // 2 else (r - s, (P[0], -P[1] % p))
             for s, P in zip(pub, vk.IC[1:]) if s and P is not None]
    cp = pairing_cpu.compiled(vk.curve) if way in (None, "compiled") else None
    chosen = way or _vk_x_way(terms, cp is not None)
    if chosen == "msm":
        try:
            from ..ops.msm import msm
            S = msm(list(pub), _ic_bases(vk)).to_affine()
            return lincomb(G1, vk.IC[0], [(1, S)])
        except ImportError:          # no torch, or no MSM kernels cached and no compiler here
            if way:
                raise
            chosen = "compiled" if cp is not None else "python"
    if chosen == "compiled":
        if cp is None:
            raise RuntimeError(f"no compiled {vk.curve} arithmetic here")
        return cp.g1_lincomb(vk.IC[0], terms)
    return lincomb(G1, vk.IC[0], terms)


@functools.lru_cache(maxsize=64)
def check_vk(vk: VerificationKey) -> None:
    """Raise FormatError unless every point of the key is in its group (cached per key:
    a verifier checks many proofs against one key)."""
    points = [("vk_alpha_1", "g1", vk.alpha_1), ("vk_beta_2", "g2", vk.beta_2),
              ("vk_gamma_2", "g2", vk.gamma_2), ("vk_delta_2", "g2", vk.delta_2)]
    points += [(f"IC[{i}]", "g1", P) for i, P in enumerate(vk.IC)]
    for name, which, P in points:
        if not _in_group(vk.curve, which, P):
            raise FormatError(f"verification key: {name} is not a point of {vk.curve} {which.upper()}")


def verify(vk, public_signals, proof, *, key_checked: bool = False) -> bool:
    """Check a Groth16 proof as ``snarkjs groth16 verify`` does (see the module doc for
    what raises and what returns False).

    ``vk``: VerificationKey, verification_key.json's dict, a path to it, or a ZKey;
    ``public_signals``: ints or decimal strings, or a path to public.json;
    ``proof``: Proof, proof.json's dict, or a path to it.
    ``key_checked``: the key's points are known to be in their groups (a prover's key that
    passed `key_check.validate_zkey`, which tests them all): `check_vk` is skipped, as a
    one-shot proof's self-check need not test them again.
    """
    vk_name, pub_name, proof_name = (os.fsdecode(v) if isinstance(v, _PATH) else what for v, what in
                                     ((vk, "verification key"), (public_signals, "public signals"),
                                      (proof, "proof")))
    if isinstance(vk, ZKey) and vk.path:
        vk_name = vk.path
    vk = as_vk(vk)
    proof = as_proof(proof)
    pub = as_public(public_signals)
    if proof.curve is not None and proof.curve != vk.curve:     # None: rapidsnark's, the key's curve
        raise FormatError(f"{proof_name}: the proof is for {proof.curve}, {vk_name} for {vk.curve}")
    if len(pub) != vk.n_public:
        raise FormatError(f"{pub_name}: {len(pub)} public signals, {vk_name} expects {vk.n_public}")
    try:
        if not key_checked:
            check_vk(vk)
    except FormatError as e:
        raise FormatError(f"{vk_name}: {e}".replace(f"{vk_name}: verification key: ", f"{vk_name}: ")) from None

    curve = vk.curve
    r = r_of(curve)
    if not all(0 <= s < r for s in pub):
        return False
    if not (_in_group(curve, "g1", proof.pi_a) and _in_group(curve, "g2", proof.pi_b)
            and _in_group(curve, "g1", proof.pi_c)):
        return False

    p = group(f"{curve}.g1").p
    neg_a = None if proof.pi_a is None else (proof.pi_a[0], -proof.pi_a[1] % p)
    return groth16_check(vk, neg_a, proof.pi_b, vk_x(vk, pub), proof.pi_c)


def verify_own(zkey: ZKey, public, proof, *, key_checked: bool = False) -> bool:
    """`verify` of a prover's own proof against its .zkey: a key error names the .zkey, not
    "verification key". key_checked: as `verify`'s (the key passed `key_check`)."""
    try:
        return verify(zkey, public, proof, key_checked=key_checked)
    except FormatError as e:
        name = zkey.path or "the proving key"
        raise FormatError(str(e) if str(e).startswith(name) else f"{name}: {e}") from None


def check_own(zkey: ZKey, public, proof, *, where: str, r1cs_path=None, key_checked: bool = False) -> None:
    """A prover's check of its proof before returning it: nothing if it verifies. Else, when
    the witness passed the .r1cs check (r1cs_path given), the key is wrong (FormatError
    naming it); without one, the witness or the key (WitnessError)."""
    if verify_own(zkey, public, proof, key_checked=key_checked):
        return
    key = zkey.path or "the proving key"
    if r1cs_path is not None:
        raise FormatError(f"{key}: the proof does not verify although {where} satisfies {r1cs_path}: "
                          "the proving key is wrong (corrupt, or not this circuit's key); no proof written")
    raise WitnessError(f"{where}: the proof does not verify: the witness does not satisfy the circuit, or "
                       f"{key} is not a correct key for it (give the .r1cs to tell which); no proof written")

