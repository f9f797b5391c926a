"""Is a proving key fit to prove with? Checked once, when a key is first loaded.

    stamp = validate_zkey(zkey)          # FormatError naming the .zkey, or KEY_CHECK_STAMP
    is_current(stamp)                    # a stamp stored with a key's tables still holds

What ``read_zkey`` already refuses (sizes against the header, a domain that is not a
power of two, coordinates and coefficients not reduced, header and IC points off
the curve) is asserted again here for keys built in Python. Added:

* the header points alpha_1, beta_1, beta_2, gamma_2, delta_1, delta_2 are not the
  identity and are in their prime-order subgroups; so are the IC points
  (Python ints: a handful of points);
* every point of the A, B1, B2, C and H sections is on its curve (decoded as
  tensors, ``Group.from_bytes(check=True)``) and, where the group's cofactor is
  not 1 (BN254's G2, BLS12-381's G1 and G2), in the subgroup. The subgroup test
  of a whole section is batched: k random combinations S_j = sum_i rho_ij·P_i
  (rho_ij uniform 64-bit) by one MSM, each checked r·S_j = O on Python ints. A point with a component of
  order l outside the subgroup survives one combination with probability 1/l, so
  k is chosen from the cofactor's smallest prime factor l_min for a 2^-64 bound
  (k = ceil(64 / log2 l_min): BN254 G2 (l_min = 10069): 5, BLS12-381 G2 (13): 18,
  BLS12-381 G1 (3): 41).

Without torch (``rows=``, `numpy_tables`: the prover without torch, `numpy_prover`, makes
a new key's tables itself), the same checks run over the tables' point-major rows: the
curve equation by a compiled field program over numpy arrays (`field_programs.run_host`),
the combinations by the lanes loop (`msm_small_cpu.msm_many`, 64-bit windows only).

Where: on the device the key's tables live on (``device=``), so that a prover on a GPU
needs no CPU-compiled kernel: the points are decoded there and, on the Triton target,
the combinations are one device MSM over 64-bit scalars (`ops.msm.device.device_msm`
with ``bits=64``, its scalars standard-form words uploaded as they are drawn). Its result
(k points) is read once, for the Python-int subgroup test. A device key's validation is
remembered under its file's identity (`file_identity`, `remember`).

What a structurally valid key cannot show (an H point swapped with its neighbour, a
changed coefficient) is caught by verifying every proof before it is written; the
prover then names the key.

``KEY_CHECK_STAMP`` changes whenever what is checked changes, so a stamp remembered
with a key's prepared tables (the on-disk table cache) is trusted only while it
names the checks of this code.
"""
from __future__ import annotations

import math
import secrets

import numpy as np

from zktensor.algebra.curves import group as int_group, in_subgroup, is_on_curve

from .formats.errors import FormatError
from .formats.zkey import ZKey

KEY_CHECK_STAMP = "zkey-check-v1"
SOUNDNESS_BITS = 64
_SMALLEST_COFACTOR_PRIME = {("bn254", "g2"): 10069, ("bls12_381", "g1"): 3, ("bls12_381", "g2"): 13}


def is_current(stamp) -> bool:
    """Whether a remembered stamp is what ``validate_zkey`` returns now."""
    return stamp == KEY_CHECK_STAMP


def combinations_for(curve: str, which: str) -> int:
    """Random combinations a section of this group needs (0: cofactor 1, no subgroup test)."""
    if int_group(f"{curve}.{which}").cofactor == 1:
        return 0
    return math.ceil(SOUNDNESS_BITS / math.log2(_SMALLEST_COFACTOR_PRIME[(curve, which)]))


def _name(z: ZKey) -> str:
    return z.path or "proving key"


def _header_checks(z: ZKey) -> None:
    name = _name(z)
    if z.domain_size <= 0 or z.domain_size & (z.domain_size - 1):
        raise FormatError(f"{name}: domainSize = {z.domain_size} is not a power of two")
    if z.n_vars < z.n_public + 1:
        raise FormatError(f"{name}: nVars = {z.n_vars} < nPublic + 1 = {z.n_public + 1}")
    expected = {"IC": z.n_public + 1, "A": z.n_vars, "B1": z.n_vars, "B2": z.n_vars,
                "C": z.n_vars - z.n_public - 1, "H": z.domain_size}
    for sec, n in expected.items():
        if len(getattr(z, sec)) != n:
            raise FormatError(f"{name}: section {sec} has {len(getattr(z, sec))} points, the header "
                              f"says {n}")
    for attr, which in (("alpha_1", "g1"), ("beta_1", "g1"), ("beta_2", "g2"), ("gamma_2", "g2"),
                        ("delta_1", "g1"), ("delta_2", "g2")):
        P = getattr(z, attr)
        if P is None:
            raise FormatError(f"{name}: header point {attr} is the identity")
        G = int_group(f"{z.curve}.{which}")
        try:
            ok = is_on_curve(G, P) and (G.cofactor == 1 or in_subgroup(G, P))
        except TypeError:
            ok = False
        if not ok:
            raise FormatError(f"{name}: header point {attr} is not in {z.curve}'s {which.upper()} subgroup")
    G1 = int_group(f"{z.curve}.g1")
    for i, P in enumerate(z.IC):
        if not (is_on_curve(G1, P) and (G1.cofactor == 1 or in_subgroup(G1, P))):
            raise FormatError(f"{name}: IC point {i} is not in {z.curve}'s G1 subgroup")


