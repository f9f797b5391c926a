"""circom's ``.r1cs``: the constraint system A·w ∘ B·w = C·w.

Container magic ``r1cs``, version 1. Sections (iden3 r1csfile):

1. header: n8 u32, prime (n8 bytes), nWires u32, nPubOut u32, nPubIn u32,
   nPrvIn u32, nLabels u64, nConstraints u32
2. constraints: for each constraint, the linear combinations A, B, C, each
   nTerms u32 then nTerms × (wire u32, coefficient n8 bytes, standard form)
3. wire → label map: nWires × u64
4, 5. custom gates (PLONK only): kept out of the constraint system here

Wire 0 is the constant 1; wires 1..nPubOut are the public outputs, then the
nPubIn public inputs, then the private inputs and internal signals, so the
public signals of a proof are w[1 .. nPubOut+nPubIn].

Each matrix is kept as parallel arrays (row = constraint index, col = wire) with
the coefficients' raw words, in file order; Python-int coefficients are made on
first use. The walk over the variable-length combinations is one Python step per
combination (reading its count as a word); the terms are gathered in bulk.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from .binfile import BinFile, read_binfile
from .curves import curve_from_r, n8_of
from .words import first_not_below

MAGIC = b"r1cs"
HEADER, CONSTRAINTS, WIRE2LABEL, CUSTOM_GATES_LIST, CUSTOM_GATES_USES = 1, 2, 3, 4, 5


@dataclass(eq=False)
class SparseMatrix:
    """Entries (row, col, coeff) of one of A, B, C, in the file's order."""

    n8: int
    rows: np.ndarray         # uint32, constraint index
    cols: np.ndarray         # uint32, wire index
    coeff_words: np.ndarray  # (nnz, n8/4) uint32, standard form, little-endian words

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    @functools.cached_property
    def coeffs(self) -> list[int]:
        raw = self.coeff_words.tobytes()
        n8 = self.n8
        return [int.from_bytes(raw[i * n8:(i + 1) * n8], "little") for i in range(len(self))]

    def triples(self):
        """(row, col, coeff) as Python ints."""
        return zip(self.rows.tolist(), self.cols.tolist(), self.coeffs)

    def mul_vec(self, w, n_rows: int, p: int) -> list[int]:
        """M·w mod p with Python ints (the slow oracle)."""
        acc = [0] * n_rows
        for r, c, k in self.triples():
            acc[r] += k * w[c]
        return [a % p for a in acc]


@dataclass(eq=False)
class R1CS:
    path: str
    prime: int
    curve: str               # "bn254" | "bls12_381"
    n8: int
    n_wires: int
    n_pub_out: int
    n_pub_in: int
    n_prv_in: int
    n_labels: int
    n_constraints: int
    A: SparseMatrix
    B: SparseMatrix
    C: SparseMatrix
    wire_to_label: np.ndarray | None = field(default=None, repr=False)  # uint64 per wire
    has_custom_gates: bool = False

    @property
    def n_public(self) -> int:
        """Public signals (outputs then public inputs), not counting the constant wire."""
        return self.n_pub_out + self.n_pub_in

    def constraint(self, i: int):
        """Constraint i as three {wire: coeff} dicts (slow; for messages and tests)."""
        out = []
        for M in (self.A, self.B, self.C):
            sel = np.flatnonzero(M.rows == i)
            coeffs = M.coeffs
            out.append({int(M.cols[j]): coeffs[j] for j in sel})
        return tuple(out)

    def first_unsatisfied(self, witness) -> int | None:
        """Index of the first constraint that ``witness`` violates, or None.
        Python-int arithmetic: the oracle the fast provers are tested against."""
        w = list(witness)
        if len(w) != self.n_wires:
            raise ValueError(f"{self.path}: witness has {len(w)} values, the circuit {self.n_wires} wires")
        if w and w[0] != 1:
            return 0 if self.n_constraints else None
        p, n = self.prime, self.n_constraints
        a = self.A.mul_vec(w, n, p)
        b = self.B.mul_vec(w, n, p)
        c = self.C.mul_vec(w, n, p)
        return next((i for i in range(n) if (a[i] * b[i] - c[i]) % p), None)


