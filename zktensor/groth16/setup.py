"""A development Groth16 setup: one party, toxic waste from ``secrets``. INSECURE.

    zktensor setup circuit.r1cs circuit.zkey [--vk verification_key.json] [--curve bn254]
    res = zt.groth16.setup.setup("circuit.r1cs", "circuit.zkey")

Whoever runs it knows tau, alpha, beta, gamma, delta for the instant they exist
(they are dropped when it returns, but nothing more is promised) and could forge
proofs with them. Use it to develop and test; use a ceremony (snarkjs's powers of
tau and phase 2) for anything that matters.

The key is the one snarkjs's ``groth16 setup`` + ``zkey contribute`` would make
for the same circuit and secrets, section for section (``zkey_new.js``):

* domain N = 2^(floor(log2(nConstraints + nPublic)) + 1), as snarkjs computes it;
* the constraint rows are the circuit's, plus one A row per public signal and the
  constant, A[nConstraints + i][i] = 1 (they bind the public inputs);
* with L_c the Lagrange basis of the N-th roots of unity (ffjavascript's ω) at tau,
  u_i = Σ_c A[c][i]·L_c, v_i = Σ_c B[c][i]·L_c, w_i = Σ_c C[c][i]·L_c:
  A_i = u_i·G1, B1_i = v_i·G1, B2_i = v_i·G2,
  IC_i = (beta·u_i + alpha·v_i + w_i)/gamma·G1 for the constant and public wires,
  C_i = (beta·u_i + alpha·v_i + w_i)/delta·G1 for the others,
  H_j = L'_(2j+1)/delta·G1 with L' the Lagrange basis of the 2N-th roots (the odd
  ones: the coset ω_2N·<ω_N> the prover evaluates on; see ``r1cs_to_qap``);
* the coefficient section holds A and B entry by entry in the .r1cs's order
  (constraint by constraint, A's terms then B's) as c·R² mod r, then the public rows.

Differences from snarkjs: gamma is random here (snarkjs leaves gamma = 1, the
generator; only its verifier reads it), and section 10, the MPC transcript, holds
a BLAKE2b-512 hash of the key's other sections and no contributions (snarkjs's
prover and ``zkey export verificationkey`` ignore it; ``snarkjs zkey verify``, which
recomputes the key from a ptau file, cannot apply to a key made without one).

The work is tensor work: Lagrange values by our batch inversion over the domain's
powers, the sparse products u, v, w by the segmented sums of ``r1cs_to_qap``, and
every point k·G by fixed-base tables (``fixed_base``: a gather and a tree of
batched additions per chunk of scalars).
"""
from __future__ import annotations

import hashlib
import os
import secrets
import time
from dataclasses import dataclass, field as dc_field
from pathlib import Path

import numpy as np
import torch

from ..kernels.field_programs import to_mont
from ..ops.elementwise import batch_inverse
from ..ops.ntt import powers
from ..points import group
from ..tensor import FieldTensor, field
from .fixed_base import FixedBase
from .formats import read_r1cs
from .formats.curves import curve_from_name
from .formats.points import codec
from .formats.json_io import dumps
from .formats.zkey import CoefSection, PointSection, ZKey, zkey_chunks
from .outputs import check_outputs, write_outputs
from .r1cs_to_qap import SparseFr, r2_form, words_to_limbs
from .vk import vk_json

INSECURE_WARNING = ("WARNING: zktensor setup is a single-party development setup. Its toxic waste "
                    "(tau, alpha, beta, gamma, delta) existed in this process: keys made with it are "
                    "INSECURE for production. Use a multi-party ceremony for real keys.")


@dataclass
class SetupResult:
    zkey_path: str
    vk_path: str
    curve: str
    power: int
    n_vars: int
    n_public: int
    seconds: float
    times: dict = dc_field(default_factory=dict)
    zkey: ZKey | None = None


def domain_power(n_constraints: int, n_public: int) -> int:
    """snarkjs's cirPower: floor(log2(nConstraints + nPublic)) + 1."""
    return max(1, (n_constraints + n_public).bit_length())


def default_vk_path(zkey_path) -> str | None:
    """Where the verification key goes without --vk: beside the key, <name>.vk.json."""
    if zkey_path in (None, ""):
        return None
    p = Path(zkey_path)
    return str(p.with_name(p.stem + ".vk.json"))


def _nonzero(r: int) -> int:
    return secrets.randbelow(r - 1) + 1