def _section_checks(z: ZKey, key: str, which: str, on_curve_checked: bool, device=None,
                    chunk: int | None = None) -> None:
    """On the curve (tensors) and, where the cofactor is not 1, in the subgroup (batched);
    `chunk` points at a time (a key larger than the device), each chunk's combinations
    tested on their own (a point outside the subgroup shows in its chunk's as it would in
    the whole section's)."""
    from ..points import group as tensor_group
    sec = getattr(z, key)
    name, label = _name(z), getattr(sec, "name", key)
    k = combinations_for(z.curve, which)
    if len(sec) == 0 or (on_curve_checked and not k):
        return
    G = tensor_group(f"{z.curve}.{which}")
    IG = int_group(f"{z.curve}.{which}")
    raw, size = sec.raw, 2 * G.degree * G.F.bytes
    step = chunk or len(sec)
    for a in range(0, len(sec), step):
        try:
            P = G.from_bytes(raw[a * size:(a + step) * size], device=device, check=not on_curve_checked)
        except ValueError as e:
            raise FormatError(f"{name}: {label}: {e}") from None
        if not k:
            continue
        for point in _combinations(G, P, k).to_affine():
            if point is not None and not in_subgroup(IG, point):
                raise FormatError(f"{name}: {label}: a point is not in {z.curve}'s {which.upper()} subgroup "
                                  "(a random combination of the section is not)")


def _combinations(G, P, k: int):
    """k random combinations sum_i rho_ij·P_i (rho uniform 64-bit) as a (k,) PointTensor, on
    P's device: the device program on the Triton target (over 64-bit windows only), the MSM
    op elsewhere."""
    from ..ops.msm import device as msm_device
    words = _random_words(G.Fr.limbs, k, P.shape[0])
    if msm_device.on_device(P.device):
        import torch
        from ..ops.msm import MSMConfig
        t = torch.from_numpy(words.view("<i4").transpose(2, 0, 1).copy()).to(P.device)
        return msm_device.device_msm(G, t, P, MSMConfig(), bits=SCALAR_BITS)
    from ..ops.msm import msm
    Fr = G.Fr
    return msm(Fr.from_bytes(words.tobytes()).reshape(k, P.shape[0]), P)


def _section_checks_rows(z: ZKey, key: str, which: str, table: np.ndarray, neg_off: int, first: int) -> None:
    """`_section_checks` over the section as rows first.. of a point-major table (its
    negations from neg_off, `host_words.affine_table`'s layout), without torch."""
    from ..kernels import msm_small_cpu
    sec = getattr(z, key)
    n = len(sec)
    if not n:
        return
    name, label = _name(z), getattr(sec, "name", key)
    IG = int_group(f"{z.curve}.{which}")
    pts = table[first:first + n]
    off = np.flatnonzero(curve_residue(IG, pts).any(axis=0) & pts.any(axis=1))
    if off.size:
        raise FormatError(f"{name}: {label}: {IG.name}: point {int(off[0])} is not on the curve")
    k = combinations_for(z.curve, which)
    if not k:
        return
    cols = np.arange(first, first + n, dtype=np.int64)
    words = _random_words(IG.fr.limbs32, k, n)
    combos = msm_small_cpu.msm_many([(IG, table, neg_off, cols, words[j]) for j in range(k)], bits=SCALAR_BITS)
    for point in combos:
        if point is not None and not in_subgroup(IG, point):
            raise FormatError(f"{name}: {label}: a point is not in {z.curve}'s {which.upper()} subgroup "
                              "(a random combination of the section is not)")


