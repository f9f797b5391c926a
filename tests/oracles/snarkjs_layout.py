"""How snarkjs lays out G1/G2 points in a .zkey, as an oracle for our readers/writers.

What snarkjs does (read from the sources, iden3/snarkjs and iden3/ffjavascript,
iden3/wasmcurves):

* ``zkey_utils.js`` writes a point with ``curve.G1.toRprLEM(buff, 0, p)`` into a
  buffer of ``curve.G1.F.n8 * 2`` bytes (G2 likewise with ``curve.G2``), and reads
  it back with ``fromRprLEM``.
* ``WasmCurve.toRprLEM`` (ffjavascript ``wasm_curve.js``) converts a Jacobian
  point to affine (``<prefix>_toAffine``) and copies the wasm memory bytes out
  unchanged; ``fromRprLEM`` copies ``n8 * 2`` bytes back in unchanged. So the
  file holds the wasm in-memory affine representation.
* That representation (wasmcurves ``build_f1m.js`` / ``build_f2m.js`` /
  ``build_curve_jacobian_a0.js``) is: x then y; each base-field element in
  Montgomery form x·R mod q with R = 2^(8·n8), written as n8 little-endian
  bytes (n8 = 8·ceil(bits/64): 32 for BN254's Fq, 48 for BLS12-381's); an Fq2
  element as c0 then c1 (c0 + c1·u), each n8 bytes.
* The identity: ``_toAffine`` of a point at infinity writes x = 0 and y = 0, and
  ``_isZeroAffine`` tests x == 0 and y == 0. So infinity is all-zero bytes. No
  valid affine point has x = y = 0 on these curves (b != 0), so this is unambiguous.

Not covered here, but for the record (same sources): the .wtns witness values
and the .zkey header's q and r are plain (non-Montgomery) little-endian
integers; the .zkey coefficient section (section 4) stores each coefficient as
c·R^2 mod r ("writeFr2": Montgomery form of the Montgomery form).

These functions are plain Python ints and bytes, independent of the library.
"""
from __future__ import annotations


def word_bytes(p: int) -> int:
    """n8: bytes per field element in snarkjs/ffjavascript, 8 · ceil(bits(p) / 64)."""
    return 8 * -(-p.bit_length() // 64)


def montgomery_r(p: int) -> int:
    """R = 2^(8·n8) mod p, the Montgomery radix of ffjavascript's wasm fields."""
    return pow(2, 8 * word_bytes(p), p)


def fq_to_lem(x: int, p: int) -> bytes:
    """One base-field element: x·R mod p, n8 bytes little-endian."""
    if not 0 <= x < p:
        raise ValueError(f"field element {x} out of range [0, p)")
    return (x * montgomery_r(p) % p).to_bytes(word_bytes(p), "little")


def fq_from_lem(data: bytes, p: int) -> int:
    """The inverse of ``fq_to_lem``; refuses a word that is not < p."""
    n8 = word_bytes(p)
    if len(data) != n8:
        raise ValueError(f"expected {n8} bytes for a field element, got {len(data)}")
    m = int.from_bytes(data, "little")
    if m >= p:
        raise ValueError(f"Montgomery word {m:#x} is not reduced mod p")
    return m * pow(montgomery_r(p), -1, p) % p


def point_size(G) -> int:
    """Bytes per affine point: 2 coordinates × degree × n8."""
    return 2 * G.degree * word_bytes(G.p)


def _coords(G, P):
    """The base-field words of an affine point, in file order."""
    x, y = P
    return [x, y] if G.degree == 1 else [x[0], x[1], y[0], y[1]]


def point_to_lem(G, P) -> bytes:
    """The bytes snarkjs's ``toRprLEM`` writes for the affine point P (None: all zeros)."""
    if P is None:
        return bytes(point_size(G))
    return b"".join(fq_to_lem(c, G.p) for c in _coords(G, P))


def point_from_lem(G, data: bytes):
    """The affine point (or None) that ``fromRprLEM`` + ``toObject`` would give for these bytes."""
    size = point_size(G)
    if len(data) != size:
        raise ValueError(f"{G.name}: expected {size} bytes for a point, got {len(data)}")
    if not any(data):
        return None
    n8 = word_bytes(G.p)
    w = [fq_from_lem(data[i:i + n8], G.p) for i in range(0, size, n8)]
    return (w[0], w[1]) if G.degree == 1 else ((w[0], w[1]), (w[2], w[3]))


def points_to_lem(G, points) -> bytes:
    """A section of consecutive points, as snarkjs writes the A/B1/B2/C/H arrays."""
    return b"".join(point_to_lem(G, P) for P in points)


def points_from_lem(G, data: bytes) -> list:
    size = point_size(G)
    if len(data) % size:
        raise ValueError(f"{G.name}: {len(data)} bytes is not a whole number of {size}-byte points")
    return [point_from_lem(G, data[i:i + size]) for i in range(0, len(data), size)]
