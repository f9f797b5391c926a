"""From a witness to the QAP: sparse A·w, B·w, C·w, the witness check, and snarkjs's H scalars.

All field arithmetic here runs through compiled programs (FieldTensor
operations, ``zt.ntt``/``zt.intt``); numpy only computes index plans once per
matrix, when a key or constraint system is loaded.

Sparse matrix × witness (``SparseFr``). A matrix is its entries (row, col,
coefficient). A product is one gather of w at the entries' columns, one
elementwise multiplication by the coefficients, then a *segmented sum* of the
products by row: the entries are sorted by row once (``SegmentPlan``) and
summed by a tree of elementwise additions, each level adding neighbouring pairs
inside every segment (a segment of k entries needs ceil(log2 k) levels; the
levels together do one addition per entry). Coefficients are kept as
snarkjs keeps them in a ``.zkey``, c·R² mod r (the Montgomery form of c·R), and
multiplied by the *standard-form* witness words read as if they were Montgomery
data (w·R⁻¹): the Montgomery product is then c·w in Montgomery form, with no
conversion of the witness at all (snarkjs's ``qap_buildABC`` does the same).
On the Triton target a product is instead one launch, a lane per row summing its
entries in a loop (`kernels.sparse_device`): the tree's levels were a few launches
each, at the head of a proof's critical path.

snarkjs's POLY stage (``groth16_prove.js``), followed exactly:

1. a = A·w, b = B·w over the domain of N = zkey.domainSize points, from the zkey's
   coefficient section (the circuit's A and B plus one A row per public input,
   A[nConstraints + i][i] = 1); c = a ∘ b. The key holds no C: snarkjs takes
   c·w = a·w ∘ b·w, which is true exactly when the witness satisfies the circuit.
2. For each of a, b, c: inverse NTT on the N-th roots of unity, then the forward
   NTT on the coset g·<ω_N> with g = ω_2N, the primitive 2N-th root of unity of
   ffjavascript's convention (``Fr.w[power+1]``): evaluations on the odd powers of
   ω_2N. (snarkjs uses ``Fr.shift`` instead when N = 2^s, the field's largest
   power-of-two domain; zktensor refuses that size.) The coefficients between the two
   transforms stay in bit-reversed order (``coefficients``, ``coset_evaluations``): the
   inverse NTT (Gentleman-Sande) leaves them so and the coset NTT (Cooley-Tukey) takes
   them so, and neither transform permutes (the Triton target's gathers, the CPU
   kernels' second buffer).
3. p = a·b − c on that coset, with no division by Z. p = A(x)B(x) − C(x) has degree
   < 2N and vanishes on the N-th roots (there c = a·b by construction), so
   p(τ) = Σ_i p(ω_2N^(2i+1))·L_(2i+1)(τ) with the Lagrange basis of the 2N-th roots,
   and the zkey's H points are H_i = L_(2i+1)(τ)/δ·G1: the H-MSM gives
   p(τ)/δ = h(τ)·Z(τ)/δ, the term the Groth16 proof needs. (Z = x^N − 1 is the
   constant −2 on this coset; dividing p by it and doubling the H points would
   give the same sum.)

Witness check. The zkey alone cannot tell a bad witness from a good one (it
has no C, and snarkjs's c := a ∘ b makes step 3 consistent for any w): a
witness that violates a constraint only shows up as a proof that fails
verification. So the check that names the first failing constraint needs the
circuit's ``.r1cs``: ``R1CSCheck`` evaluates A·w, B·w, C·w of the constraint
system with the same tensor programs and returns the first i with
(A·w)_i·(B·w)_i ≠ (C·w)_i. Without a ``.r1cs`` the prover can verify its own proof
instead (``Prover.prove(verify=True)``), which catches a bad witness without
telling which constraint failed.
"""
from __future__ import annotations

import numpy as np
import torch

from ..kernels.cpu_gather import take_rows
from ..kernels.field_programs import run_host, run_program, to_mont
from ..kernels.host_words import limbs
from ..kernels import sparse_device
from ..runtime.target import choose
from ..ops.ntt import intt, ntt
from ..tensor import FieldSpace, FieldTensor, field
from .formats.errors import WitnessError
from .segments import SegmentPlan

_MUL = lambda a, b: a * b          # noqa: E731
_JOIN = lambda a, b, c: a * b - c  # noqa: E731


# -- the sparse products ------------------------------------------------------------------


