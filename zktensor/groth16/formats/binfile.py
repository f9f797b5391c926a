"""The iden3 binary container shared by ``.r1cs``, ``.wtns``, ``.zkey`` and ``.ptau``.

Layout (all integers little-endian)::

    magic     4 bytes, e.g. b"zkey"
    version   u32
    nSections u32
    nSections times:  id u32, size u64, then `size` bytes of payload

Reading is strict where snarkjs is lenient: a file that is cut short, has bytes
after its last section, a section that is missing or repeated, or a section
whose payload is not consumed exactly by its parser raises :class:`FormatError`
with the file's name and the problem, so that a bad key never reaches a kernel.

The file is memory-mapped, and a section's payload is handed out as a
``memoryview`` over the map: a large proving key is not copied, and a fast
loader can wrap a section with ``numpy.frombuffer`` without per-element work.
"""
from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass

from .errors import FormatError

_HEADER = struct.Struct("<4sII")
_SECTION_HEADER = struct.Struct("<IQ")


@dataclass(frozen=True)
class Section:
    id: int
    offset: int  # of the payload, from the start of the file
    size: int


class BinFile:
    """A parsed container: its sections' places, and their payloads on demand."""

    def __init__(self, name: str, data, magic: bytes, version: int, sections: list[Section]):
        self.name = name
        self.data = memoryview(data)
        self.magic = magic
        self.version = version
        self.sections = sections  # in file order

    def error(self, problem: str) -> FormatError:
        return FormatError(f"{self.name}: {problem}")

    @property
    def section_ids(self) -> list[int]:
        return [s.id for s in self.sections]

    def has(self, section_id: int) -> bool:
        return any(s.id == section_id for s in self.sections)

    def section(self, section_id: int) -> memoryview:
        """The payload of the one section with this id."""
        found = [s for s in self.sections if s.id == section_id]
        if not found:
            raise self.error(f"section {section_id} missing")
        if len(found) > 1:
            raise self.error(f"section {section_id} appears {len(found)} times")
        s = found[0]
        return self.data[s.offset:s.offset + s.size]

    def reader(self, section_id: int) -> "SectionReader":
        return SectionReader(self, section_id, self.section(section_id))

    def expect_size(self, section_id: int, expected: int, what: str) -> memoryview:
        """The payload of a fixed-size section, which must be exactly ``expected`` bytes."""
        payload = self.section(section_id)
        if len(payload) != expected:
            raise self.error(f"section {section_id} ({what}) has {len(payload)} bytes, "
                             f"expected {expected}")
        return payload


class SectionReader:
    """Sequential reads within one section; reads past its end raise FormatError."""

    def __init__(self, file: BinFile, section_id: int, payload: memoryview):
        self.file = file
        self.id = section_id
        self.payload = payload
        self.pos = 0

    def take(self, n: int, what: str = "data") -> memoryview:
        if self.pos + n > len(self.payload):
            raise self.file.error(
                f"section {self.id} too short reading {what} "
                f"(need {n} bytes at offset {self.pos}, section has {len(self.payload)})")
        out = self.payload[self.pos:self.pos + n]
        self.pos += n
        return out

    def u32(self, what: str = "u32") -> int:
        return int.from_bytes(self.take(4, what), "little")

    def u64(self, what: str = "u64") -> int:
        return int.from_bytes(self.take(8, what), "little")

    def bigint(self, n8: int, what: str = "integer") -> int:
        return int.from_bytes(self.take(n8, what), "little")

    def rest(self) -> memoryview:
        return self.take(len(self.payload) - self.pos)

    def done(self) -> None:
        """The section must have been consumed exactly (snarkjs endReadSection)."""
        left = len(self.payload) - self.pos
        if left:
            raise self.file.error(f"section {self.id} has {left} unexpected trailing bytes")


def _map(path: str):
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return b""
        # The map outlives the file object: closing the descriptor does not unmap.
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def drop_pages(view) -> bool:
    """Take the pages of the mapped file behind `view` (a section's payload, or a
    numpy.memmap: a cached table) out of this process's resident set: they stay in the page
    cache and come back on the next read. A key whose sections were read once into tables,
    or a table a one-shot prover is done with, should not count in the prover's memory.
    True where it was done (a mapped file, on a system with MADV_DONTNEED)."""
    obj = getattr(view, "obj", None) or getattr(view, "_mmap", None)
    if isinstance(obj, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        obj.madvise(mmap.MADV_DONTNEED)
        return True
    return False


def read_binfile(path, magic: bytes, max_version: int, min_version: int = 1) -> BinFile:
    """Open and check an iden3 container; its sections' payloads stay memory-mapped."""
    name = os.fspath(path)
    try:
        data = _map(name)
    except OSError as e:
        raise FormatError(f"{name}: cannot read ({e.strerror or e})") from e
    view = memoryview(data)
    kind = magic.decode()
    if len(view) < _HEADER.size:
        raise FormatError(f"{name}: truncated header ({len(view)} bytes; a .{kind} file "
                          f"starts with {_HEADER.size})")
    got_magic, version, n_sections = _HEADER.unpack_from(view, 0)
    if got_magic != magic:
        raise FormatError(f"{name}: not a .{kind} file (magic {bytes(got_magic)!r}, expected {magic!r})")
    if not min_version <= version <= max_version:
        raise FormatError(f"{name}: .{kind} version {version} not supported "
                          f"(supported: {min_version}..{max_version})")
    sections = []
    pos = _HEADER.size
    for i in range(n_sections):
        if pos + _SECTION_HEADER.size > len(view):
            raise FormatError(f"{name}: truncated: header of section #{i + 1} of {n_sections} "
                              f"missing at offset {pos} (file has {len(view)} bytes)")
        sid, size = _SECTION_HEADER.unpack_from(view, pos)
        pos += _SECTION_HEADER.size
        if pos + size > len(view):
            raise FormatError(f"{name}: section {sid} truncated (expected {size} bytes, "
                              f"found {len(view) - pos})")
        sections.append(Section(sid, pos, size))
        pos += size
    if pos != len(view):
        raise FormatError(f"{name}: {len(view) - pos} unexpected bytes after the last of "
                          f"{n_sections} sections")
    return BinFile(name, data, magic, version, sections)


def encode_binfile(magic: bytes, version: int, sections) -> list:
    """The container as a list of byte chunks (header, then each section's header and
    payload), so that large payloads are written without being concatenated."""
    sections = list(sections)
    chunks = [_HEADER.pack(magic, version, len(sections))]
    for sid, payload in sections:
        if isinstance(payload, (list, tuple)):
            size = sum(len(memoryview(p).cast("B")) for p in payload)
            chunks.append(_SECTION_HEADER.pack(sid, size))
            chunks.extend(payload)
        else:
            chunks.append(_SECTION_HEADER.pack(sid, len(memoryview(payload).cast("B"))))
            chunks.append(payload)
    return chunks


def write_binfile(path, magic: bytes, version: int, sections) -> None:
    """Write a container atomically. ``sections``: (id, payload) pairs in file order; a
    payload is bytes-like or a list of bytes-like chunks."""
    from ...runtime.atomic import atomic_write
    from ..outputs import OutputError, check_output

    name = check_output(path)         # errors name the user's path, never the temporary file
    try:
        with atomic_write(name, "wb") as f:
            for chunk in encode_binfile(magic, version, sections):
                f.write(chunk)
    except OSError as e:
        raise OutputError(f"{name}: cannot write ({e.strerror or e})") from None