def setup(r1cs, zkey_path, *, vk_path=None, curve: str | None = None, device=None,
          verbose: bool = False, on_start=None) -> SetupResult:
    """Write a proving key and a verification key for a circuit (see the module docstring).

    The output paths are checked before any work and the two files are replaced as a pair
    (`outputs.write_outputs`: a failure leaves both as they were). on_start: called once
    the circuit has been read and accepted, before the secrets exist (the CLI prints
    INSECURE_WARNING then, so a refused input gets one line, its error)."""
    t_start = time.perf_counter()
    times: dict[str, float] = {}
    if vk_path is None:
        vk_path = default_vk_path(zkey_path)
    # before any work: outputs that would overwrite the circuit or each other are refused
    check_outputs([zkey_path, vk_path], inputs=[r1cs] if isinstance(r1cs, (str, bytes, os.PathLike)) else [],
                  what=["proving key", "verification key"])

    def mark(name, t):
        times[name] = time.perf_counter() - t
        if verbose:
            print(f"  {name}: {times[name]:.2f} s")
        return time.perf_counter()

    t = time.perf_counter()
    rc = read_r1cs(r1cs) if not hasattr(r1cs, "A") else r1cs
    if curve is not None and curve_from_name(curve) != rc.curve:
        raise ValueError(f"{rc.path}: the circuit is over {rc.curve}'s scalar field, not {curve}")
    if rc.has_custom_gates:
        raise ValueError(f"{rc.path}: custom gates are PLONK-only; Groth16 needs a plain R1CS")
    curve = rc.curve
    device = torch.device(device) if device is not None else (
        torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu"))
    F = field(f"{curve}.fr")
    r = F.p
    G1, G2 = group(f"{curve}.g1"), group(f"{curve}.g2")
    n_pub, n_c, n_vars = rc.n_public, rc.n_constraints, rc.n_wires
    power = domain_power(n_c, n_pub)
    if power >= F.two_adicity:
        raise ValueError(f"{rc.path}: {n_c} constraints need a domain of 2^{power}; zktensor's prover "
                         f"supports up to 2^{F.two_adicity - 1} for {curve}")
    N = 1 << power
    w_N, w_2N = F.root_of_unity(N), F.root_of_unity(2 * N)
    if on_start is not None:
        on_start()

    # toxic waste: tau off both domains (tau^(2N) != 1)
    tau = _nonzero(r)
    while pow(tau, 2 * N, r) == 1:
        tau = _nonzero(r)
    alpha, beta, gamma, delta = (_nonzero(r) for _ in range(4))
    gamma_inv, delta_inv = pow(gamma, -1, r), pow(delta, -1, r)
    t = mark("read", t)

    # Lagrange bases at tau: L_c = (tau^N - 1)/N · x_c/(tau - x_c), x_c = ω_N^c;
    # L'_(2j+1) over the 2N-th roots: x = ω_2N·ω_N^j, factor (tau^2N - 1)/(2N)
    def lagrange(xs: FieldTensor, n: int, scale: int) -> FieldTensor:
        k = (pow(tau, n, r) - 1) * pow(n, -1, r) % r * scale % r
        return batch_inverse(F.full(xs.shape, tau, device=device) - xs) * xs * k

    L = lagrange(powers(F, w_N, N, device), N, 1)
    Hs = lagrange(powers(F, w_N, N, device, scale=w_2N), 2 * N, delta_inv)
    t = mark("lagrange", t)

    # u, v, w: transposed sparse products (rows: wires), coefficients in Montgomery form
    def transposed(M, extra_rows=None):
        rows, cols, words = M.cols, M.rows, M.coeff_words
        if extra_rows is not None:
            er, ec = extra_rows
            rows = np.concatenate([rows, ec])
            cols = np.concatenate([cols, er])
            one = np.zeros((len(er), F.limbs), dtype=np.uint32)
            one[:, 0] = 1
            words = np.concatenate([words, one])
        coef = to_mont(F, words_to_limbs(words, device)) if len(rows) else words_to_limbs(words, device)
        return SparseFr(F, rows, cols, coef, n_vars, device)

    pub = np.arange(n_pub + 1, dtype=np.int64)
    u = transposed(rc.A, (n_c + pub, pub)).matvec(L.data)
    v = transposed(rc.B).matvec(L.data)
    w = transposed(rc.C).matvec(L.data)
    K = u * F.full((), beta, device=device) + v * F.full((), alpha, device=device) + w
    IC_s = K[:n_pub + 1] * F.full((), gamma_inv, device=device)
    C_s = K[n_pub + 1:] * F.full((), delta_inv, device=device)
    t = mark("qap", t)

    # points
    fb1 = FixedBase(G1.generator(device=device))
    fb2 = FixedBase(G2.generator(device=device))
    t = mark("tables", t)
    sec = {}
    sec["A"] = fb1.mul(u).to_bytes()
    sec["B1"] = fb1.mul(v).to_bytes()
    t = mark("points_A_B1", t)
    sec["B2"] = fb2.mul(v).to_bytes()
    t = mark("points_B2", t)
    sec["IC"] = fb1.mul(IC_s).to_bytes()
    sec["C"] = fb1.mul(C_s.contiguous()).to_bytes() if n_vars > n_pub + 1 else b""
    sec["H"] = fb1.mul(Hs).to_bytes()
    t = mark("points_IC_C_H", t)
    g1s = fb1.mul([alpha, beta, delta]).to_affine()
    g2s = fb2.mul([beta, gamma, delta]).to_affine()
    alpha_1, beta_1, delta_1 = g1s
    beta_2, gamma_2, delta_2 = g2s

    coefs = CoefSection(curve, raw=_coef_section(F, rc, n_pub, device))
    c1, c2 = codec(curve, "g1"), codec(curve, "g2")
    names = {"IC": 3, "A": 5, "B1": 6, "B2": 7, "C": 8, "H": 9}
    ps = {k: PointSection(c2 if k == "B2" else c1, raw=sec[k], name=f"section {names[k]} ({k})",
                          source=str(zkey_path)) for k in names}
    h = hashlib.blake2b(digest_size=64)
    for k in ("IC", "A", "B1", "B2", "C", "H"):
        h.update(sec[k])
    h.update(coefs.raw)
    contributions = h.digest() + (0).to_bytes(4, "little")
    zkey = ZKey(curve, n_vars, n_pub, N, alpha_1, beta_1, beta_2, gamma_2, delta_1, delta_2,
                IC=ps["IC"], coefs=coefs, A=ps["A"], B1=ps["B1"], B2=ps["B2"], C=ps["C"], H=ps["H"],
                contributions=contributions, path=str(zkey_path))
    t = mark("assemble", t)
    # the pair or nothing: a new key beside an old verification key would verify no proof
    write_outputs([(zkey_path, zkey_chunks(zkey_path, zkey)), (vk_path, dumps(vk_json(zkey)))])
    mark("write", t)
    tau = alpha = beta = gamma = delta = gamma_inv = delta_inv = None    # toxic waste: drop it
    return SetupResult(str(zkey_path), str(vk_path), curve, power, n_vars, n_pub,
                       time.perf_counter() - t_start, times, zkey)


def _coef_section(F, rc, n_pub: int, device) -> bytes:
    """Section 4's bytes: count, then (matrix, constraint, signal, c·R² mod r) records, in
    the .r1cs's order (per constraint A's terms, then B's), then the public rows."""
    A, B = rc.A, rc.B
    mats = np.concatenate([np.zeros(len(A), np.uint32), np.ones(len(B), np.uint32)])
    rows = np.concatenate([A.rows, B.rows]).astype(np.uint32)
    cols = np.concatenate([A.cols, B.cols]).astype(np.uint32)
    words = np.concatenate([A.coeff_words, B.coeff_words])
    order = np.lexsort((mats, rows))             # by constraint, then A before B; stable within
    pub = np.arange(n_pub + 1, dtype=np.uint32)
    one = np.zeros((n_pub + 1, F.limbs), dtype=np.uint32)
    one[:, 0] = 1
    mats = np.concatenate([mats[order], np.zeros(n_pub + 1, np.uint32)])
    rows = np.concatenate([rows[order], rc.n_constraints + pub])
    cols = np.concatenate([cols[order], pub])
    words = np.concatenate([words[order], one])
    vals = r2_form(F, words, device).cpu()           # (L, count) limbs of c·R²
    vals = vals.T.contiguous().numpy().view(np.uint32)
    rec = np.empty((len(rows), 3 + F.limbs), dtype="<u4")
    rec[:, 0], rec[:, 1], rec[:, 2], rec[:, 3:] = mats, rows, cols, vals
    return len(rows).to_bytes(4, "little") + rec.tobytes()


__all__ = ["setup", "SetupResult", "INSECURE_WARNING", "default_vk_path", "domain_power"]
