"""Linear combinations of wires, as tensors, and the constraint system they build.

A tensor of the circuit is a tensor of linear combinations: ``LC.idx`` (``(*shape, K)``
int64 wire ids) and ``LC.coef`` (the same shape, int64 signed coefficients); wire 0
is the constant 1. A Linear layer with fixed weights is then pure coefficient
arithmetic on its input's LCs and costs no constraint.

``System`` hands out wires in blocks and records constraints in blocks: each block is
``n`` constraints A·w ∘ B·w = C·w whose three sides are LC tensors of shape ``(n, K)``,
with int64 coefficients, or with coefficients already given as field words
(``(n, K, 8)`` uint32, standard form: the Poseidon constants, the packing powers).
Each block has a name (``"fc1 rescale: remainder bits"``), so a failing constraint
can be named. ``System.matrices`` turns the blocks into the sorted COO triples
(row, wire, coefficient words) of the iden3 ``.r1cs``, with duplicates merged.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

P = 21888242871839275222246405745257275088548364400416034343698204186575808495617
"""BN254's scalar field: circom's default prime, snarkjs's bn128."""
N8 = 32
_P_WORDS = np.array([(P >> (32 * i)) & 0xFFFFFFFF for i in range(8)], dtype=np.uint32)
INT_LIMIT = 1 << 62
"""Every integer the witness and the bounds compute with stays below this (int64 arithmetic,
exact); it is also far below p/2, so a value in range never wraps modulo p."""
_P_LOW64 = np.uint64(P & (2**64 - 1))
assert int(_P_LOW64) >= INT_LIMIT       # signed_to_words' borrow-free p - |v|


def signed_to_words(v) -> np.ndarray:
    """int64 values -> (n, 8) uint32 standard-form words of v mod p (negative v as p - |v|).

    |v| < 2^62 is below p's low 64 bits, so p - |v| borrows nothing from word 2 upwards: its
    words 2..7 are p's and its low 64 bits p mod 2^64 - |v| (uint64 arithmetic)."""
    v = np.asarray(v, dtype=np.int64).reshape(-1)
    if v.size and (int(v.max()) >= INT_LIMIT or int(v.min()) <= -INT_LIMIT):
        raise OverflowError("a value reaches 2^62, beyond the exact int64 arithmetic")
    neg = v < 0
    m = np.abs(v).view(np.uint64)
    low = np.where(neg, _P_LOW64 - m, m)
    out = np.zeros((v.size, 8), dtype=np.uint32)
    out[:, 0] = low & np.uint64(0xFFFFFFFF)
    out[:, 1] = low >> np.uint64(32)
    out[neg, 2:] = _P_WORDS[2:]
    return out


def ints_to_words(values) -> np.ndarray:
    """Python ints in [0, p) -> (n, 8) uint32 words."""
    raw = b"".join(int(x).to_bytes(N8, "little") for x in values)
    return np.frombuffer(raw, dtype="<u4").reshape(-1, 8).copy()


def words_to_ints(words: np.ndarray) -> list[int]:
    raw = np.ascontiguousarray(words, dtype="<u4").tobytes()
    return [int.from_bytes(raw[i:i + N8], "little") for i in range(0, len(raw), N8)]


@dataclass
class LC:
    """A tensor of linear combinations: element e is sum_k coef[e, k] * w[idx[e, k]]."""
    idx: torch.Tensor
    coef: torch.Tensor

    @property
    def shape(self) -> tuple:
        return tuple(self.idx.shape[:-1])

    @property
    def K(self) -> int:
        return self.idx.shape[-1]

    @staticmethod
    def wires(ids: torch.Tensor) -> "LC":
        return LC(ids.unsqueeze(-1).to(torch.int64), torch.ones(*ids.shape, 1, dtype=torch.int64))

    @staticmethod
    def const(values: torch.Tensor) -> "LC":
        v = values.to(torch.int64)
        return LC(torch.zeros(*v.shape, 1, dtype=torch.int64), v.unsqueeze(-1))

    @staticmethod
    def zero(shape) -> "LC":
        return LC(torch.zeros(*shape, 0, dtype=torch.int64), torch.zeros(*shape, 0, dtype=torch.int64))

    def __add__(self, other: "LC") -> "LC":
        a, b = _broadcast(self, other)
        return LC(torch.cat([a.idx, b.idx], -1), torch.cat([a.coef, b.coef], -1))

    def __neg__(self) -> "LC":
        return LC(self.idx, -self.coef)

    def __sub__(self, other: "LC") -> "LC":
        return self + (-other)

    def scale(self, k) -> "LC":
        """Multiply by an int or an int64 tensor broadcast over the elements."""
        k = torch.as_tensor(k, dtype=torch.int64)
        return LC(self.idx, self.coef * (k.unsqueeze(-1) if k.dim() else k))

    def reshape(self, *shape) -> "LC":
        return LC(self.idx.reshape(*shape, self.K), self.coef.reshape(*shape, self.K))

    def flat(self) -> "LC":
        return self.reshape(-1)

    def __getitem__(self, i) -> "LC":
        return LC(self.idx[i], self.coef[i])

    def permute(self, *dims) -> "LC":
        return LC(self.idx.permute(*dims, len(dims)), self.coef.permute(*dims, len(dims)))

    def compact(self) -> "LC":
        """Drop the terms whose coefficient is zero in every element (padding of convolutions)."""
        keep = (self.coef != 0).reshape(-1, self.K).any(0)
        if bool(keep.all()):
            return self
        return LC(self.idx[..., keep], self.coef[..., keep])

    def evaluate(self, w: torch.Tensor) -> torch.Tensor:
        """Values from int64 wire values w (B, n_wires): (B, *shape). The slow path, for checks."""
        return (w[:, self.idx] * self.coef).sum(-1)


