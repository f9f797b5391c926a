"""Poseidon over BN254's scalar field with circomlib's parameters, derived here.

circomlib (``poseidon.circom``, circomlibjs ``poseidon``) uses the Poseidon paper's reference
parameters: x^5 S-box, t = inputs + 1 (up to 17), R_F = 8 full rounds and R_P partial
rounds from ``PARTIAL_ROUNDS``. The round constants and the MDS matrix come from the
reference generator: a Grain LFSR (80-bit state seeded with field type 1, S-box 0, field
size 254, t, R_F, R_P and thirty 1 bits; 160 warm-up clocks; bits taken in pairs, the second
kept when the first is 1), whose 254-bit big-endian draws give the (R_F + R_P)·t round
constants (draws >= p rejected) and then 2t values x_0..x_(t-1), y_0..y_(t-1) for the Cauchy
matrix M[i][j] = 1/(x_i + y_j). The permutation: state = [0, inputs...]; each round adds its
constants, applies x^5 to every element (full rounds: the first and last R_F/2) or to
element 0 (partial rounds), and multiplies by M; the hash is state[0].

``poseidon`` is the Python-int hash; ``permutation_template`` the constraints of one
permutation (3 per S-box: x², x⁴, x⁵), instantiated per hash by ``circuit_hash``. Checked
against circomlibjs in tests/zkml (snarkjs-marked).
"""
from __future__ import annotations

import functools

import numpy as np

from .lc import P

PARTIAL_ROUNDS = [56, 57, 56, 60, 60, 63, 64, 63, 60, 66, 60, 65, 70, 60, 64, 68]   # t = 2..17
FULL_ROUNDS = 8
MAX_INPUTS = 16


