""".zkey reader and writer: layout, snarkjs's own reading, keys snarkjs can prove with."""
import functools
import json
import random
import struct

import pytest

from fixture_support import SMALL
from tests.oracles import ec, snarkjs_layout as sl
from zktensor.algebra import field
from zktensor.algebra.curves import group
from zktensor.groth16.formats import (FormatError, check_r1cs_for_zkey, check_witness_for_zkey,
                                      read_r1cs, read_wtns, read_zkey, write_zkey)
from zktensor.groth16.formats.binfile import encode_binfile, read_binfile
from zktensor.groth16.formats.json_io import g1_to_json, g2_to_json, read_json
from zktensor.groth16.formats.points import codec
from zktensor.groth16.formats.zkey import SNARKJS_SECTION_ORDER, Coef, ZKey
from zktensor.groth16.verifier import verify
from zktensor.groth16.vk import vk_json

CURVES = ["bn254", "bls12_381"]


def rand_point(curve, which, rng):
    G = group(f"{curve}.{which}")
    return ec.mul(G, G.generator, rng.randrange(1, G.r))


def small_zkey(curve, seed=1, n_vars=5, n_public=2, domain_size=8) -> ZKey:
    """A key with the right shapes and random points: not a sound key, a format test."""
    rng = random.Random(seed)
    g1 = lambda: rand_point(curve, "g1", rng)  # noqa: E731
    g2 = lambda: rand_point(curve, "g2", rng)  # noqa: E731
    r = field(f"{curve}.fr").p
    coefs = [Coef(rng.randrange(2), rng.randrange(domain_size), rng.randrange(n_vars), rng.randrange(r))
             for _ in range(7)] + [Coef(0, 6, 1, 1), Coef(1, 0, 0, r - 1), Coef(0, 1, 2, 0)]
    return ZKey(curve, n_vars, n_public, domain_size,
                alpha_1=g1(), beta_1=g1(), beta_2=g2(), gamma_2=g2(), delta_1=g1(), delta_2=g2(),
                IC=[g1() for _ in range(n_public + 1)], coefs=coefs,
                A=[g1(), None] + [g1() for _ in range(n_vars - 2)],
                B1=[None] * n_vars, B2=[g2(), None] + [g2() for _ in range(n_vars - 2)],
                C=[g1() for _ in range(n_vars - n_public - 1)], H=[g1() for _ in range(domain_size)])


@pytest.mark.parametrize("curve", CURVES)
def test_point_codec_matches_layout_oracle(curve):
    rng = random.Random(7)
    for which in ("g1", "g2"):
        G, cdc = group(f"{curve}.{which}"), codec(curve, which)
        for P in [None, G.generator] + [rand_point(curve, which, rng) for _ in range(3)]:
            data = cdc.encode(P)
            assert data == sl.point_to_lem(G, P)
            assert cdc.decode(data) == P


