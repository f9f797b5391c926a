"""A new key's tables for the prover without torch, made without torch.

    entry = build(read_zkey("circuit.zkey"), digest)   # its table cache entry; FormatError naming the key

`numpy_prover` proves over a key's point-major rows mapped from the table cache
(`table_cache.load_host`). Those rows are the key's points as the .zkey holds them
(snarkjs writes affine coordinates in Montgomery form with R = 2^(8·n8), which is ours;
all-zero words are the identity in both), the generator after them, then all of them
again with y negated: the first 2·(n + 1) rows of the tensor prover's plain table
(`ops.msm.bases._weighted_table` with one checkpoint; its bucket offsets, which the
lanes loop never reads, are left out). So they are made here from the file's bytes with
numpy (a copy, y's negation by the compiled field program, the generator's words), and
the key is validated over them (`key_check.validate_zkey(rows=...)`: the header on Python
ints, every point on its curve, random combinations for the subgroups), with the stamp
that the tensor prover's validation gives. The first proof with a key then costs a
read of it and these checks, not ``import torch`` and the tensor prover's tables.

Tables: B2, H and the witness sections a, b1 and c apart (c after nPublic + 1
identities, so that it takes the whole witness as scalars, as `key.AfterIdentities`).
The entry's specs name this layout (``"rows": "plain"``) where the tensor prover's name
an MSM config and a checkpoint: it never maps this entry, and makes its own.
"""
from __future__ import annotations

import numpy as np

from ..algebra.curves import group
from ..kernels.field_programs import OPS, run_host
from ..kernels.host_words import affine_table
from . import table_cache
from .formats.zkey import ZKey
from .key_check import KEY_CHECK_STAMP, validate_zkey

KIND = "PlainRows"
SECTIONS = {"a": ("A", "g1"), "b1": ("B1", "g1"), "c": ("C", "g1"), "B2": ("B2", "g2"), "H": ("H", "g1")}
"""table: (the .zkey's section, its group)."""


def plain_rows(G, raw, identities: int = 0) -> np.ndarray:
    """(2·(n + 1), 2d·L) int32 rows of `identities` identities and the points of a section's
    raw bytes (snarkjs's layout: x's d coordinates then y's, Montgomery words), then the
    generator, then the same n + 1 points negated. G: the group's record."""
    d, L = G.degree, G.fq.limbs32
    words = np.frombuffer(raw, dtype="<u4").view(np.int32).reshape(-1, 2 * d * L)
    n = identities + len(words)
    rows = np.zeros((2 * (n + 1), 2 * d * L), dtype=np.int32)
    rows[identities:n] = words
    rows[n] = affine_table(G, [G.generator])[0][0]
    rows[n + 1:] = rows[:n + 1]
    neg = OPS["neg"]
    for j in range(d, 2 * d):                     # y's coordinates: -0 is 0, so identities stay
        col = slice(j * L, (j + 1) * L)
        y = np.ascontiguousarray(rows[:n + 1, col].T)
        (ny,) = run_host(G.fq, "neg", neg[0], neg[1], [y])
        rows[n + 1:, col] = ny.T
    return rows


def tables_of(z: ZKey) -> dict:
    """{table: (its group's record, rows, first point of the section, bases n)} of a key
    (None for an empty table)."""
    k = z.n_public + 1
    out = {}
    for name, (sec, which) in SECTIONS.items():
        G = group(f"{z.curve}.{which}")
        ids = k if name == "c" else 0
        n = ids + len(getattr(z, sec))
        out[name] = (G, plain_rows(G, getattr(z, sec).raw, ids), ids, n) if n else None
    return out


def build(z: ZKey, digest: str):
    """Validate the key `z` (read with its coordinates checked) and store its plain rows in
    the table cache as the entry of the content `digest` (module doc): the entry's path.
    FormatError (naming the key) for a key unfit to prove with."""
    done = table_cache.announce_build(z.path)
    tables = tables_of(z)
    stamp = validate_zkey(z, rows={SECTIONS[name][0]: (t[1], t[3] + 1, t[2]) for name, t in tables.items()
                                   if t is not None})
    assert stamp == KEY_CHECK_STAMP
    specs = {name: {"group": t[0].name if t else group(f"{z.curve}.{SECTIONS[name][1]}").name,
                    "sizes": [t[3] if t else 0], "rows": "plain"} for name, t in tables.items()}
    parts = {name: None if t is None else ({"__kind__": KIND, "n": t[3], "J": 1}, {"rows": t[1]})
             for name, t in tables.items()}
    entry = table_cache.store_arrays(digest, specs, parts, "cpu", {"zkey_check": stamp}, target="cpu")
    done()
    return entry


__all__ = ["build", "plain_rows", "tables_of", "KIND"]
