"""The Groth16 prover without torch: numpy arrays, the compiled CPU kernels and Python ints.

    prover = NumpyProver.load("circuit.zkey", r1cs="circuit.r1cs")   # Unavailable: use `Prover`
    proof, public = prover.prove(read_wtns("witness.wtns"))

Why: `zktensor prove` proving in its own process paid ``import torch`` (its time and
resident memory are in the commit that made this module) for a proof that, for small
circuits, takes much less. The CPU engine's kernels never needed torch: they are
shared objects called through ctypes on raw addresses. This prover calls them on numpy
arrays, with the steps of `prover.Prover`'s graph in order (the five MSMs' calls as one
queue that the cores share, `msm_small_cpu.msm_many`):

    w ─ A·w, B·w (`segments.SegmentPlan`) ─ c = a∘b ─ intt ─ coset ntt (`ntt_cpu.transform`)
      ─ p = a·b − c ─ Σ p_j·H_j
      ─ Σ w_i·A_i, Σ w_i·B1_i, Σ w_i·C_i (private wires), Σ w_i·B2_i
      ─ the blinding terms (`blinding`: MSMs of a few points, in the same queue)
      ─ s·A + r·B1 ─ assembly on Python ints (sums of a few points) ─ pairing check
    with a .r1cs: C·w of the constraint system against a∘b, the first failing constraint named

Every MSM is the lanes loop (`kernels.msm_small_cpu`) over the key's prepared tables
*as the on-disk table cache holds them* (`table_cache.load_host`: mapped, the pages shared
with every other process proving with the key): the tables' first checkpoint and its
negations. So this path needs a cache entry (the tensor prover's, or one of its own), which
also records that the key was validated (`key_check`). A new key's entry is made here, without
torch (`numpy_tables`: the rows from the file's bytes, the same validation). `load`
raises Unavailable, and the caller proves with `Prover`, where the lanes loop or the NTT
kernels cannot run (no AVX-512), the table cache is off, or for domains past
`DOMAIN_UPTO` (not measured there: the tensor prover's bucket tree gains on the lanes loop
as MSMs grow).

The proofs are the tensor prover's: the same formulas (snarkjs's ``groth16_prove.js``
blinding with r, s from ``secrets``, `blinding.draw`), and, for the same r and s, the same points
(tests/prover/test_numpy_prover.py checks that on BN254 and BLS12-381 keys, and that
snarkjs verifies the proofs). Every proof is verified before it is returned, as
`Prover.prove` does.
"""
from __future__ import annotations

import os
import threading
from typing import NamedTuple

import numpy as np

from ..algebra.curves import group
from ..algebra.fields import field
from ..kernels import msm_small_cpu, ntt_cpu
from ..kernels.cpu_gather import take_rows
from ..kernels.field_programs import OPS, run_host
from ..kernels.host_words import ints, limbs, mont_limbs
from ..runtime.cpu_isa import cpu_options
from . import numpy_tables, table_cache
from .formats.binfile import drop_pages
from .blinding import Blinding, draw
from .formats.consistency import check_r1cs_for_zkey, witness_words
from .formats.r1cs import R1CS, read_r1cs
from .formats.errors import WitnessError
from .formats.json_io import Proof
from .formats.zkey import ZKey, read_zkey
from .key_check import is_current
from .segments import SegmentPlan
from .verifier import check_own, verify_own

DOMAIN_UPTO = 1 << 18    # past the lanes loop's own bound (`ops.msm.LANES_UPTO`, 2^16), where the
                         # tensor prover's bucket tree wins an MSM, torch's import saved still
                         # wins the proof at 2^18 (the commit that set it); larger, not measured
WITNESS_TABLES = {"a": ("ab1c", 0), "b1": ("ab1c", 1), "c": ("ab1c", 2)}   # merged keys' sections

_MUL = lambda a, b: a * b          # noqa: E731
_JOIN = lambda a, b, c: a * b - c  # noqa: E731


class Checked(NamedTuple):
    """The .r1cs a prover checks witnesses against: its path and constraint count."""
    path: str
    n_constraints: int


class Unavailable(Exception):
    """Why this path cannot prove with a key here (the caller proves with `Prover`)."""


