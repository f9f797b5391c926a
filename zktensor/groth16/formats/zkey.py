"""snarkjs's Groth16 proving key, ``.zkey``: reader and writer.

Container magic ``zkey``, version 1. Sections (snarkjs ``zkey_utils.js``,
``zkey_new.js``), all integers little-endian:

1. protocol: u32, 1 = Groth16 (2 is PLONK, 10 FFLONK: refused)
2. Groth16 header: n8q u32, q, n8r u32, r, nVars u32, nPublic u32, domainSize u32,
   then the points alpha_1, beta_1 (G1), beta_2, gamma_2 (G2), delta_1 (G1), delta_2 (G2)
3. IC: nPublic+1 G1 points, the verifier's query for the constant and public wires
4. coefs: count u32, then count × (matrix u32 (0 = A, 1 = B), constraint u32,
   signal u32, value n8r bytes): the entries of A and B the prover needs to
   evaluate A·w and B·w (C·w is computed as A·w ∘ B·w). The last nPublic+1
   entries are snarkjs's extra A rows binding the public inputs:
   A[nConstraints + i][i] = 1.
5. A: nVars G1 points;  6. B1: nVars G1;  7. B2: nVars G2
8. C: nVars-nPublic-1 G1 points, for the private wires only
9. H: domainSize G1 points (snarkjs's coset form, see ARCHITECTURE.md "From `zktensor prove` to a kernel")
10. contributions (the MPC transcript): kept as raw bytes

Number forms, as snarkjs writes them (``points.py`` for the point layout):

* q and r in the header: standard form.
* point coordinates: Montgomery form x·R mod q, R = 2^(8·n8q); infinity = zeros.
* coefs' values: c·R^2 mod r with R = 2^(8·n8r) (snarkjs ``writeFr2`` and
  ``zkey_new.js``'s ``Fr.mul(n, R2r)``), i.e. the Montgomery form of c's Montgomery
  form: the prover multiplies them with a Montgomery product by the standard-form
  witness and gets c·w in Montgomery form. ``ZKey.coefs.values`` gives c.

Reading checks every size against the header, every coordinate and coefficient
for being reduced, the header and IC points for being on the curve; the large
point sections are decoded (and their points checked) only when asked for, so a
fast loader can take their bytes (``section.raw``, ``section.words``) directly.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .binfile import BinFile, encode_binfile, read_binfile, write_binfile
from .curves import CURVES, curve_from_q, n8_of, q_of, r_of
from .errors import FormatError
from .points import PointCodec, codec
from .words import as_words, first_not_below

MAGIC = b"zkey"
VERSION = 1
PROTOCOLS = {1: "groth16", 2: "plonk", 10: "fflonk"}
GROTH16 = 1
(HEADER, GROTH_HEADER, SEC_IC, SEC_COEFS, SEC_A, SEC_B1, SEC_B2, SEC_C, SEC_H,
 SEC_CONTRIBUTIONS) = range(1, 11)
# The order snarkjs's ``groth16 setup`` (zkey_new.js) writes sections in.
SNARKJS_SECTION_ORDER = (1, 2, 4, 3, 9, 8, 5, 6, 7, 10)
_NAMES = {SEC_IC: "IC", SEC_COEFS: "coefs", SEC_A: "A", SEC_B1: "B1", SEC_B2: "B2",
          SEC_C: "C", SEC_H: "H", SEC_CONTRIBUTIONS: "contributions"}


class PointSection(Sequence):
    """A run of points stored as snarkjs does; decoded to Python ints on demand.

    Built either from a file (``raw`` bytes) or from Python points; whichever side
    is missing is computed the first time it is asked for.
    """

    def __init__(self, codec_: PointCodec, *, raw=None, points=None, name: str = "points",
                 source: str | None = None):
        if (raw is None) == (points is None):
            raise TypeError("PointSection takes raw bytes or points, not both")
        self.codec = codec_
        self.name = name      # e.g. "section 7 (B2)"
        self.source = source  # the file, for error messages
        self._raw = raw
        if points is not None:
            self._points = list(points)

    def _decode(self, i: int):
        try:
            return self.codec.decode(self._raw, i * self.codec.size, where=f"{self.name} point {i}")
        except ValueError as e:
            raise FormatError(f"{self.source or 'zkey'}: {e}") from None

    def __len__(self) -> int:
        if self._raw is None:
            return len(self._points)
        return len(self._raw) // self.codec.size

    def __getitem__(self, i):
        if "_points" in self.__dict__:
            return self._points[i]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"{self.name}: index {i} out of range ({n} points)")
        return self._decode(i % n)

    @property
    def points(self) -> list:
        """All points as Python ints (decoded and checked on first use)."""
        if "_points" not in self.__dict__:
            self._points = [self._decode(i) for i in range(len(self))]
        return self._points

    def __iter__(self):
        return iter(self.points)

    def __eq__(self, other):
        if isinstance(other, PointSection):
            return self.codec is other.codec and bytes(self.raw) == bytes(other.raw)
        return list(self) == list(other)

    __hash__ = None

    @property
    def raw(self):
        """The section's bytes: Montgomery-form little-endian coordinates."""
        if self._raw is None:
            self._raw = self.codec.encode_all(self._points)
        return self._raw

    @property
    def words(self) -> np.ndarray:
        """(n, size/4) uint32 view of ``raw``: x (then y; G2: x0, x1, y0, y1) words, no copy."""
        return np.frombuffer(self.raw, dtype="<u4").reshape(len(self), self.codec.size // 4)

    def __repr__(self) -> str:
        return f"PointSection({self.name}: {len(self)} {self.codec.curve} {self.codec.which.upper()} points)"


@dataclass(frozen=True)
class Coef:
    matrix: int      # 0: A, 1: B
    constraint: int  # row
    signal: int      # column (wire)
    value: int       # standard form


_COEF_HEAD = 12  # matrix, constraint, signal: three u32


class CoefSection(Sequence):
    """Section 4: the sparse entries of A and B, in snarkjs's stored form.

    ``matrix``, ``constraint``, ``signal`` are uint32 arrays and ``stored_words`` the
    (count, n8r/4) words of c·R^2 mod r, all views of the file; ``values`` are the
    coefficients c in standard form as Python ints.
    """

    def __init__(self, curve: str, *, raw=None, coefs=None):
        if (raw is None) == (coefs is None):
            raise TypeError("CoefSection takes raw bytes or coefficients, not both")
        self.curve = curve
        self.r = r_of(curve)
        self.n8r = n8_of(self.r)
        self.R = pow(2, 8 * self.n8r, self.r)
        if raw is None:
            raw = self._encode([c if isinstance(c, Coef) else Coef(*c) for c in coefs])
        self.raw = raw
        rec = _COEF_HEAD + self.n8r
        body = np.frombuffer(raw, dtype="<u4", offset=4).reshape(-1, rec // 4)
        self.matrix, self.constraint, self.signal = body[:, 0], body[:, 1], body[:, 2]
        self.stored_words = body[:, 3:]

    def _encode(self, coefs: list[Coef]) -> bytes:
        r, R2, n8r = self.r, self.R * self.R % self.r, self.n8r
        out = [len(coefs).to_bytes(4, "little")]
        for c in coefs:
            if c.matrix not in (0, 1):
                raise ValueError(f"coef {c}: matrix must be 0 (A) or 1 (B)")
            if not 0 <= c.value < r:
                raise ValueError(f"coef {c}: value not in [0, r)")
            out.append(c.matrix.to_bytes(4, "little") + c.constraint.to_bytes(4, "little")
                       + c.signal.to_bytes(4, "little") + (c.value * R2 % r).to_bytes(n8r, "little"))
        return b"".join(out)

    def __len__(self) -> int:
        return int(self.matrix.shape[0])

    @functools.cached_property
    def values(self) -> list[int]:
        """Coefficients in standard form: stored · R^-2 mod r."""
        r, n8r = self.r, self.n8r
        R2_inv = pow(self.R * self.R, -1, r)
        raw = self.stored_words.tobytes()
        return [int.from_bytes(raw[i * n8r:(i + 1) * n8r], "little") * R2_inv % r
                for i in range(len(self))]

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return Coef(int(self.matrix[i]), int(self.constraint[i]), int(self.signal[i]), self.values[i])

    def __eq__(self, other):
        if isinstance(other, CoefSection):
            return self.curve == other.curve and bytes(self.raw) == bytes(other.raw)
        return list(self) == list(other)

    __hash__ = None

    def __repr__(self) -> str:
        return f"CoefSection({len(self)} entries of A and B)"


@dataclass(eq=False)
class ZKey:
    """A Groth16 proving key. Points are affine Python-int tuples (None: infinity).

    The sections are sequences: ``zkey.A[i]`` decodes one point, ``list(zkey.H)`` all
    of them; ``zkey.H.raw`` is the section's bytes (a memoryview of the mapped file)
    and ``zkey.H.words`` an (n, 2·n8q/4) uint32 array over them (G2: 4·n8q/4), the
    Montgomery-form coordinates x then y, word 0 least significant. ``zkey.coefs``
    has ``matrix``/``constraint``/``signal`` arrays, ``stored_words`` (c·R^2) and
    ``values`` (c). A key built in Python may pass plain lists for all of these.
    """

    curve: str
    n_vars: int
    n_public: int
    domain_size: int
    alpha_1: tuple
    beta_1: tuple
    beta_2: tuple
    gamma_2: tuple
    delta_1: tuple
    delta_2: tuple
    IC: PointSection
    coefs: CoefSection
    A: PointSection
    B1: PointSection
    B2: PointSection
    C: PointSection
    H: PointSection
    contributions: bytes | None = field(default=None, repr=False)  # section 10, raw
    path: str | None = None
    section_order: tuple = SNARKJS_SECTION_ORDER

    def __post_init__(self):
        # Plain lists are accepted for the point and coef sections (a key built in Python).
        g1, g2 = codec(self.curve, "g1"), codec(self.curve, "g2")
        for name, cdc in (("IC", g1), ("A", g1), ("B1", g1), ("B2", g2), ("C", g1), ("H", g1)):
            v = getattr(self, name)
            if not isinstance(v, PointSection):
                setattr(self, name, PointSection(cdc, points=v, name=name))
        if not isinstance(self.coefs, CoefSection):
            self.coefs = CoefSection(self.curve, coefs=self.coefs)

    @property
    def protocol(self) -> str:
        return "groth16"

    @property
    def q(self) -> int:
        return q_of(self.curve)

    @property
    def r(self) -> int:
        return r_of(self.curve)

    @property
    def n8q(self) -> int:
        return n8_of(self.q)

    @property
    def n8r(self) -> int:
        return n8_of(self.r)

    @property
    def power(self) -> int:
        return self.domain_size.bit_length() - 1

    def raw_section(self, section_id: int):
        """The bytes of one section as they are (or would be) in the file."""
        if section_id == HEADER:
            return GROTH16.to_bytes(4, "little")
        if section_id == GROTH_HEADER:
            return _encode_groth_header(self)
        if section_id == SEC_CONTRIBUTIONS:
            return self.contributions
        return getattr(self, {SEC_IC: "IC", SEC_COEFS: "coefs", SEC_A: "A", SEC_B1: "B1",
                              SEC_B2: "B2", SEC_C: "C", SEC_H: "H"}[section_id]).raw

    def check_points(self) -> None:
        """Decode every point of every section, checking each is on the curve (slow:
        Python ints); raises FormatError at the first bad one."""
        for sec in (self.IC, self.A, self.B1, self.B2, self.C, self.H):
            sec.points


# -- reading ----------------------------------------------------------------------


def read_zkey(path, *, check_points: bool = True) -> ZKey:
    """A Groth16 .zkey, its sections mapped, not copied. check_points=False skips the test
    that the A, B1, B2, C and H sections' coordinates are reduced: for a file whose content
    (by sha256) a prover has validated already (`numpy_prover`: the table cache records
    it), where the test would read every page of the points only to pass again."""
    f = read_binfile(path, MAGIC, max_version=VERSION)
    for s in f.sections:
        if not 1 <= s.id <= 10:
            raise f.error(f"unexpected section {s.id} in a Groth16 zkey")
    proto = f.reader(HEADER)
    protocol = proto.u32("protocol")
    proto.done()
    if protocol != GROTH16:
        raise f.error(f"protocol {protocol} ({PROTOCOLS.get(protocol, 'unknown')}) is not groth16 (1)")

    h = f.reader(GROTH_HEADER)
    n8q = h.u32("n8q")
    if n8q not in (32, 48):
        raise f.error(f"header: n8q = {n8q} is not a supported field size")
    q = h.bigint(n8q, "q")
    curve = curve_from_q(q)
    if curve is None:
        raise f.error(f"header: base field prime {q} is not bn254's or bls12_381's")
    if n8q != n8_of(q):
        raise f.error(f"header: n8q = {n8q} does not fit q (expected {n8_of(q)})")
    n8r = h.u32("n8r")
    if n8r != n8_of(r_of(curve)):
        raise f.error(f"header: n8r = {n8r} does not fit {curve} (expected {n8_of(r_of(curve))})")
    r = h.bigint(n8r, "r")
    if r != r_of(curve):
        raise f.error(f"header: scalar field prime {r} is not {curve}'s r")
    n_vars = h.u32("nVars")
    n_public = h.u32("nPublic")
    domain_size = h.u32("domainSize")
    if n_vars < n_public + 1:
        raise f.error(f"header: nVars = {n_vars} < nPublic + 1 = {n_public + 1}")
    if domain_size == 0 or domain_size & (domain_size - 1):
        raise f.error(f"header: domainSize = {domain_size} is not a power of two")
    g1, g2 = codec(curve, "g1"), codec(curve, "g2")
    hp = {}
    for name, cdc in (("alpha_1", g1), ("beta_1", g1), ("beta_2", g2), ("gamma_2", g2),
                      ("delta_1", g1), ("delta_2", g2)):
        hp[name] = _decode(f, cdc, h.take(cdc.size, name), name)
    h.done()

    def points(sid: int, count: int, cdc: PointCodec, count_what: str) -> PointSection:
        name = _NAMES[sid]
        raw = f.expect_size(sid, count * cdc.size, f"{name}: {count} {count_what} points of {cdc.size} bytes")
        if not check_points and sid != SEC_IC:
            return PointSection(cdc, raw=raw, name=f"section {sid} ({name})", source=f.name)
        bad = first_not_below(as_words(raw, cdc.n8), q)
        if bad is not None:
            raise f.error(f"section {sid} ({name}): point {bad // (2 * cdc.degree)} "
                          "has a coordinate not reduced modulo q")
        return PointSection(cdc, raw=raw, name=f"section {sid} ({name})", source=f.name)

    IC = points(SEC_IC, n_public + 1, g1, "nPublic+1")
    IC.points  # small, and what the verifier uses: decode and check now
    A = points(SEC_A, n_vars, g1, "nVars")
    B1 = points(SEC_B1, n_vars, g1, "nVars")
    B2 = points(SEC_B2, n_vars, g2, "nVars")
    C = points(SEC_C, n_vars - n_public - 1, g1, "nVars-nPublic-1")
    H = points(SEC_H, domain_size, g1, "domainSize")
    coefs = _read_coefs(f, curve, n_vars, domain_size)
    contributions = None
    if f.has(SEC_CONTRIBUTIONS):
        contributions = f.section(SEC_CONTRIBUTIONS)
        if len(contributions) < 68:
            raise f.error(f"section {SEC_CONTRIBUTIONS} (contributions) has {len(contributions)} "
                          "bytes, less than its 68-byte header")
    order = tuple(f.section_ids)
    return ZKey(curve, n_vars, n_public, domain_size, IC=IC, coefs=coefs, A=A, B1=B1, B2=B2,
                C=C, H=H, contributions=contributions, path=f.name, section_order=order, **hp)


def _decode(f: BinFile, cdc: PointCodec, buf, where: str):
    try:
        return cdc.decode(buf, 0, where=where)
    except ValueError as e:
        raise f.error(str(e)) from None


def _read_coefs(f: BinFile, curve: str, n_vars: int, domain_size: int) -> CoefSection:
    raw = f.section(SEC_COEFS)
    if len(raw) < 4:
        raise f.error(f"section {SEC_COEFS} (coefs) truncated: no count")
    count = int.from_bytes(raw[:4], "little")
    n8r = n8_of(r_of(curve))
    expected = 4 + count * (_COEF_HEAD + n8r)
    if len(raw) != expected:
        raise f.error(f"section {SEC_COEFS} (coefs) has {len(raw)} bytes, expected {expected} "
                      f"for {count} entries")
    cs = CoefSection(curve, raw=raw)
    for arr, bound, what in ((cs.matrix, 2, "matrix"), (cs.constraint, domain_size, "constraint"),
                             (cs.signal, n_vars, "signal")):
        bad = np.flatnonzero(arr >= bound)
        if bad.size:
            j = int(bad[0])
            raise f.error(f"section {SEC_COEFS} (coefs): entry {j} has {what} {int(arr[j])} "
                          f"(must be < {bound})")
    bad = first_not_below(np.ascontiguousarray(cs.stored_words), cs.r)
    if bad is not None:
        raise f.error(f"section {SEC_COEFS} (coefs): entry {bad} value not reduced modulo r")
    return cs


# -- writing ----------------------------------------------------------------------


def _encode_groth_header(z: ZKey) -> bytes:
    g1, g2 = codec(z.curve, "g1"), codec(z.curve, "g2")
    q, r = z.q, z.r
    return b"".join([
        z.n8q.to_bytes(4, "little"), q.to_bytes(z.n8q, "little"),
        z.n8r.to_bytes(4, "little"), r.to_bytes(z.n8r, "little"),
        z.n_vars.to_bytes(4, "little"), z.n_public.to_bytes(4, "little"),
        z.domain_size.to_bytes(4, "little"),
        g1.encode(z.alpha_1), g1.encode(z.beta_1), g2.encode(z.beta_2),
        g2.encode(z.gamma_2), g1.encode(z.delta_1), g2.encode(z.delta_2),
    ])


def _sections(path, zkey: ZKey) -> list:
    """The (section id, payload) pairs `write_zkey` writes, in file order, checked."""
    z = zkey
    if z.curve not in CURVES:
        raise ValueError(f"unknown curve {z.curve!r}")
    expected = {SEC_IC: z.n_public + 1, SEC_A: z.n_vars, SEC_B1: z.n_vars, SEC_B2: z.n_vars,
                SEC_C: z.n_vars - z.n_public - 1, SEC_H: z.domain_size}
    for sid, n in expected.items():
        got = len(getattr(z, _NAMES[sid]))
        if got != n:
            raise ValueError(f"{path}: section {_NAMES[sid]} has {got} points, expected {n}")
    if z.domain_size <= 0 or z.domain_size & (z.domain_size - 1):
        raise ValueError(f"{path}: domain_size {z.domain_size} is not a power of two")
    ids = [sid for sid in z.section_order if sid != SEC_CONTRIBUTIONS or z.contributions is not None]
    if z.contributions is not None and SEC_CONTRIBUTIONS not in ids:
        ids.append(SEC_CONTRIBUTIONS)
    if sorted(ids) != sorted(set(ids)) or not set(range(1, 10)) <= set(ids):
        raise ValueError(f"{path}: section order {z.section_order} must name sections 1..9 once")
    return [(sid, z.raw_section(sid)) for sid in ids]


def zkey_chunks(path, zkey: ZKey) -> list:
    """The file `write_zkey` writes, as a list of byte chunks (for a caller that writes it
    beside other files as one set: `groth16.outputs.write_outputs`)."""
    return encode_binfile(MAGIC, VERSION, _sections(path, zkey))


def write_zkey(path, zkey: ZKey) -> None:
    """Write a proving key snarkjs can prove with (atomically).

    Sections go in ``zkey.section_order`` (snarkjs's own order by default, the
    file's order for a key that was read), so a key read and written back is the
    same bytes. Section 10 is written only when ``zkey.contributions`` is set:
    snarkjs's prover and key export do not need it (its ``zkey verify`` does).
    """
    write_binfile(path, MAGIC, VERSION, _sections(path, zkey))
