"""Do these files belong together? Checks before proving, with both files named.

snarkjs's prover refuses a witness for another curve or with another length
than the key's nVars; these checks say so before any work is done, and also
match a ``.r1cs`` against a key (same curve, wires, public count, a domain
that holds the constraints plus snarkjs's public-input rows, and the key's
coefficient section equal to the .r1cs's A and B).
"""
from __future__ import annotations

import os

import numpy as np

from .errors import FormatError, WitnessError
from .r1cs import R1CS
from .wtns import Wtns, read_wtns
from .zkey import ZKey


def witness_words(zkey: ZKey, witness) -> tuple[np.ndarray, str]:
    """(n_vars, L) standard-form uint32 words of a witness given as a .wtns path, a Wtns or a
    sequence of ints, and what to call it in errors; checked against the key (field, length,
    w[0] = 1)."""
    r, L = zkey.r, zkey.n8r // 4
    if isinstance(witness, (str, bytes, os.PathLike)):
        witness = read_wtns(witness)
    if isinstance(witness, Wtns):
        check_witness_for_zkey(zkey, witness)
        words, where = np.asarray(witness.words), witness.path or "witness"
        if witness.n8 != 4 * L:
            raise FormatError(f"{witness.path}: {witness.n8}-byte values, expected {4 * L}")
    else:
        vals = list(witness)
        if len(vals) != zkey.n_vars:
            raise WitnessError(f"the witness has {len(vals)} values, the key's circuit {zkey.n_vars} wires")
        for i, v in enumerate(vals):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= int(v) < r:
                raise WitnessError(f"witness value {i} is not an integer in [0, r)")
        raw = b"".join(int(v).to_bytes(4 * L, "little") for v in vals)
        words, where = np.frombuffer(raw, dtype="<u4").reshape(-1, L), "witness"
    one = np.zeros(L, dtype=np.uint32)
    one[0] = 1
    if not np.array_equal(words[0], one):
        raise WitnessError(f"{where}: w[0] must be 1 (the constant wire), got "
                           f"{int.from_bytes(words[0].astype('<u4').tobytes(), 'little')}")
    return words, where


def _names(a, b) -> str:
    return f"{getattr(a, 'path', None) or type(a).__name__} and {getattr(b, 'path', None) or type(b).__name__}"


def check_witness_for_zkey(zkey: ZKey, wtns: Wtns) -> None:
    if wtns.prime != zkey.r:
        raise FormatError(f"{_names(wtns, zkey)} do not match: the witness is over the prime "
                          f"{wtns.prime}, the key is for {zkey.curve} (r = {zkey.r})")
    if len(wtns) != zkey.n_vars:
        raise FormatError(f"{_names(wtns, zkey)} do not match: the witness has {len(wtns)} values, "
                          f"the key's circuit {zkey.n_vars} wires")


def check_r1cs_for_zkey(zkey: ZKey, r1cs: R1CS) -> None:
    problems = []
    if r1cs.curve != zkey.curve:
        problems.append(f"curve {r1cs.curve} vs {zkey.curve}")
    if r1cs.n_wires != zkey.n_vars:
        problems.append(f"{r1cs.n_wires} wires vs nVars = {zkey.n_vars}")
    if r1cs.n_public != zkey.n_public:
        problems.append(f"{r1cs.n_public} public signals vs nPublic = {zkey.n_public}")
    if r1cs.n_constraints + r1cs.n_public + 1 > zkey.domain_size:
        problems.append(f"{r1cs.n_constraints} constraints + {r1cs.n_public + 1} public rows "
                        f"do not fit domainSize = {zkey.domain_size}")
    if problems:
        raise FormatError(f"{_names(r1cs, zkey)} do not match: {'; '.join(problems)}")
    check_r1cs_coefs(zkey, r1cs)