class SparseFr:
    """A sparse matrix over the scalar field, for products with a witness.

    ``coef`` holds c·R² mod r as Montgomery data (L, nnz): multiplied by standard-form
    witness words it gives c·w in Montgomery form (see the module docstring). The entries
    are kept sorted by row (stably: a row's entries in their given order), ``row_ptr``
    (n_rows + 1) marking where each row's begin, for the Triton target's one-launch product."""

    def __init__(self, F: FieldSpace, rows: np.ndarray, cols: np.ndarray, coef: torch.Tensor,
                 n_rows: int, device=None):
        self.F = F
        self.n_rows = int(n_rows)
        self.nnz = int(len(rows))
        rows = np.asarray(rows, dtype=np.int64)
        order = np.argsort(rows, kind="stable")
        sorted_ = bool((order == np.arange(self.nnz)).all())
        rows = rows[order]
        self.cols = torch.from_numpy(np.asarray(cols, dtype=np.int64)[order]).to(device)
        coef = coef if sorted_ else coef[:, torch.from_numpy(order).to(coef.device)]
        self.coef = coef.to(device) if device is not None else coef
        counts = np.bincount(rows, minlength=self.n_rows)[:self.n_rows] if self.nnz else np.zeros(self.n_rows, np.int64)
        self.row_ptr = torch.from_numpy(np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)).to(device)
        # the CPU target's tree: made with the matrix where products will run there, else on
        # the first product that does (the Triton target's kernel needs none of its indices)
        self._rows = rows
        self._plan = SegmentPlan(rows, n_rows) if choose(self.coef.device.type)[1] == "cpu" else None

    @property
    def plan(self) -> SegmentPlan:
        if self._plan is None:
            self._plan = SegmentPlan(self._rows, self.n_rows)
        return self._plan

    def to(self, device) -> "SparseFr":
        new = object.__new__(SparseFr)
        new.__dict__.update(self.__dict__)
        new.cols, new.coef, new.row_ptr = self.cols.to(device), self.coef.to(device), self.row_ptr.to(device)
        return new

    def matvec(self, w_std: torch.Tensor, out: FieldTensor | None = None) -> FieldTensor:
        """M·w as a FieldTensor (n_rows,), from standard-form witness words (L, n_wires).
        out: a FieldTensor (n_rows,) on w's device to write M·w into (a view, such as a row
        of the prover's (3, N) buffer: `Prover._h_nodes`), returned."""
        F = self.F
        if out is not None and (not isinstance(out, FieldTensor) or out.F != F
                                or tuple(out.shape) != (self.n_rows,) or out.device != w_std.device):
            raise ValueError(f"matvec: out must be a {F.name} FieldTensor of shape ({self.n_rows},) on "
                             f"{w_std.device}")
        if self.nnz == 0:
            if out is None:
                return F.zeros((self.n_rows,), device=w_std.device)
            out.data.zero_()
            return out
        strategy, target = choose(w_std.device.type)
        if target == "triton":
            res = sparse_device.csr_matvec(F, strategy, self.coef, self.cols, self.row_ptr, w_std,
                                           None if out is None else out.data)
            return FieldTensor(F, res) if out is None else out
        w = take_rows(w_std.numpy(), self.cols.numpy())
        (prod,) = run_host(F, "qap_mul", 2, _MUL, [self.coef.numpy(), w])
        res = self.plan.sum(F, prod, None if out is None else out.data.numpy())
        return FieldTensor(F, torch.from_numpy(res)) if out is None else out


def words_to_limbs(words: np.ndarray, device=None) -> torch.Tensor:
    """(n, L) little-endian uint32 words (a file's layout) -> (L, n) int32 limb-major data."""
    t = torch.from_numpy(limbs(words))
    if device is None:
        return t
    device = torch.device(device)
    if device.type == "cuda":
        # up once, from pinned memory: a DMA copy queued on the current stream, the host not
        # waiting (consumers on other streams wait for it: runtime.graph.Graph.run)
        return t.pin_memory().to(device, non_blocking=True)
    return t.to(device)


def r2_form(F: FieldSpace, std_words: np.ndarray, device=None) -> torch.Tensor:
    """c·R² mod p as limb data from standard-form words (n, L): to_mont applied twice."""
    t = words_to_limbs(std_words, device)
    if t.shape[1] == 0:
        return t
    return to_mont(F, to_mont(F, t))


# -- the zkey's side: A·w, B·w ----------------------------------------------------------


def zkey_matrices(zkey, device=None) -> tuple[SparseFr, SparseFr]:
    """A and B (domainSize rows) from the zkey's coefficient section, as stored."""
    F = field(f"{zkey.curve}.fr")
    cs = zkey.coefs
    matrix = np.asarray(cs.matrix)
    out = []
    for m in (0, 1):
        sel = np.flatnonzero(matrix == m)
        words = np.asarray(cs.stored_words)[sel]
        coef = words_to_limbs(words, device)          # c·R² as stored: no conversion
        out.append(SparseFr(F, np.asarray(cs.constraint)[sel], np.asarray(cs.signal)[sel], coef,
                            zkey.domain_size, device))
    return out[0], out[1]