class Table:
    """One prepared table as the cache maps it: the point-major rows the lanes loop reads
    (bases at columns 0..n-1, their negations from neg_off) and its sections' offsets."""

    def __init__(self, name: str, scalars: dict, arrays: dict, sizes: list):
        def num(k):
            v = scalars[k]
            return int(v["int"]) if isinstance(v, dict) else int(v)
        if scalars.get("__kind__") not in ("MSMBases", numpy_tables.KIND) or "rows" not in arrays:
            raise Unavailable(f"table {name}: no point-major rows")
        self.rows = arrays["rows"]
        self.n, J = num("n"), num("J")
        self.neg_off = J * (self.n + 1)
        self.offsets = np.cumsum([0] + list(sizes)[:-1]).tolist()


class NumpyProver:
    """A proving key's tables mapped from the table cache, and the steps of a proof over
    them (module docstring). Made by `load`."""

    def __init__(self, zkey: ZKey, tables: dict, r1cs: R1CS | None = None):
        self.zkey, self.path, self.curve = zkey, zkey.path, zkey.curve
        self.F = field(f"{zkey.curve}.fr")
        self.G1, self.G2 = group(f"{zkey.curve}.g1"), group(f"{zkey.curve}.g2")
        self.tables = tables
        self.n_vars, self.n_public, self.domain = zkey.n_vars, zkey.n_public, zkey.domain_size
        self.shift = self.F.root_of_unity(2 * self.domain)       # snarkjs's coset (`r1cs_to_qap`)
        self.A, self.B = (self._matrix(m) for m in (0, 1))
        # the coefficients are read into the matrices and the points come from the tables:
        # the file's pages leave the resident set
        drop_pages(getattr(zkey.H, "raw", None))
        self.blinding = Blinding.of_key(zkey, self.G1, self.G2)
        self.r1cs = None
        if r1cs is not None:         # the key's A and B are the system's (checked): C is left
            check_r1cs_for_zkey(zkey, r1cs)
            coef = limbs(r1cs.C.coeff_words)
            for _ in range(2):       # c·R² (`r1cs_to_qap.r2_form`): to Montgomery form twice
                (coef,) = run_host(self.F, "to_mont", 1, OPS["to_mont"][1], [coef])
            self.C = (np.asarray(r1cs.C.cols, dtype=np.int64), coef,
                      SegmentPlan(np.asarray(r1cs.C.rows, dtype=np.int64), r1cs.n_constraints))
            # what the check names in its errors; not the system itself: its A and B are
            # the key's, and holding them was a sixth of a 2^18 proof's peak
            self.r1cs = Checked(r1cs.path, r1cs.n_constraints)

    @classmethod
    def load(cls, path, *, r1cs=None) -> "NumpyProver":
        """The prover for the .zkey at `path`, with the witness check against `r1cs` (a path
        or an R1CS) when given; Unavailable, saying why, where this path cannot prove with
        the key here (see the module docstring)."""
        if not table_cache.enabled():
            raise Unavailable("the table cache is off")
        opts = cpu_options("fp64")
        if opts["lanes"] != msm_small_cpu.LANES:
            raise Unavailable("the CPU has no 8-lane vectors")
        digest = table_cache.remembered_digest(path)
        got = table_cache.load_host(digest)
        # a key with tables passed key_check (the entry is keyed by its sha256): its points are
        # not read again (the file's identity is the digest's, `remembered_digest`); a new
        # one's coordinates are checked as it is read, then it is validated (`numpy_tables`)
        z = read_zkey(path, check_points=got is None)
        if table_cache.remembered_digest(path) != digest:
            raise Unavailable(f"{path} changed while it was read")
        if z.domain_size > DOMAIN_UPTO:
            raise Unavailable(f"a domain of {z.domain_size}: past what the lanes loop proves faster")
        if got is None:
            try:
                numpy_tables.build(z, digest)
            except OSError as e:         # a cache it cannot write (FormatError: the key's fault, raised)
                raise Unavailable(f"its tables could not be stored ({e})") from None
            got = table_cache.load_host(digest)
            if got is None:
                raise Unavailable("the table cache did not keep this key's tables")
        found, meta = got
        if not is_current(meta.get("validated", {}).get("zkey_check")):
            raise Unavailable("the key's validation is not recorded with its tables")
        specs = meta["specs"]
        tables = {name: Table(name, scalars, arrays, specs[name]["sizes"])
                  for name, (scalars, arrays) in found.items()
                  if scalars is not None and name not in ("fixed_1", "fixed_2")}
        return cls(z, tables, read_r1cs(r1cs, load_map=False) if isinstance(r1cs, (str, bytes, os.PathLike)) else r1cs)

    # -- POLY -------------------------------------------------------------------------
    def _matrix(self, m: int):
        """(entries' columns, c·R² coefficients (L, nnz) int32, SegmentPlan by row) of the
        key's matrix m (0: A, 1: B), as `r1cs_to_qap.zkey_matrices` reads it."""
        cs = self.zkey.coefs
        sel = np.flatnonzero(np.asarray(cs.matrix) == m)
        coef = np.ascontiguousarray(np.asarray(cs.stored_words)[sel].T).view(np.int32)
        return (np.asarray(cs.signal, dtype=np.int64)[sel], coef,
                SegmentPlan(np.asarray(cs.constraint, dtype=np.int64)[sel], self.domain))

    def _matvec(self, M, w: np.ndarray) -> np.ndarray:
        """M·w (L, domain) in Montgomery form from the standard-form witness limbs w (L, n):
        c·R² times w read as Montgomery data is c·w (`r1cs_to_qap`'s module docstring)."""
        cols, coef, plan = M
        if not len(cols):
            return np.zeros((self.F.limbs32, plan.n_segments), dtype=np.int32)
        (prod,) = run_host(self.F, "qap_mul", 2, _MUL, [coef, take_rows(w, cols)])
        return plan.sum(self.F, prod)

    def first_unsatisfied(self, w: np.ndarray, ab: np.ndarray) -> int | None:
        """The first constraint i of the .r1cs with (A·w)_i·(B·w)_i ≠ (C·w)_i, or None; ab:
        POLY's a∘b (Montgomery, canonical words as the kernels leave them, as C·w)."""
        nc = self.r1cs.n_constraints
        bad = np.flatnonzero((ab[:, :nc] != self._matvec(self.C, w)).any(axis=0))
        return int(bad[0]) if bad.size else None

    def h_scalars(self, w: np.ndarray, where: str = "witness", check: bool = True) -> np.ndarray:
        """p = a·b − c on snarkjs's coset, standard-form words (domain, L): the H MSM's
        scalars; with check and the .r1cs, WitnessError naming the first failing constraint."""
        F, N = self.F, self.domain
        abc = np.empty((F.limbs32, 3, N), dtype=np.int32)
        abc[:, 0] = self._matvec(self.A, w)
        abc[:, 1] = self._matvec(self.B, w)
        run_host(F, "mul", 2, OPS["mul"][1], [abc[:, 0], abc[:, 1]], out=[abc[:, 2]])
        if check and self.r1cs is not None and (i := self.first_unsatisfied(w, abc[:, 2])) is not None:
            raise WitnessError.unsatisfied(where, self.r1cs.path, i, self.r1cs.n_constraints)
        if N >= ntt_cpu.LANES * ntt_cpu.LANES:
            # bit-reversed coefficients between the two, as `r1cs_to_qap.coefficients` keeps them
            coeffs = ntt_cpu.transform(F, abc, inverse=True, output_order="bitrev")
            ev = ntt_cpu.transform(F, coeffs, coset=self.shift, input_order="bitrev")
        else:
            ev = _coset_evaluations(F, abc, self.shift)
        (p,) = run_host(F, "qap_join_abc", 3, _JOIN, [ev[:, 0], ev[:, 1], ev[:, 2]])
        (std,) = run_host(F, "from_mont", 1, OPS["from_mont"][1], [p])
        return np.ascontiguousarray(std.view(np.uint32).T)

    # -- MSM --------------------------------------------------------------------------
    def _job(self, G, unit: str, scalars: np.ndarray, first: int = 0):
        """(table, `msm_small_cpu.msm_many` job) of Σ k_i·P_(first+i) over the key section
        `unit` (a table, or a merged table's section), k_i the rows of `scalars`
        (standard-form words); zero scalars take no entry. None: the identity (an empty
        section, or no nonzero scalar)."""
        name, sec = WITNESS_TABLES[unit] if unit in WITNESS_TABLES and unit not in self.tables else (unit, 0)
        T = self.tables.get(name)
        live = np.flatnonzero(scalars.any(axis=1))
        if T is None or not live.size:
            return None
        cols = (T.offsets[sec] + first + live).astype(np.int64)
        return T, (G, T.rows, T.neg_off, cols, scalars[live])

    def msms(self, units, extra: list = ()) -> tuple[dict, list]:
        """{unit: Σ k_i·P_i} for units (unit, group, scalars, first), as affine Python-int
        points (None: the identity), and the points of the `extra` jobs (`msm_many`'s, of
        their own tables: the blinding's), in one `msm_many` (their calls share the cores). A
        table's mapped pages leave the resident set once its last MSM is done: the peak holds
        about one table, not five."""
        jobs = {u: self._job(G, u, sc, first) for u, G, sc, first in units}
        live = [u for u, j in jobs.items() if j is not None]
        uses: dict = {}
        for u in live:
            uses[id(jobs[u][0])] = uses.get(id(jobs[u][0]), 0) + 1
        lock = threading.Lock()

        def done(k):
            T = jobs[live[k]][0]
            with lock:
                uses[id(T)] -= 1
                last = uses[id(T)] == 0
            if last:
                drop_pages(T.rows)
        points = msm_small_cpu.msm_many([jobs[u][1] for u in live] + list(extra),
                                        done=lambda k: done(k) if k < len(live) else None)
        return {u: (points[live.index(u)] if u in live else None) for u, *_ in units}, points[len(live):]

    # -- the proof --------------------------------------------------------------------
    def prove(self, witness, *, check: bool = True, verify: bool | None = None, rs=None):
        """(Proof, public signals) for a witness (a .wtns path, a Wtns or ints), as `Prover.prove`: check
        (the .r1cs's constraints, when given; verify follows it by default) and verify (the
        pairing check); rs: the blinding (r, s) (tests; default from ``secrets``)."""
        ws, where = witness_words(self.zkey, witness)
        w = limbs(ws)                                             # (L, n) limbs for the products
        p = self.h_scalars(w, where, check)
        G1, G2, k = self.G1, self.G2, self.n_public + 1
        r, s = rs if rs is not None else draw(self.F.p)
        bl = self.blinding
        # C's bases: the private wires (after k identities); the merged table's sections together
        pts, fixed = self.msms([("a", G1, ws, 0), ("b1", G1, ws, 0), ("c", G1, ws[k:], k), ("B2", G2, ws, 0),
                                ("H", G1, p, 0)], extra=bl.fixed_jobs(r, s))
        A, B1, C, B2, H = (pts[u] for u in ("a", "b1", "c", "B2", "H"))
        (ab,) = msm_small_cpu.msm_many([bl.ab_job(A, B1, r, s)], threads=1)
        pi_a, pi_b, pi_c = bl.assemble(A, B2, C, [H], ab, *fixed)
        proof = Proof(self.curve, pi_a, pi_b, pi_c)
        public = ints(ws[1:k])
        if check if verify is None else verify:      # the key passed key_check: its stamp is with the tables
            check_own(self.zkey, public, proof, where=where, key_checked=True,
                      r1cs_path=self.r1cs.path if check and self.r1cs is not None else None)
        return proof, public

    def verify(self, proof: Proof, public) -> bool:
        return verify_own(self.zkey, public, proof, key_checked=True)


def _coset_evaluations(F, abc: np.ndarray, g: int) -> np.ndarray:
    """The intt and coset ntt of `h_scalars` for domains below the NTT kernels' 64 points,
    on Python ints: the N values' interpolation, evaluated at g·ω^k (O(N^2), N <= 32).
    (L, 3, N) Montgomery limbs in and out."""
    _, _, N = abc.shape
    p = F.p
    w, wi = F.root_of_unity(N), pow(F.root_of_unity(N), -1, p)
    n_inv = pow(N, -1, p)
    out = np.empty_like(abc)
    for t in range(3):
        ys = [v * F.R_inv % p for v in ints(np.ascontiguousarray(abc[:, t].T))]
        coeffs = [n_inv * sum(y * pow(wi, j * k, p) for j, y in enumerate(ys)) % p for k in range(N)]
        ev = [sum(c * pow(g * pow(w, k, p), j, p) for j, c in enumerate(coeffs)) % p for k in range(N)]
        out[:, t] = mont_limbs(F, ev)
    return out


__all__ = ["NumpyProver", "Unavailable", "DOMAIN_UPTO"]