def _broadcast(a: LC, b: LC):
    shape = torch.broadcast_shapes(a.shape, b.shape)
    def ex(x: LC) -> LC:
        return LC(x.idx.expand(*shape, x.K), x.coef.expand(*shape, x.K))
    return ex(a), ex(b)


ONE = LC(torch.zeros(1, dtype=torch.int64), torch.ones(1, dtype=torch.int64))  # the constant 1


@dataclass
class Side:
    """One side (A, B or C) of a block of constraints: (n, K) wires and coefficients; coefficients
    are int64, or field words (n, K, 8) when ``words`` is set."""
    idx: np.ndarray
    coef: np.ndarray | None = None
    words: np.ndarray | None = None


@dataclass
class Block:
    name: str
    start: int
    n: int
    sides: tuple  # (A, B, C) Sides


@dataclass
class WireBlock:
    name: str
    start: int
    n: int
    kind: str  # "internal" | "output" | "public_input" | "private_input"


@dataclass
class System:
    """Wires and constraints as they are made (wire ids in creation order; ``order`` maps them
    to the iden3 layout at the end)."""
    n_wires: int = 1
    n_constraints: int = 0
    wire_blocks: list = field(default_factory=list)
    blocks: list = field(default_factory=list)

    def wires(self, shape, name: str, kind: str = "internal") -> torch.Tensor:
        n = int(np.prod(shape)) if len(shape) else 1
        start = self.n_wires
        self.n_wires += n
        self.wire_blocks.append(WireBlock(name, start, n, kind))
        return torch.arange(start, start + n, dtype=torch.int64).reshape(shape)

    def add(self, name: str, A, B=None, C=None) -> None:
        """n constraints A ∘ B = C; sides are LCs of one shape (flattened), or Sides; B None is
        the constant 1, C None is 0."""
        sides = []
        n = None
        for s in (A, B, C):
            if isinstance(s, LC):
                s = Side(s.idx.reshape(-1, s.K).numpy(), s.coef.reshape(-1, s.K).numpy())
            sides.append(s)
            if s is not None:
                n = s.idx.shape[0] if n is None else n
                if s.idx.shape[0] != n:
                    raise ValueError(f"{name}: sides of {s.idx.shape[0]} and {n} constraints")
        if sides[1] is None:
            sides[1] = Side(np.zeros((n, 1), np.int64), np.ones((n, 1), np.int64))
        if n == 0:
            return
        self.blocks.append(Block(name, self.n_constraints, n, tuple(sides)))
        self.n_constraints += n

    def name_of(self, row: int) -> str:
        """The block that holds constraint ``row`` (creation order), and the row within it."""
        for b in self.blocks:
            if b.start <= row < b.start + b.n:
                return f"{b.name} (row {row - b.start} of {b.n})"
        return "?"

    def order(self) -> np.ndarray:
        """Old wire ids in the iden3 order: the constant, public outputs, public inputs, private
        inputs, then every other wire in creation order."""
        parts = [np.zeros(1, np.int64)]
        for kind in ("output", "public_input", "private_input", "internal"):
            for b in self.wire_blocks:
                if b.kind == kind:
                    parts.append(np.arange(b.start, b.start + b.n, dtype=np.int64))
        return np.concatenate(parts)

    def counts(self) -> dict:
        c = {k: 0 for k in ("output", "public_input", "private_input", "internal")}
        for b in self.wire_blocks:
            c[b.kind] += b.n
        return c

    def matrices(self, new_id: np.ndarray):
        """For A, B, C: (rows uint32, cols uint32, words (nnz, 8) uint32), sorted by row then wire
        (new ids), duplicate wires in a row merged, zero coefficients dropped."""
        out = []
        for m in range(3):
            rows_l, cols_l, words_l = [], [], []
            for b in self.blocks:
                s = b.sides[m]
                if s is None or s.idx.shape[1] == 0:
                    continue
                n, K = s.idx.shape
                rows = np.repeat(np.arange(b.start, b.start + n, dtype=np.int64), K)
                cols = new_id[s.idx.reshape(-1)]
                if s.words is None:
                    coef = s.coef.reshape(-1)
                    key = rows * (1 << 32) + cols
                    order = np.argsort(key, kind="stable")
                    key, coef = key[order], coef[order]
                    first = np.ones(key.size, bool)
                    first[1:] = key[1:] != key[:-1]
                    starts = np.flatnonzero(first)
                    summed = np.add.reduceat(coef, starts) if key.size else coef
                    key = key[starts]
                    nz = summed != 0
                    rows_l.append((key[nz] >> 32).astype(np.uint32))
                    cols_l.append((key[nz] & 0xFFFFFFFF).astype(np.uint32))
                    words_l.append(signed_to_words(summed[nz]))
                else:
                    words = s.words.reshape(-1, 8)
                    nz = words.any(1)
                    key = rows[nz] * (1 << 32) + cols[nz]
                    order = np.argsort(key)
                    key = key[order]
                    if np.any(key[1:] == key[:-1]):
                        raise ValueError(f"{b.name}: a wire appears twice in one word-coefficient row")
                    rows_l.append((key >> 32).astype(np.uint32))
                    cols_l.append((key & 0xFFFFFFFF).astype(np.uint32))
                    words_l.append(words[nz][order])
            if rows_l:
                out.append((np.concatenate(rows_l), np.concatenate(cols_l), np.concatenate(words_l)))
            else:
                out.append((np.zeros(0, np.uint32), np.zeros(0, np.uint32), np.zeros((0, 8), np.uint32)))
        return out
