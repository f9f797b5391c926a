"""key_check.validate_zkey: header points, subgroups, sizes; the stamp for the table cache."""
from __future__ import annotations

import pytest

from fixture_support import BUILD
from zktensor.algebra.curves import group, in_subgroup, is_on_curve
from zktensor.groth16.formats import FormatError, read_zkey
from zktensor.groth16.formats.binfile import read_binfile
from zktensor.groth16.formats.points import codec
from zktensor.groth16.key_check import KEY_CHECK_STAMP, combinations_for, is_current, validate_zkey

pytestmark = pytest.mark.snarkjs


def _key(name="multiplier"):
    path = BUILD / name / "circuit_final.zkey"
    if not path.exists():
        pytest.skip("fixtures not built (scripts/fixtures.sh)")
    return path


def _outside(curve, which):
    G = group(f"{curve}.{which}")
    F = G.F
    for i in range(1, 200):
        x = F.elem(i) if which == "g1" else F.elem(i, 1)
        y = F.sqrt(F.add(F.mul(F.mul(x, x), x), G.b))
        if y is not None and is_on_curve(G, (x, y)) and not in_subgroup(G, (x, y)):
            return (x, y)
    raise AssertionError("none found")


def _patched(src, tmp_path, section: int, offset: int, blob: bytes):
    data = bytearray(src.read_bytes())
    sec = next(s for s in read_binfile(src, b"zkey", 1).sections if s.id == section)
    data[sec.offset + offset:sec.offset + offset + len(blob)] = blob
    out = tmp_path / "bad.zkey"
    out.write_bytes(bytes(data))
    return out


def _validate(z, path):
    """validate_zkey on the tensors ("tensor") or over `numpy_tables`' rows without torch ("rows")."""
    if path == "tensor":
        return validate_zkey(z)
    from zktensor.groth16.numpy_tables import SECTIONS, tables_of
    return validate_zkey(z, rows={SECTIONS[name][0]: (t[1], t[3] + 1, t[2])
                                  for name, t in tables_of(z).items() if t is not None})


PATHS = ["tensor", "rows"]


@pytest.mark.parametrize("path", PATHS)
def test_valid_keys_get_the_stamp(path):
    for name in ("multiplier", "multi_public_bls"):
        stamp = _validate(read_zkey(_key(name)), path)
        assert stamp == KEY_CHECK_STAMP and is_current(stamp) and not is_current("zkey-check-v0")
    assert combinations_for("bn254", "g1") == 0 and combinations_for("bn254", "g2") == 5
    assert combinations_for("bls12_381", "g1") == 41


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("curve, which, section, name", [("bn254", "g2", 7, "multiplier"),
                                                         ("bls12_381", "g1", 5, "multi_public_bls"),
                                                         ("bls12_381", "g2", 7, "multi_public_bls")])
def test_section_point_outside_the_subgroup(tmp_path, curve, which, section, name, path):
    cdc = codec(curve, which)
    bad = _patched(_key(name), tmp_path, section, cdc.size, cdc.encode(_outside(curve, which)))
    z = read_zkey(bad)                      # on the curve: the reader takes it
    with pytest.raises(FormatError, match=f"^{bad}: .*not in {curve}'s {which.upper()} subgroup"):
        _validate(z, path)


@pytest.mark.parametrize("curve, which, section, name", [("bn254", "g1", 9, "multiplier"),
                                                         ("bn254", "g2", 7, "multiplier"),
                                                         ("bls12_381", "g1", 6, "multi_public_bls"),
                                                         ("bls12_381", "g2", 7, "multi_public_bls")])
def test_section_point_off_the_curve_is_named_alike(tmp_path, curve, which, section, name):
    """A point off its curve (coordinates reduced: the reader takes it) is refused by both
    paths with the same message, naming the section and the point."""
    cdc = codec(curve, which)
    G = group(f"{curve}.{which}")
    x = G.F.elem(5) if which == "g1" else G.F.elem(5, 7)
    off = (x, x)
    assert not is_on_curve(G, off)
    bad = _patched(_key(name), tmp_path, section, 2 * cdc.size, cdc.encode(off))
    z = read_zkey(bad)
    msgs = []
    for path in PATHS:
        with pytest.raises(FormatError, match="point 2 is not on the curve") as e:
            _validate(z, path)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] and msgs[0].startswith(f"{bad}: section {section} ")


def test_header_point_identity_and_outside(tmp_path):
    src = _key()
    z = read_zkey(src)
    hdr_points = 4 + z.n8q + 4 + z.n8r + 12           # alpha_1 starts here in section 2
    bad = _patched(src, tmp_path, 2, hdr_points, bytes(2 * z.n8q))
    with pytest.raises(FormatError, match=f"^{bad}: header point alpha_1 is the identity"):
        validate_zkey(read_zkey(bad))
    g2 = codec("bn254", "g2")
    delta_2 = hdr_points + 3 * 2 * z.n8q + 2 * g2.size
    bad = _patched(src, tmp_path, 2, delta_2, g2.encode(_outside("bn254", "g2")))
    with pytest.raises(FormatError, match="header point delta_2 is not in bn254's G2 subgroup"):
        validate_zkey(read_zkey(bad))
