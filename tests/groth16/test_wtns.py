""".wtns reader and writer."""
import json
import struct

import pytest

from zktensor.algebra import field
from zktensor.groth16.formats import FormatError, read_wtns, write_wtns
from zktensor.groth16.formats.binfile import encode_binfile

R_BN = field("bn254.fr").p
R_BLS = field("bls12_381.fr").p


@pytest.mark.parametrize("prime", [R_BN, R_BLS])
def test_round_trip(tmp_path, prime):
    values = [1, 0, 5, prime - 1, 2**200, 12345678901234567890]
    write_wtns(tmp_path / "w.wtns", values, prime)
    w = read_wtns(tmp_path / "w.wtns")
    assert list(w) == values and len(w) == len(values) and w[3] == prime - 1
    assert w.prime == prime and w.n8 == 32
    assert w.curve == ("bn254" if prime == R_BN else "bls12_381")
    assert w.words.shape == (len(values), 8)
    assert int(w.words[2, 0]) == 5 and int(w.words[3, 7]) == (prime - 1) >> 224


def test_layout(tmp_path):
    write_wtns(tmp_path / "w.wtns", [1, 2], R_BN)
    data = (tmp_path / "w.wtns").read_bytes()
    header = struct.pack("<I", 32) + R_BN.to_bytes(32, "little") + struct.pack("<I", 2)
    assert data == b"".join(encode_binfile(b"wtns", 2, [
        (1, header), (2, (1).to_bytes(32, "little") + (2).to_bytes(32, "little"))]))


def _wtns(tmp_path, name, *, n8=32, prime=R_BN, count=None, values=(1, 2), version=2):
    count = len(values) if count is None else count
    header = struct.pack("<I", n8) + prime.to_bytes(n8, "little") + struct.pack("<I", count)
    body = b"".join(v.to_bytes(n8, "little") for v in values)
    p = tmp_path / name
    p.write_bytes(b"".join(encode_binfile(b"wtns", version, [(1, header), (2, body)])))
    return p


@pytest.mark.parametrize("kwargs, message", [
    (dict(values=(1, R_BN)), "value 1 is not reduced"),
    (dict(count=3), r"section 2 \(3 values of 32 bytes\) has 64 bytes, expected 96"),
    (dict(n8=48), "n8 = 48 does not fit the prime"),
    (dict(n8=12, prime=7, values=()), "invalid field size"),
    (dict(version=3), "version 3 not supported"),
])
def test_corrupt(tmp_path, kwargs, message):
    p = _wtns(tmp_path, "bad.wtns", **kwargs)
    with pytest.raises(FormatError, match=message) as e:
        read_wtns(p)
    assert str(p) in str(e.value)


def test_wrong_prime(tmp_path):
    p = _wtns(tmp_path, "bls.wtns", prime=R_BLS)
    with pytest.raises(FormatError, match="bls.wtns: witness is over the prime"):
        read_wtns(p, prime=R_BN)


def test_writer_refuses_unreduced(tmp_path):
    with pytest.raises(ValueError, match="value 1 is not in"):
        write_wtns(tmp_path / "w.wtns", [1, R_BN], R_BN)
    assert not (tmp_path / "w.wtns").exists()


@pytest.mark.snarkjs
def test_snarkjs_witness(fx, snarkjs, tmp_path):
    w = read_wtns(fx.wtns)
    assert w.curve == fx.curve and w[0] == 1
    # Values as snarkjs reads them.
    snarkjs.run("wtns", "export", "json", fx.wtns, tmp_path / "w.json")
    assert list(w) == [int(v) for v in json.loads((tmp_path / "w.json").read_text())]
    # Our writer gives back snarkjs's bytes.
    write_wtns(tmp_path / "again.wtns", list(w), w.prime)
    assert (tmp_path / "again.wtns").read_bytes() == fx.wtns.read_bytes()