def read_r1cs(path, *, load_map: bool = True) -> R1CS:
    f = read_binfile(path, MAGIC, max_version=1)
    hdr = f.reader(HEADER)
    n8 = hdr.u32("n8")
    if n8 == 0 or n8 % 8 or n8 > 64:
        raise f.error(f"header: invalid field size n8 = {n8}")
    prime = hdr.bigint(n8, "prime")
    curve = curve_from_r(prime)
    if curve is None:
        raise f.error(f"field prime {prime} is not the scalar field of bn254 or bls12_381 "
                      "(compile with --prime bn128 or --prime bls12381)")
    if n8 != n8_of(prime):
        raise f.error(f"header: n8 = {n8} does not fit the prime (expected {n8_of(prime)})")
    n_wires = hdr.u32("nWires")
    n_pub_out = hdr.u32("nPubOut")
    n_pub_in = hdr.u32("nPubIn")
    n_prv_in = hdr.u32("nPrvIn")
    n_labels = hdr.u64("nLabels")
    n_constraints = hdr.u32("nConstraints")
    hdr.done()
    if n_wires < 1 + n_pub_out + n_pub_in + n_prv_in:
        raise f.error(f"header: {n_wires} wires cannot hold the constant, {n_pub_out} outputs, "
                      f"{n_pub_in} public and {n_prv_in} private inputs")

    A, B, C = _read_constraints(f, n8, prime, n_wires, n_constraints)

    wire_to_label = None
    if load_map and f.has(WIRE2LABEL):
        raw = f.expect_size(WIRE2LABEL, 8 * n_wires, f"wire-to-label map of {n_wires} wires")
        wire_to_label = np.frombuffer(raw, dtype="<u8")
    return R1CS(f.name, prime, curve, n8, n_wires, n_pub_out, n_pub_in, n_prv_in, n_labels,
                n_constraints, A, B, C, wire_to_label,
                has_custom_gates=f.has(CUSTOM_GATES_LIST) or f.has(CUSTOM_GATES_USES))


def _read_constraints(f: BinFile, n8: int, prime: int, n_wires: int, n_constraints: int):
    payload = f.section(CONSTRAINTS)
    size = len(payload)
    tw = 1 + n8 // 4                            # words a term: wire, coefficient
    # every count and term starts on a 4-byte boundary (n8 is a multiple of 8): the walk
    # reads the counts as words and records where each combination's terms start
    whole = size - size % 4
    words = np.frombuffer(payload[:whole], dtype="<u4")
    u = memoryview(words.astype("=u4", copy=False)).cast("B").cast("I")
    n_words = len(u)
    # the word at which each combination (constraint c's A, B, C: number 3c + m) starts
    at = []
    append = at.append
    p = 0
    try:
        for _ in range(3 * n_constraints):
            append(p)
            p += 1 + u[p] * tw
    except IndexError:
        if p == n_words or len(at) < 2:         # the section ends where a count should be
            raise f.error(f"section {CONSTRAINTS} truncated in constraint {(len(at) - 1) // 3} "
                          f"(of {n_constraints}) at offset {4 * p}") from None
        at.pop()                                # the one before ran past the end
    if p > n_words:
        i = len(at) - 1
        raise f.error(f"section {CONSTRAINTS} truncated in constraint {i // 3} (of {n_constraints}): "
                      f"{'ABC'[i % 3]} has {u[at[i]]} terms, {size - 4 * (at[i] + 1)} bytes left")
    if 4 * p != size:
        raise f.error(f"section {CONSTRAINTS} has {size - 4 * p} unexpected trailing bytes "
                      f"after {n_constraints} constraints")
    at = np.asarray(at, dtype=np.int64).reshape(n_constraints, 3)
    lc_counts = words[at].astype(np.int64)

    mats = []
    for m in range(3):
        counts = lc_counts[:, m]
        rows = np.repeat(np.arange(n_constraints, dtype=np.uint32), counts)
        # term t of constraint c's combination starts at word at[c, m] + 1 + t·tw
        first = np.repeat(at[:, m] + 1 - tw * (np.cumsum(counts) - counts), counts)
        term_at = first + tw * np.arange(len(rows), dtype=np.int64)
        records = words[term_at[:, None] + np.arange(tw, dtype=np.int64)[None, :]]
        cols = np.ascontiguousarray(records[:, 0])
        coeff = np.ascontiguousarray(records[:, 1:])
        bad = np.flatnonzero(cols >= n_wires)
        if bad.size:
            j = int(bad[0])
            raise f.error(f"constraint {int(rows[j])}: {'ABC'[m]} refers to wire {int(cols[j])}, "
                          f"the circuit has {n_wires}")
        j = first_not_below(coeff, prime)
        if j is not None:
            raise f.error(f"constraint {int(rows[j])}: {'ABC'[m]} coefficient of wire "
                          f"{int(cols[j])} is not reduced modulo the prime")
        mats.append(SparseMatrix(n8, rows, cols, coeff))
    return mats


__all__ = ["R1CS", "SparseMatrix", "read_r1cs"]
