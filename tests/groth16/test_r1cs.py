""".r1cs reader: against snarkjs's own reading, witnesses, and corrupt files."""
import json
import struct

import pytest

from zktensor.algebra import field
from zktensor.groth16.formats import FormatError, read_r1cs, read_wtns
from zktensor.groth16.formats.binfile import encode_binfile

R = field("bn254.fr").p


def encode_r1cs(constraints, *, n_wires, n_pub_out=1, n_pub_in=0, n_prv_in=1, prime=R, n8=32,
                extra=b"", map_=None, header_prime=None):
    """A .r1cs as circom writes it. constraints: [(A, B, C)] with {wire: coeff} dicts."""
    header = (struct.pack("<I", n8) + (header_prime or prime).to_bytes(n8, "little")
              + struct.pack("<IIIIQI", n_wires, n_pub_out, n_pub_in, n_prv_in, n_wires, len(constraints)))
    body = []
    for lcs in constraints:
        for lc in lcs:
            body.append(struct.pack("<I", len(lc)))
            for wire, coeff in lc.items():
                body.append(struct.pack("<I", wire) + coeff.to_bytes(n8, "little"))
    wmap = map_ if map_ is not None else b"".join(struct.pack("<Q", i) for i in range(n_wires))
    return b"".join(encode_binfile(b"r1cs", 1, [(1, header), (2, b"".join(body) + extra), (3, wmap)]))


# w = [1, out, a, b, t]: constraints a*b = t, t*(a + 2) = out.
CONSTRAINTS = [({2: 1}, {3: 1}, {4: 1}), ({4: 1}, {2: 1, 0: 2}, {1: 1})]
WITNESS = [1, 6 * 5, 3, 2, 6]  # a=3, b=2, t=6, out=t*(a+2)=30


def test_synthetic(tmp_path):
    p = tmp_path / "c.r1cs"
    p.write_bytes(encode_r1cs(CONSTRAINTS, n_wires=5, n_prv_in=2))
    r = read_r1cs(p)
    assert (r.curve, r.n_wires, r.n_public, r.n_constraints, r.n_prv_in) == ("bn254", 5, 1, 2, 2)
    assert [r.constraint(i) for i in range(2)] == [tuple(c) for c in CONSTRAINTS]
    assert sorted(r.B.triples()) == [(0, 3, 1), (1, 0, 2), (1, 2, 1)]
    assert r.first_unsatisfied(WITNESS) is None
    assert r.first_unsatisfied([1, 30, 3, 2, 7]) == 0
    assert r.first_unsatisfied([1, 31, 3, 2, 6]) == 1
    assert r.first_unsatisfied([2, 30, 3, 2, 6]) == 0
    assert list(r.wire_to_label) == list(range(5))
    with pytest.raises(ValueError, match="witness has 4 values"):
        r.first_unsatisfied(WITNESS[:4])


@pytest.mark.parametrize("kwargs, message", [
    (dict(extra=b"\0" * 4), "section 2 has 4 unexpected trailing bytes after 2 constraints"),
    (dict(n_wires=4, map_=b"\0" * 32), r"constraint 1: A refers to wire 4, the circuit has 4"),
    (dict(constraints=[({2: R}, {3: 1}, {4: 1})]), "constraint 0: A coefficient of wire 2 is not reduced"),
    (dict(prime=field("bn254.fq").p), "is not the scalar field of bn254 or bls12_381"),
    (dict(map_=b"\0" * 8), r"section 3 \(wire-to-label map of 5 wires\) has 8 bytes, expected 40"),
    (dict(n_pub_out=3, n_prv_in=2), "5 wires cannot hold"),
])
def test_corrupt(tmp_path, kwargs, message):
    args = dict(constraints=CONSTRAINTS, n_wires=5, n_prv_in=2)
    args.update(kwargs)
    p = tmp_path / "bad.r1cs"
    p.write_bytes(encode_r1cs(args.pop("constraints"), **args))
    with pytest.raises(FormatError, match=message) as e:
        read_r1cs(p)
    assert str(e.value).startswith(str(p))


def test_truncated_constraints(tmp_path):
    data = encode_r1cs(CONSTRAINTS, n_wires=5, n_prv_in=2)
    # Cut the constraints section's payload (and fix its size) so the container is fine.
    p = tmp_path / "cut.r1cs"
    hdr_end = 12 + 12 + 64  # file header, section 1's header and its 64 bytes
    size = struct.unpack_from("<Q", data, hdr_end + 4)[0]
    payload = data[hdr_end + 12:hdr_end + 12 + size]
    p.write_bytes(b"".join(encode_binfile(b"r1cs", 1, [
        (1, data[24:hdr_end]), (2, payload[:-10]), (3, b"\0" * 40)])))
    with pytest.raises(FormatError, match=r"cut\.r1cs: section 2 truncated in constraint 1 \(of 2\)"):
        read_r1cs(p)
    (tmp_path / "short.r1cs").write_bytes(data[:-20])
    with pytest.raises(FormatError, match=r"short\.r1cs: section 3 truncated \(expected 40 bytes, found 20\)"):
        read_r1cs(tmp_path / "short.r1cs")


