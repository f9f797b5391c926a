"""circom's ``.wtns``: the full assignment w of a circuit's wires.

Container magic ``wtns``, version 2 (snarkjs reads versions up to 2 with the same
layout). Sections:

1. header: n8 u32, prime (n8 bytes), nWitness u32
2. values: nWitness × n8 bytes, little-endian, standard form (not Montgomery)

w[0] is 1; w[1 .. nPublic] are the public signals.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from .binfile import read_binfile, write_binfile
from .curves import curve_from_r, n8_of
from .words import as_words, first_not_below, from_ints, to_ints

MAGIC = b"wtns"
VERSION = 2
HEADER, VALUES = 1, 2


@dataclass(eq=False)
class Wtns:
    """A witness: a sequence of Python ints, with the raw words kept for fast loaders."""

    path: str
    prime: int
    curve: str | None  # None when the prime is not one zktensor proves over
    n8: int
    raw: memoryview = field(repr=False)  # section 2 as stored

    def __len__(self) -> int:
        return len(self.raw) // self.n8

    @functools.cached_property
    def values(self) -> list[int]:
        return to_ints(self.raw, self.n8)

    def __getitem__(self, i):
        return self.values[i]

    def __iter__(self):
        return iter(self.values)

    @property
    def words(self) -> np.ndarray:
        """(n, n8/4) uint32 little-endian words, standard form; no copy."""
        return as_words(self.raw, self.n8)


def read_wtns(path, *, prime: int | None = None) -> Wtns:
    """Read a witness; with ``prime``, a witness for another field raises FormatError."""
    f = read_binfile(path, MAGIC, max_version=VERSION)
    hdr = f.reader(HEADER)
    n8 = hdr.u32("n8")
    if n8 == 0 or n8 % 8 or n8 > 64:
        raise f.error(f"header: invalid field size n8 = {n8}")
    q = hdr.bigint(n8, "prime")
    n = hdr.u32("nWitness")
    hdr.done()
    if q < 2 or n8 != n8_of(q):
        raise f.error(f"header: n8 = {n8} does not fit the prime {q}")
    if prime is not None and q != prime:
        raise f.error(f"witness is over the prime {q}, expected {prime}")
    raw = f.expect_size(VALUES, n * n8, f"{n} values of {n8} bytes")
    bad = first_not_below(as_words(raw, n8), q)
    if bad is not None:
        raise f.error(f"value {bad} is not reduced modulo the prime")
    return Wtns(f.name, q, curve_from_r(q), n8, raw)


def write_wtns(path, values, prime: int) -> None:
    """Write a witness as snarkjs does (atomically). Values must lie in [0, prime)."""
    values = list(values)
    bad = next((i for i, v in enumerate(values) if not 0 <= v < prime), None)
    if bad is not None:
        raise ValueError(f"{path}: witness value {bad} is not in [0, prime)")
    n8 = n8_of(prime)
    header = n8.to_bytes(4, "little") + prime.to_bytes(n8, "little") + len(values).to_bytes(4, "little")
    write_binfile(path, MAGIC, VERSION, [(HEADER, header), (VALUES, from_ints(values, n8))])