class _Grain:
    """The Grain LFSR as a bit stream. The register is an int whose bit i is the sequence's
    i-th oldest bit; the feedback's nearest tap (bit 62) is 18 bits from the new bit's place
    (79), so 18 clocks are computed at once by shifting the whole register."""

    STEP = 18

    def __init__(self, t: int, rf: int, rp: int):
        bits = []
        for value, width in ((1, 2), (0, 4), (254, 12), (t, 12), (rf, 10), (rp, 10)):
            bits += [(value >> (width - 1 - i)) & 1 for i in range(width)]
        bits += [1] * 30
        self.s = sum(b << i for i, b in enumerate(bits))
        self._clocks(160)
        self.kept = np.zeros(0, np.uint8)       # the selected bits not yet drawn

    def _clocks(self, n: int) -> np.ndarray:
        """The next n output bits, oldest first."""
        s, chunks = self.s, []
        for k in [self.STEP] * (n // self.STEP) + ([n % self.STEP] if n % self.STEP else []):
            new = ((s >> 62) ^ (s >> 51) ^ (s >> 38) ^ (s >> 23) ^ (s >> 13) ^ s) & ((1 << k) - 1)
            s = (s >> k) | (new << (80 - k))
            chunks.append(new)
        self.s = s
        c = np.array(chunks, dtype=np.int64)
        return ((c[:, None] >> np.arange(self.STEP)) & 1).astype(np.uint8)[:, :self.STEP].reshape(-1)[:n]

    def draw(self, n: int = 254) -> int:
        """n selected bits as a big-endian integer: bits are clocked in pairs, and the second of
        a pair is kept when the first is 1."""
        while self.kept.size < n:
            raw = self._clocks(self.STEP * 2 * 256).reshape(-1, 2)
            self.kept = np.concatenate([self.kept, raw[raw[:, 0] == 1, 1]])
        bits, self.kept = self.kept[:n], self.kept[n:]
        pad = -n % 8
        return int.from_bytes(np.packbits(np.concatenate([np.zeros(pad, np.uint8), bits])).tobytes(), "big")


def params(t: int):
    """(round constants [(R_F + R_P)·t], MDS matrix t×t, R_F, R_P) for state width t."""
    if not 2 <= t <= MAX_INPUTS + 1:
        raise ValueError(f"circomlib's Poseidon takes 1 to {MAX_INPUTS} inputs (t = 2..17), got t = {t}")
    rf, rp = FULL_ROUNDS, PARTIAL_ROUNDS[t - 2]
    return _derive(t, rf, rp) + (rf, rp)


@functools.lru_cache(maxsize=None)
def _derive(t: int, rf: int, rp: int):
    """The reference generator's round constants and Cauchy MDS matrix (pure: memoised)."""
    g = _Grain(t, rf, rp)
    consts = []
    while len(consts) < (rf + rp) * t:
        v = g.draw()
        if v < P:
            consts.append(v)
    xy = [g.draw() % P for _ in range(2 * t)]
    x, y = xy[:t], xy[t:]
    M = [[pow((x[i] + y[j]) % P, P - 2, P) for j in range(t)] for i in range(t)]
    return tuple(consts), tuple(tuple(r) for r in M)


def poseidon(inputs) -> int:
    """circomlib's Poseidon hash of 1..16 field elements (Python ints)."""
    vals = [int(v) % P for v in inputs]
    t = len(vals) + 1
    C, M, rf, rp = params(t)
    s = [0] + vals
    for r in range(rf + rp):
        s = [(a + C[r * t + i]) % P for i, a in enumerate(s)]
        if r < rf // 2 or r >= rf // 2 + rp:
            s = [pow(a, 5, P) for a in s]
        else:
            s[0] = pow(s[0], 5, P)
        s = [sum(M[i][j] * s[j] for j in range(t)) % P for i in range(t)]
    return s[0]


@functools.lru_cache(maxsize=None)
def permutation_template(n_inputs: int):
    """The constraints of one hash of ``n_inputs`` values, over local wires: 0 = the constant 1,
    1..n = the inputs, then the S-box wires in order (x², x⁴, x⁵ per S-box); the last wire made is
    not the output: ``out_lc`` is state[0] after the last mix, an LC of the last round's x⁵ wires.

    Returns (rows, out_lc, n_local): rows is a list of (A, B, C) with each side a dict
    {local wire: coefficient in [0, p)}.

    The state is a (t, len(cols)) matrix of coefficients (Python ints) over the wires ``cols``
    its LCs can name: the constant, then the inputs or the last full round's x⁵ wires, then the
    partial rounds' x⁵ wires so far; a mix is one matrix product."""
    t = n_inputs + 1
    C, M, rf, rp = params(t)
    Mo = np.array(M, dtype=object)
    cols = list(range(t))                          # the constant 1, then the inputs
    S = np.zeros((t, t), dtype=object)
    for i in range(1, t):
        S[i, i] = 1
    nxt = 1 + n_inputs
    rows = []

    def lc(row, keep_const=False) -> dict:
        return {w: int(c) for w, c in zip(cols, row) if c or (keep_const and w == 0)}

    def sbox(row) -> int:
        nonlocal nxt
        a = lc(row, keep_const=True)               # the round constant's term stays, even if 0
        x2, x4, x5 = nxt, nxt + 1, nxt + 2
        nxt += 3
        rows.append((a, a, {x2: 1}))
        rows.append(({x2: 1}, {x2: 1}, {x4: 1}))
        rows.append(({x4: 1}, a, {x5: 1}))
        return x5

    for r in range(rf + rp):
        S[:, 0] = (S[:, 0] + np.array(C[r * t:(r + 1) * t], dtype=object)) % P
        if r < rf // 2 or r >= rf // 2 + rp:
            cols = [0] + [sbox(S[i]) for i in range(t)]
            S = np.zeros((t, t + 1), dtype=object)
            for i in range(t):
                S[i, 1 + i] = 1
        else:
            cols.append(sbox(S[0]))
            S = np.concatenate([S, np.zeros((t, 1), dtype=object)], 1)
            S[0] = 0
            S[0, -1] = 1
        S = Mo.dot(S) % P
    return rows, lc(S[0]), nxt


@functools.lru_cache(maxsize=None)
def template_arrays(n_inputs: int):
    """The template's rows as padded arrays per side: (local wire ids (R, K), coefficient words
    (R, K, 8)), plus the output LC's (ids, words). Cached: every hash of a circuit shares them
    (read-only)."""
    from .lc import ints_to_words
    rows, out, n_local = permutation_template(n_inputs)
    sides = []
    for m in range(3):
        K = max(len(r[m]) for r in rows)
        ids = np.zeros((len(rows), K), np.int64)
        coef = [[0] * K for _ in rows]
        for i, r in enumerate(rows):
            for k, (w, c) in enumerate(sorted(r[m].items())):
                ids[i, k] = w
                coef[i][k] = c
        words = ints_to_words([c for row in coef for c in row]).reshape(len(rows), K, 8)
        sides.append((ids, words))
    out_ids = np.array(sorted(out), np.int64)
    out_words = ints_to_words([out[w] for w in sorted(out)])
    return sides, (out_ids, out_words), n_local


@functools.lru_cache(maxsize=None)
def _object_params(t: int):
    """The round constants (rounds, t) and MDS matrix as numpy object arrays of Python ints."""
    C, M, rf, rp = params(t)
    return np.array(C, dtype=object).reshape(rf + rp, t), np.array(M, dtype=object), rf, rp


def sbox_values(inputs) -> list[int]:
    """The values of a hash's S-box wires (x², x⁴, x⁵ per S-box, in template order) and the hash
    (``poseidon``'s arithmetic, the mix as one object-array product)."""
    vals = [int(v) % P for v in inputs]
    t = len(vals) + 1
    C, M, rf, rp = _object_params(t)
    s = np.array([0] + vals, dtype=object)
    wires = []

    def sb(a):
        a2 = a * a % P
        a4 = a2 * a2 % P
        a5 = a4 * a % P
        wires.extend((a2, a4, a5))
        return a5
    for r in range(rf + rp):
        s = (s + C[r]) % P
        if r < rf // 2 or r >= rf // 2 + rp:
            s = np.array([sb(a) for a in s], dtype=object)
        else:
            s[0] = sb(s[0])
        s = M.dot(s) % P
    return wires, int(s[0])