def check_r1cs_coefs(zkey: ZKey, r1cs: R1CS) -> None:
    """The key's coefficient section (section 4) is the .r1cs's A and B plus snarkjs's
    public-input rows A[nConstraints + i][i] = 1, entry for entry (in any order), so a
    stale or foreign .r1cs is refused by name instead of passing a witness the key's
    circuit does not accept."""
    cs = zkey.coefs
    n_pub, nc = zkey.n_public, r1cs.n_constraints
    stale = f"{getattr(r1cs, 'path', None) or 'the .r1cs'} is not the circuit of " \
            f"{getattr(zkey, 'path', None) or 'the key'} (a stale or different .r1cs?)"
    exp_m = np.concatenate([np.zeros(len(r1cs.A), np.uint32), np.ones(len(r1cs.B), np.uint32),
                            np.zeros(n_pub + 1, np.uint32)])
    exp_row = np.concatenate([r1cs.A.rows, r1cs.B.rows, nc + np.arange(n_pub + 1, dtype=np.uint32)]
                             ).astype(np.uint32)
    exp_col = np.concatenate([r1cs.A.cols, r1cs.B.cols, np.arange(n_pub + 1, dtype=np.uint32)]
                             ).astype(np.uint32)
    if len(exp_m) != len(cs):
        raise FormatError(f"{stale}: the key holds {len(cs)} entries of A and B, the .r1cs "
                          f"{len(exp_m)}")
    key_m, key_row, key_col = (np.asarray(a, dtype=np.uint32) for a in (cs.matrix, cs.constraint, cs.signal))
    eo, ko = _entry_order(exp_m, exp_row, exp_col), _entry_order(key_m, key_row, key_col)
    for e, k in ((exp_m, key_m), (exp_row, key_row), (exp_col, key_col)):
        diff = np.flatnonzero(e[eo] != k[ko])
        if diff.size:
            j = int(diff[0])
            raise FormatError(f"{stale}: the key's {'AB'[int(key_m[ko[j]]) & 1]} matrix has an entry "
                              f"at constraint {int(key_row[ko[j]])}, wire {int(key_col[ko[j]])} where "
                              f"the .r1cs has constraint {int(exp_row[eo[j]])}, wire {int(exp_col[eo[j]])}")
    # values: the .r1cs's c (standard form) against the key's stored c·R^2 mod r, on Python
    # ints once per distinct coefficient (circuits repeat a few: 1, -1, powers of two)
    r, n8 = cs.r, cs.n8r
    R2 = cs.R * cs.R % r
    std = np.ascontiguousarray(np.concatenate([r1cs.A.coeff_words, r1cs.B.coeff_words]).astype("<u4"))
    distinct, which = _distinct_rows(std)
    stored = b"".join((int.from_bytes(v.tobytes(), "little") * R2 % r).to_bytes(n8, "little") for v in distinct)
    stored = np.frombuffer(stored, dtype="<u4").reshape(-1, n8 // 4)
    ones = np.frombuffer((R2 % r).to_bytes(n8, "little"), dtype="<u4")
    exp_words = np.concatenate([stored[which], np.tile(ones, (n_pub + 1, 1))])[eo]
    key_words = np.asarray(cs.stored_words)[ko]
    bad = np.flatnonzero((exp_words != key_words).any(axis=1))
    if bad.size:
        j = int(bad[0])
        raise FormatError(f"{stale}: the coefficient of wire {int(key_col[ko[j]])} in constraint "
                          f"{int(key_row[ko[j]])} ({'AB'[int(key_m[ko[j]]) & 1]}) differs from the key's")


def _entry_order(m: np.ndarray, row: np.ndarray, col: np.ndarray) -> np.ndarray:
    """The stable order of entries by (matrix, row, column): one sort of 64-bit keys where
    the three fit (matrix 0 or 1, row and column below 2^31), else numpy's lexsort."""
    if len(m) and (m.max() > 1 or row.max() >> 31 or col.max() >> 31):
        return np.lexsort((col, row, m))
    key = (m.astype(np.uint64) << np.uint64(62)) | (row.astype(np.uint64) << np.uint64(31)) | col.astype(np.uint64)
    return np.argsort(key, kind="stable")


_MIX = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
                 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 0x94D049BB133111EB, 0xBF58476D1CE4E5B9],
                dtype=np.uint64)


def _distinct_rows(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct rows, for each row the index of its distinct row) of (n, k) uint32 words:
    rows grouped by a 64-bit mix of their words (one sort of integers, not numpy's unique
    over whole rows, which sorts by byte-wise compares), each group then checked equal to
    its first row; a collision falls back to that exact byte-wise unique."""
    n, k = words.shape
    if n == 0:
        return words[:0], np.zeros(0, dtype=np.int64)
    mix = np.tile(_MIX, -(-k // len(_MIX)))[:k]
    with np.errstate(over="ignore"):
        h = (words.astype(np.uint64) * mix).sum(axis=1, dtype=np.uint64)
    order = np.argsort(h, kind="stable")
    new = np.empty(n, dtype=bool)
    new[0] = True
    np.not_equal(h[order[1:]], h[order[:-1]], out=new[1:])
    which = np.empty(n, dtype=np.int64)
    which[order] = np.cumsum(new) - 1
    distinct = words[order[new]]
    if not (distinct[which] == words).all():
        distinct, which = np.unique(words.view(f"V{4 * k}").ravel(), return_inverse=True)
        distinct = distinct.view("<u4").reshape(-1, k)
    return distinct, which.ravel()