def coset_shift(F: FieldSpace, domain_size: int) -> int:
    """snarkjs's ``inc``: ω_2N, the primitive 2N-th root of unity (ffjavascript's Fr.w[power+1])."""
    power = domain_size.bit_length() - 1
    if power >= F.two_adicity:
        raise ValueError(f"domain of 2^{power} points: snarkjs's prover switches to a different "
                         f"coset (Fr.shift) at the field's largest domain 2^{F.two_adicity}; "
                         f"zktensor supports domains up to 2^{F.two_adicity - 1}")
    return F.root_of_unity(2 * domain_size)


def h_scalars(abc: FieldTensor, shift: int) -> FieldTensor:
    """(3, N) evaluations of a, b, c on the domain -> p = a·b − c on the coset shift·<ω_N>
    (intt, coset ntt, join), the H-MSM's scalars. Unfused reference of the graph's nodes."""
    return join_abc(coset_evaluations(coefficients(abc), shift))


def coefficients(abc: FieldTensor, **overrides) -> FieldTensor:
    """The inverse NTT of each row (evaluations on <ω_N> -> coefficients), left in
    bit-reversed order for ``coset_evaluations``. `overrides`: NTTConfig fields (bench)."""
    return intt(abc, output_order="bitrev", **overrides)


def coset_evaluations(coeffs: FieldTensor, shift: int, **overrides) -> FieldTensor:
    """Bit-reversed coefficients (``coefficients``) -> evaluations on shift·<ω_N>, in
    natural order (the order of the zkey's H points). `overrides`: NTTConfig fields."""
    return ntt(coeffs, coset=shift, input_order="bitrev", **overrides)


def join_abc(ev: FieldTensor) -> FieldTensor:
    """a·b − c elementwise over a (3, N) tensor (one compiled program)."""
    F = ev.F
    (p,) = run_program(F, "qap_join_abc", 3, _JOIN, [ev.data[:, 0], ev.data[:, 1], ev.data[:, 2]])
    return FieldTensor(F, p)


# -- the r1cs side: the witness check ---------------------------------------------------------


class R1CSCheck:
    """A, B, C of a ``.r1cs`` as tensors, to check witnesses against (once per circuit)."""

    def __init__(self, r1cs, device=None):
        self.r1cs = r1cs
        self.path = r1cs.path
        self.F = F = field(f"{r1cs.curve}.fr")
        self.n_constraints = r1cs.n_constraints
        self.n_wires = r1cs.n_wires
        self.mats = [SparseFr(F, M.rows, M.cols, r2_form(F, M.coeff_words, device), r1cs.n_constraints,
                              device) for M in (r1cs.A, r1cs.B, r1cs.C)]

    def unsatisfied(self, w_std: torch.Tensor, ab: FieldTensor | None = None) -> torch.Tensor:
        """(2,) int64 on w's device, computed without reading anything back: whether some
        constraint i has (A·w)_i·(B·w)_i ≠ (C·w)_i, and the first such i (0 if none). On a
        device the prover reads it once, with the proof (w: (L, n_wires) standard-form
        words). ab: (A·w)∘(B·w) already computed, in Montgomery form, at least
        n_constraints long (the prover's ``Cw``: products with a key whose A and B are this
        system's, `formats.consistency.check_r1cs_coefs`), so that only C·w is left."""
        nc = self.n_constraints
        if nc == 0:
            return torch.zeros(2, dtype=torch.int64, device=w_std.device)
        if ab is None:
            a, b = (M.matvec(w_std) for M in self.mats[:2])
            ab = a * b
        elif ab.shape[0] != nc:
            ab = ab[:nc]
        c = self.mats[2].matvec(w_std)
        bad = ~(ab == c)
        # argmax gives the first maximal index: the first failing constraint
        return torch.stack([bad.any().to(torch.int64), bad.to(torch.int32).argmax().to(torch.int64)])

    def first_unsatisfied(self, w_std: torch.Tensor, ab: FieldTensor | None = None) -> int | None:
        """The first constraint i with (A·w)_i·(B·w)_i ≠ (C·w)_i, or None (w: (L, n_wires)
        standard-form words; ab: as for `unsatisfied`)."""
        failed, i = self.unsatisfied(w_std, ab).tolist()
        return i if failed else None

    def error(self, i: int, where: str = "witness") -> WitnessError:
        """The WitnessError for constraint i failing."""
        return WitnessError.unsatisfied(where, self.path, i, self.n_constraints)

    def check(self, w_std: torch.Tensor, where: str = "witness", ab: FieldTensor | None = None) -> None:
        """Raise WitnessError naming the first failing constraint (ab: as for `unsatisfied`)."""
        i = self.first_unsatisfied(w_std, ab)
        if i is not None:
            raise self.error(i, where)


__all__ = ["WitnessError", "SegmentPlan", "SparseFr", "zkey_matrices", "coset_shift", "h_scalars",
           "join_abc", "R1CSCheck", "words_to_limbs", "r2_form"]