def _first_cut_combination(payload: bytes, n8: int, n_constraints: int):
    """(constraint, matrix, terms or None) of the first combination a cut payload does not
    hold (terms None: its count is missing), by a plain walk over the bytes."""
    pos = 0
    for c in range(n_constraints):
        for m in range(3):
            if pos + 4 > len(payload):
                return c, m, None
            (count,) = struct.unpack_from("<I", payload, pos)
            pos += 4 + count * (4 + n8)
            if pos > len(payload):
                return c, m, count
    return None


def test_every_cut_of_the_constraints_names_its_combination(tmp_path):
    """The constraints section cut at every length (the container's sizes fixed): the error
    names the constraint, and the matrix and its terms where the count was read."""
    constraints = CONSTRAINTS + [({}, {}, {}), ({1: 3, 2: 4, 3: 5}, {0: 1}, {4: 7, 1: 2})]
    data = encode_r1cs(constraints, n_wires=5, n_prv_in=2)
    hdr_end = 12 + 12 + 64
    size = struct.unpack_from("<Q", data, hdr_end + 4)[0]
    payload = data[hdr_end + 12:hdr_end + 12 + size]
    for cut in range(len(payload)):
        p = tmp_path / f"cut{cut}.r1cs"
        p.write_bytes(b"".join(encode_binfile(b"r1cs", 1, [
            (1, data[24:hdr_end]), (2, payload[:cut]), (3, b"\0" * 40)])))
        c, m, terms = _first_cut_combination(payload[:cut], 32, len(constraints))
        want = rf"section 2 truncated in constraint {c} \(of {len(constraints)}\)"
        if terms is not None:
            want += rf": {'ABC'[m]} has {terms} terms"
        with pytest.raises(FormatError, match=want):
            read_r1cs(p)
    r = read_r1cs_bytes(tmp_path, data)
    assert [r.constraint(i) for i in range(len(constraints))] == [tuple(c) for c in constraints]


def read_r1cs_bytes(tmp_path, data: bytes):
    p = tmp_path / "whole.r1cs"
    p.write_bytes(data)
    return read_r1cs(p)


# -- circom's files ---------------------------------------------------------------------


@pytest.mark.snarkjs
def test_matches_snarkjs(fx, snarkjs, tmp_path):
    r = read_r1cs(fx.r1cs)
    snarkjs.run("r1cs", "export", "json", fx.r1cs, tmp_path / "r1cs.json")
    d = json.loads((tmp_path / "r1cs.json").read_text())
    assert r.curve == fx.curve and r.prime == int(d["prime"]) and r.n8 == d["n8"]
    assert (r.n_wires, r.n_pub_out, r.n_pub_in, r.n_prv_in, r.n_labels, r.n_constraints) == (
        d["nVars"], d["nOutputs"], d["nPubInputs"], d["nPrvInputs"], d["nLabels"], d["nConstraints"])
    assert r.n_public == d["nOutputs"] + d["nPubInputs"]
    # Every constraint, as {wire: coeff} dicts (the JSON does not keep term order).
    ours = [[{}, {}, {}] for _ in range(r.n_constraints)]
    for m, M in enumerate((r.A, r.B, r.C)):
        for row, col, k in M.triples():
            assert col not in ours[row][m]
            ours[row][m][col] = k
    theirs = [[{int(w): int(v) for w, v in lc.items()} for lc in c] for c in d["constraints"]]
    assert ours == theirs
    assert list(r.wire_to_label) == d["map"]


@pytest.mark.snarkjs
def test_witness_satisfies(fx):
    r = read_r1cs(fx.r1cs)
    w = list(read_wtns(fx.wtns, prime=r.prime))
    assert r.first_unsatisfied(w) is None
    # Change a private wire that some constraint uses: the first constraint using it fails.
    wire = int(r.C.cols[-1]) if len(r.C) else int(r.A.cols[-1])
    bad = list(w)
    bad[wire] = (bad[wire] + 1) % r.prime
    first = r.first_unsatisfied(bad)
    assert first is not None
    for i in range(first):  # the ones before still hold, checked by hand
        a, b, c = r.constraint(i)
        ev = [sum(k * bad[j] for j, k in lc.items()) for lc in (a, b, c)]
        assert (ev[0] * ev[1] - ev[2]) % r.prime == 0


@pytest.mark.snarkjs
def test_range_check_witness_is_mostly_bits(fixtures):
    w = list(read_wtns(fixtures["range_check"].wtns))
    assert sum(v in (0, 1) for v in w) > 0.9 * len(w)


@pytest.mark.snarkjs
def test_sizes(fixtures):
    r = read_r1cs(fixtures["poseidon_like"].r1cs)
    assert 2048 <= r.n_constraints + r.n_public < 4096  # snarkjs domain 2^12
    r = read_r1cs(fixtures["range_check"].r1cs)
    assert 300 <= r.n_constraints <= 2000
    assert read_r1cs(fixtures["no_public"].r1cs).n_public == 0
    mp = read_r1cs(fixtures["multi_public"].r1cs)
    assert mp.n_pub_in >= 2 and mp.n_pub_out >= 2
    assert read_r1cs(fixtures["multi_public_bls"].r1cs).curve == "bls12_381"