def curve_residue(G, pts: np.ndarray) -> np.ndarray:
    """y² − (x³ + a·x + b) of affine points given as point-major rows (m, 2d·L) of Montgomery
    words (x's d coordinates, then y's), as (d·L, m) int32 Montgomery limbs: zero exactly on
    the curve (and for (0, 0), the identity's encoding). G: the group's record; a compiled
    field program over Fq, the Fq2 arithmetic of G2 written out (u² = beta)."""
    from ..kernels.field_programs import run_host
    d, L = G.degree, G.fq.limbs32
    comps = [np.ascontiguousarray(pts[:, j * L:(j + 1) * L].T) for j in range(2 * d)]
    if d == 1:
        a, b = G.a, G.b

        def f(x, y):
            rhs = x * x * x + b
            return y * y - (rhs + a * x if a else rhs)
    else:
        from ..algebra.towers import tower
        beta, (a0, a1), (b0, b1) = tower(G.tower).beta, G.a, G.b

        def mul(u0, u1, v0, v1):
            return u0 * v0 + beta * (u1 * v1), u0 * v1 + u1 * v0

        def f(x0, x1, y0, y1):
            xx = mul(x0, x1, x0, x1)
            xxx = mul(*xx, x0, x1)
            yy = mul(y0, y1, y0, y1)
            ax = mul(a0, a1, x0, x1) if (a0, a1) != (0, 0) else (0, 0)
            return yy[0] - (xxx[0] + ax[0] + b0), yy[1] - (xxx[1] + ax[1] + b1)
    out = run_host(G.fq, f"curve_residue_{G.name}", 2 * d, f, comps)
    return np.concatenate(out, axis=0)


SCALAR_BITS = 64


def _random_words(limbs: int, k: int, n: int) -> np.ndarray:
    """(k, n, limbs) standard-form words of uniform 64-bit scalars: as good as full-size ones
    for the test (rho mod l is uniform enough for a small l, and a large l's component
    cancels with probability <= 2^-64), and the MSM's windows over 64 bits cost a fraction
    of 254."""
    rng = np.random.default_rng(secrets.randbits(128))
    words = np.zeros((k, n, limbs), dtype="<u4")
    rho = rng.integers(0, 1 << SCALAR_BITS, size=(k, n), dtype=np.uint64)
    words[..., 0], words[..., 1] = rho & 0xFFFFFFFF, rho >> np.uint64(32)
    return words


def file_identity(path) -> str:
    """A key file as it is now: its path, inode, size, modification and change times (the
    change time cannot be set back by a user: an edited file gets another identity)."""
    import hashlib
    import json
    import os
    st = os.stat(path)
    text = json.dumps([os.path.realpath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns])
    return hashlib.sha256(text.encode()).hexdigest()


def _stamp_file(digest: str):
    from ..runtime.cache import cache_root
    return cache_root() / "validated" / f"{digest}.stamp"


def remembered(digest: str) -> str | None:
    """The stamp `remember` wrote for a key of this digest (`file_identity`) if it names the
    checks of this code (else None): a key whose tables are not in the table cache (a GPU's)
    is validated once."""
    try:
        stamp = _stamp_file(digest).read_text().strip()
    except OSError:
        return None
    return stamp if is_current(stamp) else None


def remember(digest: str, stamp: str) -> None:
    """Record that the key of this digest passed ``validate_zkey`` (a read-only cache only
    loses the memory)."""
    from ..runtime import compile_shards
    from ..runtime.atomic import atomic_write
    if compile_shards.active():         # a compile pass's checks computed nothing
        return
    path = _stamp_file(digest)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path, "w", encoding="utf-8") as f:
            f.write(stamp + "\n")
    except OSError:
        pass


def validate_zkey(zkey: ZKey, *, on_curve_checked: bool = False, device=None, chunk: int | None = None,
                  rows: dict | None = None) -> str:
    """Raise FormatError, naming the .zkey, at the first problem (module doc); else return
    ``KEY_CHECK_STAMP``. on_curve_checked: the caller decoded every section with
    ``from_bytes(check=True)`` already (a prover preparing its tables), so only the
    subgroup tests of the sections remain. device: where the sections' points are decoded
    and combined (default: the CPU); chunk: at most this many points of a section at a
    time there. rows: {section: (point-major table, neg_off, first)} of every non-empty
    section: the checks over those rows without torch (module doc; `numpy_tables`)."""
    z = zkey
    _header_checks(z)
    for key, which in (("A", "g1"), ("B1", "g1"), ("B2", "g2"), ("C", "g1"), ("H", "g1")):
        if rows is not None:
            if len(getattr(z, key)):
                _section_checks_rows(z, key, which, *rows[key])
        else:
            _section_checks(z, key, which, on_curve_checked, device, chunk)
    return KEY_CHECK_STAMP


__all__ = ["KEY_CHECK_STAMP", "validate_zkey", "is_current", "combinations_for", "remember", "remembered",
           "file_identity"]
