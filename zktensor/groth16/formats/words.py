"""Little-endian multi-word integers held in numpy arrays, checked without Python loops.

A file's field elements are rows of n8/4 uint32 words (word 0 least significant).
Checking that every element is < p is done on whole columns of words, so a
million-element witness or section is validated in milliseconds.
"""
from __future__ import annotations

import numpy as np


def as_words(buf, n8: int) -> np.ndarray:
    """A read-only (count, n8/4) uint32 view of a bytes-like object."""
    a = np.frombuffer(buf, dtype="<u4")
    return a.reshape(-1, n8 // 4)


def int_words(value: int, n_words: int) -> list[int]:
    return [(value >> (32 * i)) & 0xFFFFFFFF for i in range(n_words)]


def first_not_below(words: np.ndarray, bound: int) -> int | None:
    """Index of the first row whose value is >= bound, or None if all are below it."""
    if words.shape[0] == 0:
        return None
    b = int_words(bound, words.shape[1])
    # Compare from the most significant word down: a row is decided at the first
    # word where it differs from the bound.
    lt = np.zeros(words.shape[0], dtype=bool)
    undecided = np.ones(words.shape[0], dtype=bool)
    for j in range(words.shape[1] - 1, -1, -1):
        col = words[:, j]
        lt |= undecided & (col < b[j])
        undecided &= col == b[j]
    bad = np.flatnonzero(~lt)  # equal rows (still undecided) are not below the bound
    return int(bad[0]) if bad.size else None


def to_ints(buf, n8: int, count: int | None = None) -> list[int]:
    """Python ints from consecutive n8-byte little-endian words."""
    mv = memoryview(buf).cast("B")
    n = len(mv) // n8 if count is None else count
    return [int.from_bytes(mv[i * n8:(i + 1) * n8], "little") for i in range(n)]


def from_ints(values, n8: int) -> bytes:
    return b"".join(v.to_bytes(n8, "little") for v in values)
