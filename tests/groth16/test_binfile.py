"""The iden3 container: layout, strictness, error messages (no node needed)."""
import os
import struct

import pytest

from zktensor.groth16.formats import FormatError
from zktensor.runtime.atomic import atomic_write
from zktensor.groth16.formats.binfile import encode_binfile, read_binfile, write_binfile


def _file(tmp_path, name, data: bytes):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_layout_is_iden3(tmp_path):
    p = tmp_path / "x.bin"
    write_binfile(p, b"test", 2, [(1, b"\x01\x02\x03\x04"), (7, [b"ab", b"cd"])])
    data = p.read_bytes()
    # magic, version, nSections; then per section id u32, size u64, payload.
    assert data == (b"test" + struct.pack("<II", 2, 2) + struct.pack("<IQ", 1, 4) + b"\x01\x02\x03\x04"
                    + struct.pack("<IQ", 7, 4) + b"abcd")
    f = read_binfile(p, b"test", 2)
    assert f.version == 2 and f.section_ids == [1, 7]
    assert bytes(f.section(7)) == b"abcd"
    r = f.reader(1)
    assert r.u32() == 0x04030201
    r.done()


def _error(path, magic=b"test", max_version=1) -> str:
    with pytest.raises(FormatError) as e:
        read_binfile(path, magic, max_version)
    assert isinstance(e.value, ValueError)
    assert os.fspath(path) in str(e.value)
    return str(e.value)


GOOD = b"".join(encode_binfile(b"test", 1, [(1, b"x" * 8), (2, b"y" * 100)]))


def test_truncated_header(tmp_path):
    assert "truncated header" in _error(_file(tmp_path, "a.bin", GOOD[:7]))
    assert "truncated header" in _error(_file(tmp_path, "empty.bin", b""))


def test_wrong_magic_and_version(tmp_path):
    assert "not a .test file" in _error(_file(tmp_path, "m.bin", b"zkey" + GOOD[4:]))
    assert "version 1 not supported" in _error(_file(tmp_path, "v.bin", GOOD), max_version=0)


def test_truncated_section(tmp_path):
    msg = _error(_file(tmp_path, "circuit.zkey", GOOD[:-60]))
    assert "section 2 truncated (expected 100 bytes, found 40)" in msg
    msg = _error(_file(tmp_path, "h.bin", GOOD[:12 + 12 + 8 + 5]))
    assert "header of section #2" in msg


def test_trailing_bytes(tmp_path):
    assert "unexpected bytes after the last" in _error(_file(tmp_path, "t.bin", GOOD + b"\0"))


def test_missing_and_duplicate_sections(tmp_path):
    p = _file(tmp_path, "d.bin", b"".join(encode_binfile(b"test", 1, [(1, b""), (1, b"")])))
    f = read_binfile(p, b"test", 1)
    with pytest.raises(FormatError, match=r"d\.bin: section 1 appears 2 times"):
        f.section(1)
    with pytest.raises(FormatError, match=r"d\.bin: section 5 missing"):
        f.section(5)


def test_section_reader_bounds(tmp_path):
    f = read_binfile(_file(tmp_path, "r.bin", GOOD), b"test", 1)
    r = f.reader(1)
    r.u32()
    with pytest.raises(FormatError, match="section 1 has 4 unexpected trailing bytes"):
        r.done()
    with pytest.raises(FormatError, match=r"r\.bin: section 1 too short reading q"):
        r.bigint(32, "q")


def test_unreadable(tmp_path):
    with pytest.raises(FormatError, match="cannot read"):
        read_binfile(tmp_path / "nope.bin", b"test", 1)


def test_atomic_write_keeps_old_file_on_error(tmp_path):
    p = tmp_path / "keep.json"
    p.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_write(p, "w") as f:
            f.write("partial")
            raise RuntimeError("boom")
    assert p.read_text() == "old"
    assert os.listdir(tmp_path) == ["keep.json"]  # no temporary left behind
    with atomic_write(p, "w") as f:
        f.write("new")
    assert p.read_text() == "new"
    assert os.listdir(tmp_path) == ["keep.json"]


def test_drop_pages_leaves_the_resident_set(tmp_path):
    """A mapped file read once (a .zkey turned into tables) stops counting in the process's
    resident memory after drop_pages, and reads the same afterwards."""
    import mmap
    import sys

    import pytest

    from zktensor.groth16.formats.binfile import drop_pages
    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc/self/smaps")
    path = tmp_path / "f.bin"
    data = bytes(range(256)) * (8 << 12)                     # 8 MiB
    path.write_bytes(data)
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    view = memoryview(m)
    assert sum(view[::4096]) >= 0                            # every page touched

    def rss_kib() -> int:
        lines = open("/proc/self/smaps").read().splitlines()
        for i, line in enumerate(lines):
            if line.endswith(str(path)):
                return next(int(x.split()[1]) for x in lines[i + 1:] if x.startswith("Rss:"))
        raise AssertionError("mapping not found")
    assert rss_kib() >= 7 << 10
    assert drop_pages(view[100:200])
    assert rss_kib() < 1 << 10
    assert bytes(view[:256]) == data[:256] and bytes(view[-256:]) == data[-256:]
    assert not drop_pages(memoryview(b"not mapped")) and not drop_pages(None)
    view.release()
    m.close()