@pytest.mark.parametrize("curve", CURVES)
def test_write_read_round_trip(tmp_path, curve):
    z = small_zkey(curve)
    write_zkey(tmp_path / "k.zkey", z)
    f = read_binfile(tmp_path / "k.zkey", b"zkey", 1)
    assert tuple(f.section_ids) == SNARKJS_SECTION_ORDER[:-1]  # no contributions section
    back = read_zkey(tmp_path / "k.zkey")
    for name in ("curve", "n_vars", "n_public", "domain_size", "alpha_1", "beta_1", "beta_2",
                 "gamma_2", "delta_1", "delta_2", "q", "r", "n8q", "n8r", "power"):
        assert getattr(back, name) == getattr(z, name), name
    for name in ("IC", "A", "B1", "B2", "C", "H"):
        assert list(getattr(back, name)) == list(getattr(z, name)), name
        assert getattr(back, name) == getattr(z, name)
    assert list(back.coefs) == list(z.coefs)
    # Stored coefficient: c·R^2 mod r, R = 2^256 (snarkjs writeFr2).
    r = z.r
    c0 = z.coefs[0]
    raw = bytes(f.section(4))
    assert struct.unpack_from("<III", raw, 4) == (c0.matrix, c0.constraint, c0.signal)
    assert int.from_bytes(raw[16:48], "little") == c0.value * pow(2, 512, r) % r
    # Raw views for fast loaders: G2 words are x0, x1, y0, y1, Montgomery.
    q, n8 = z.q, z.n8q
    w = back.B2.words
    assert w.shape == (z.n_vars, 4 * n8 // 4)
    x0 = int.from_bytes(w[0, : n8 // 4].tobytes(), "little")
    assert x0 == z.B2[0][0][0] * pow(2, 8 * n8, q) % q
    assert not w[1].any()  # infinity is zeros
    # Written again, the same bytes, and a contributions section is kept.
    write_zkey(tmp_path / "k2.zkey", back)
    assert (tmp_path / "k2.zkey").read_bytes() == (tmp_path / "k.zkey").read_bytes()
    back.contributions = b"\1" * 64 + b"\0" * 4
    write_zkey(tmp_path / "k3.zkey", back)
    assert read_zkey(tmp_path / "k3.zkey").contributions == back.contributions


def test_writer_checks_counts(tmp_path):
    z = small_zkey("bn254")
    z.A = z.A[:-1]
    with pytest.raises(ValueError, match="section A has 4 points, expected 5"):
        write_zkey(tmp_path / "bad.zkey", z)
    assert not (tmp_path / "bad.zkey").exists()


# -- corrupt files ------------------------------------------------------------------------


def _rewrite(src, dst, change):
    """Rebuild a zkey with change(sections: dict id -> bytearray, order: list) applied."""
    f = read_binfile(src, b"zkey", 1)
    sections = {s.id: bytearray(f.section(s.id)) for s in f.sections}
    order = list(f.section_ids)
    change(sections, order)
    dst.write_bytes(b"".join(encode_binfile(b"zkey", 1, [(i, bytes(sections[i])) for i in order])))
    return dst


@functools.lru_cache(maxsize=None)
def _good_bytes() -> bytes:
    import pathlib
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = pathlib.Path(d) / "good.zkey"
        write_zkey(path, small_zkey("bn254"))
        return path.read_bytes()


def _good(tmp_path):
    (tmp_path / "good.zkey").write_bytes(_good_bytes())
    return tmp_path / "good.zkey"


def _bad_coord(sec, off, curve="bn254"):
    q = field(f"{curve}.fq").p
    sec[off:off + 32] = q.to_bytes(32, "little")


def _off_curve(sec, off, curve="bn254"):
    # y -> y + 1 (in Montgomery form: + R)
    q = field(f"{curve}.fq").p
    y = int.from_bytes(sec[off + 32:off + 64], "little")
    sec[off + 32:off + 64] = ((y + pow(2, 256, q)) % q).to_bytes(32, "little")


CORRUPTIONS = [
    ("protocol", lambda s, o: s.__setitem__(1, bytearray(struct.pack("<I", 2))),
     r"protocol 2 \(plonk\) is not groth16"),
    ("ic_short", lambda s, o: s.__setitem__(3, s[3][:-64]),
     r"section 3 \(IC: 3 nPublic\+1 points of 64 bytes\) has 128 bytes, expected 192"),
    ("alpha_off_curve", lambda s, o: _off_curve(s[2], 4 + 32 + 4 + 32 + 12),
     "alpha_1: bn254 G1 point not on the curve"),
    ("ic_off_curve", lambda s, o: _off_curve(s[3], 64), r"section 3 \(IC\) point 1: bn254 G1 point not on the curve"),
    ("a_unreduced", lambda s, o: _bad_coord(s[5], 64), r"section 5 \(A\): point 1 has a coordinate not reduced"),
    ("coef_signal", lambda s, o: s[4].__setitem__(slice(12, 16), struct.pack("<I", 99)),
     r"section 4 \(coefs\): entry 0 has signal 99 \(must be < 5\)"),
    ("coef_count", lambda s, o: s[4].__setitem__(slice(0, 4), struct.pack("<I", 11)),
     r"section 4 \(coefs\) has 444 bytes, expected 488 for 11 entries"),
    ("coef_unreduced", lambda s, o: s[4].__setitem__(slice(16, 48), field("bn254.fr").p.to_bytes(32, "little")),
     "entry 0 value not reduced modulo r"),
    ("q_unknown", lambda s, o: s[2].__setitem__(slice(4, 36), (2**255 - 19).to_bytes(32, "little")),
     "base field prime .* is not bn254's or bls12_381's"),
    ("r_wrong", lambda s, o: s[2].__setitem__(slice(40, 72), field("bn254.fq").p.to_bytes(32, "little")),
     "scalar field prime .* is not bn254's r"),
    ("domain", lambda s, o: s[2].__setitem__(slice(80, 84), struct.pack("<I", 6)),
     "domainSize = 6 is not a power of two"),
    ("extra_section", lambda s, o: (s.__setitem__(11, bytearray(b"x")), o.append(11)),
     "unexpected section 11"),
    ("missing_h", lambda s, o: o.remove(9), "section 9 missing"),
    ("h_duplicated", lambda s, o: o.append(9), "section 9 appears 2 times"),
]


@pytest.mark.parametrize("case, change, message", CORRUPTIONS, ids=[c[0] for c in CORRUPTIONS])
def test_corrupt(tmp_path, case, change, message):
    bad = _rewrite(_good(tmp_path), tmp_path / f"{case}.zkey", change)
    with pytest.raises(FormatError, match=message) as e:
        read_zkey(bad)
    assert str(e.value).startswith(str(bad) + ": ")


def test_lazy_sections_check_points_on_use(tmp_path):
    bad = _rewrite(_good(tmp_path), tmp_path / "b2.zkey", lambda s, o: _off_curve(s[7], 2 * 128))
    z = read_zkey(bad)  # header, sizes, reduction: fine; B2's points are not decoded yet
    assert z.B2[0] is not None
    with pytest.raises(FormatError, match=r"b2\.zkey: section 7 \(B2\) point 2: bn254 G2 point not on the curve"):
        z.B2[2]
    with pytest.raises(FormatError, match="point 2"):
        z.check_points()


def test_points_unchecked_for_a_validated_content(tmp_path):
    """check_points=False (a key whose content a prover validated) skips only the point
    sections' reduction test: the IC points, the coefficients and the sizes are still read
    and checked."""
    bad = _rewrite(_good(tmp_path), tmp_path / "a.zkey", lambda s, o: _bad_coord(s[5], 64))
    with pytest.raises(FormatError, match="not reduced"):
        read_zkey(bad)
    assert len(read_zkey(bad, check_points=False).A) == 5
    for case in ("ic_off_curve", "coef_unreduced", "ic_short"):
        change, message = next((c, m) for n, c, m in CORRUPTIONS if n == case)
        other = _rewrite(_good(tmp_path), tmp_path / f"{case}.zkey", change)
        with pytest.raises(FormatError, match=message):
            read_zkey(other, check_points=False)


def test_truncated_file(tmp_path):
    data = _good_bytes()
    (tmp_path / "circuit.zkey").write_bytes(data[:-100])
    with pytest.raises(FormatError, match=r"circuit\.zkey: section 7 truncated \(expected 640 bytes, found 540\)"):
        read_zkey(tmp_path / "circuit.zkey")


def test_not_a_zkey(tmp_path):
    (tmp_path / "w.zkey").write_bytes(b"wtns" + bytes(8))
    with pytest.raises(FormatError, match=r"w\.zkey: not a \.zkey file \(magic b'wtns'"):
        read_zkey(tmp_path / "w.zkey")


# -- snarkjs's keys -------------------------------------------------------------------------


@pytest.mark.snarkjs
@pytest.mark.parametrize("name", SMALL)
def test_matches_snarkjs_export_json(fixtures, snarkjs, tmp_path, name):
    fx = fixtures[name]
    z = read_zkey(fx.zkey)
    snarkjs.run("zkey", "export", "json", fx.zkey, tmp_path / "zkey.json")
    d = read_json(tmp_path / "zkey.json")
    assert (d["protocol"], d["n8q"], int(d["q"]), d["n8r"], int(d["r"])) == ("groth16", z.n8q, z.q, z.n8r, z.r)
    assert (d["nVars"], d["nPublic"], d["domainSize"], d["power"]) == (z.n_vars, z.n_public, z.domain_size, z.power)
    for key, P, enc in (("vk_alpha_1", z.alpha_1, g1_to_json), ("vk_beta_1", z.beta_1, g1_to_json),
                        ("vk_beta_2", z.beta_2, g2_to_json), ("vk_gamma_2", z.gamma_2, g2_to_json),
                        ("vk_delta_1", z.delta_1, g1_to_json), ("vk_delta_2", z.delta_2, g2_to_json)):
        assert d[key] == enc(P), key
    assert d["IC"] == [g1_to_json(P) for P in z.IC]
    assert d["A"] == [g1_to_json(P) for P in z.A]
    assert d["B1"] == [g1_to_json(P) for P in z.B1]
    assert d["B2"] == [g2_to_json(P) for P in z.B2]
    # snarkjs indexes C by wire: the public wires' slots are empty.
    assert d["C"] == [None] * (z.n_public + 1) + [g1_to_json(P) for P in z.C]
    assert d["hExps"] == [g1_to_json(P) for P in z.H]
    assert d["ccoefs"] == [{"matrix": c.matrix, "constraint": c.constraint, "signal": c.signal,
                            "value": str(c.value)} for c in z.coefs]


@pytest.mark.snarkjs
def test_round_trip_byte_for_byte(fx, tmp_path):
    for src in (fx.zkey0, fx.zkey):
        z = read_zkey(src)
        write_zkey(tmp_path / "out.zkey", z)
        assert (tmp_path / "out.zkey").read_bytes() == src.read_bytes(), src


@pytest.mark.snarkjs
def test_coefs_are_the_r1cs(fx):
    """Section 4 is A and B of the .r1cs, constraint by constraint (A's terms, then B's),
    then snarkjs's rows A[nConstraints + i][i] = 1 for the constant and public wires."""
    r1cs, z = read_r1cs(fx.r1cs), read_zkey(fx.zkey)
    assert (z.curve, z.n_vars, z.n_public) == (r1cs.curve, r1cs.n_wires, r1cs.n_public)
    total = r1cs.n_constraints + r1cs.n_public
    assert z.domain_size == 1 << total.bit_length()  # snarkjs: 2^(floor(log2(total)) + 1)
    per_row = [[] for _ in range(r1cs.n_constraints)]
    for m, M in ((0, r1cs.A), (1, r1cs.B)):
        for row, col, k in M.triples():
            per_row[row].append(Coef(m, row, col, k))
    expected = [c for row in per_row for c in row]
    expected += [Coef(0, r1cs.n_constraints + i, i, 1) for i in range(r1cs.n_public + 1)]
    assert list(z.coefs) == expected


@pytest.mark.snarkjs
@pytest.mark.parametrize("name", ["multi_public", "multi_public_bls", "no_public"])
def test_snarkjs_proves_with_a_key_we_wrote(fixtures, snarkjs, tmp_path, name):
    """A contribution done here: delta -> k·delta, C -> C/k, H -> H/k (what ``snarkjs zkey
    contribute`` does), written by write_zkey. snarkjs must export, prove and verify with it."""
    fx = fixtures[name]
    z = read_zkey(fx.zkey)
    curve, rng = z.curve, random.Random(name)
    r = z.r
    k = rng.randrange(2, r)
    k_inv = pow(k, -1, r)
    G1, G2 = group(f"{curve}.g1"), group(f"{curve}.g2")
    new = ZKey(curve, z.n_vars, z.n_public, z.domain_size,
               alpha_1=z.alpha_1, beta_1=z.beta_1, beta_2=z.beta_2, gamma_2=z.gamma_2,
               delta_1=ec.mul(G1, z.delta_1, k), delta_2=ec.mul(G2, z.delta_2, k),
               IC=list(z.IC), coefs=list(z.coefs), A=list(z.A), B1=list(z.B1), B2=list(z.B2),
               C=[ec.mul(G1, P, k_inv) for P in z.C], H=[ec.mul(G1, P, k_inv) for P in z.H])
    ours = tmp_path / "ours.zkey"
    write_zkey(ours, new)
    snarkjs.run("zkey", "export", "verificationkey", ours, tmp_path / "vk.json")
    snarkjs.run("groth16", "prove", ours, fx.wtns, tmp_path / "proof.json", tmp_path / "public.json")
    assert snarkjs.verify_cli(tmp_path / "vk.json", tmp_path / "public.json", tmp_path / "proof.json")
    assert verify(tmp_path / "vk.json", tmp_path / "public.json", tmp_path / "proof.json")
    # The vk we build from our key is the one snarkjs exports from it.
    assert vk_json(read_zkey(ours)) == json.loads((tmp_path / "vk.json").read_text())
    # And the proof does not verify under the original key (delta changed).
    if z.n_vars - z.n_public - 1 > 0:
        assert not verify(fx.vk, tmp_path / "public.json", tmp_path / "proof.json")
    assert [int(v) for v in json.loads((tmp_path / "public.json").read_text())] == \
        list(read_wtns(fx.wtns))[1:1 + z.n_public]


@pytest.mark.snarkjs
def test_files_that_belong_together(fx):
    z = read_zkey(fx.zkey)
    check_witness_for_zkey(z, read_wtns(fx.wtns))
    check_r1cs_for_zkey(z, read_r1cs(fx.r1cs))


@pytest.mark.snarkjs
def test_mismatched_files_name_both(fixtures):
    z = read_zkey(fixtures["multi_public"].zkey)
    w = read_wtns(fixtures["multiplier"].wtns)
    with pytest.raises(FormatError, match=r"multiplier/witness\.wtns and .*multi_public/circuit_final\.zkey "
                                          r"do not match: the witness has 4 values, the key's circuit 14 wires"):
        check_witness_for_zkey(z, w)
    with pytest.raises(FormatError, match="the witness is over the prime .* the key is for bn254"):
        check_witness_for_zkey(z, read_wtns(fixtures["multi_public_bls"].wtns))
    with pytest.raises(FormatError, match=r"range_check\.r1cs and .* do not match: 1322 wires vs nVars = 14"):
        check_r1cs_for_zkey(z, read_r1cs(fixtures["range_check"].r1cs))
    with pytest.raises(FormatError, match="curve bls12_381 vs bn254"):
        check_r1cs_for_zkey(z, read_r1cs(fixtures["multi_public_bls"].r1cs))


@pytest.mark.snarkjs
def test_a_changed_r1cs_is_refused_by_name(fixtures):
    """A .r1cs that differs from the key's coefficient section in one coefficient, one wire
    or one entry is refused, naming what differs."""
    import dataclasses
    fx = fixtures["range_check"]
    z, r = read_zkey(fx.zkey), read_r1cs(fx.r1cs)
    check_r1cs_for_zkey(z, r)
    j = len(r.B) // 2
    words = r.B.coeff_words.copy()
    words[j, 0] ^= 2
    bad = dataclasses.replace(r, B=dataclasses.replace(r.B, coeff_words=words))
    with pytest.raises(FormatError, match=rf"coefficient of wire {r.B.cols[j]} in constraint {r.B.rows[j]} \(B\) "
                                          "differs from the key's"):
        check_r1cs_for_zkey(z, bad)
    cols = r.A.cols.copy()
    cols[0] = (int(cols[0]) + 1) % r.n_wires
    with pytest.raises(FormatError, match="the key's A matrix has an entry at constraint"):
        check_r1cs_for_zkey(z, dataclasses.replace(r, A=dataclasses.replace(r.A, cols=cols)))
    fewer = dataclasses.replace(r.A, rows=r.A.rows[1:], cols=r.A.cols[1:], coeff_words=r.A.coeff_words[1:])
    with pytest.raises(FormatError, match=f"the key holds {len(z.coefs)} entries of A and B, the .r1cs "
                                          f"{len(z.coefs) - 1}"):
        check_r1cs_for_zkey(z, dataclasses.replace(r, A=fewer))


def test_distinct_rows_and_entry_order_against_numpy(monkeypatch):
    """The consistency check's grouping of coefficients (a 64-bit mix, then checked) and its
    entry order (one 64-bit sort key) against numpy's byte-wise unique and lexsort, with
    the fallbacks forced: every row mixing to one value, rows past 2^31."""
    import numpy as np
    from zktensor.groth16.formats import consistency as cons
    rng = np.random.default_rng(3)
    pool = rng.integers(0, 2**32, size=(40, 8), dtype=np.uint32)
    pool[:5, 1:] = 0                                 # small values, and rows equal but for one word
    pool[5:10] = pool[10:15]
    pool[5:10, 7] ^= 1
    words = pool[rng.integers(0, len(pool), size=3000)]

    def check(distinct, which):
        assert np.array_equal(distinct[which], words)
        assert len(np.unique(distinct.view("V32").ravel())) == len(distinct)
        assert len(distinct) == len(np.unique(words.view("V32").ravel()))
    check(*cons._distinct_rows(words))
    monkeypatch.setattr(cons, "_MIX", np.zeros(8, dtype=np.uint64))
    check(*cons._distinct_rows(words))
    for high in (0, 1 << 31):
        m = rng.integers(0, 2, size=5000).astype(np.uint32)
        row = rng.integers(0, 50, size=5000).astype(np.uint32) + np.uint32(high)
        col = rng.integers(0, 50, size=5000).astype(np.uint32)
        assert np.array_equal(cons._entry_order(m, row, col), np.lexsort((col, row, m)))
