"""proof.json / public.json / verification_key.json in snarkjs's exact layout."""
import json
import subprocess

import pytest

from fixture_support import BUILD
from zktensor.groth16.formats import FormatError, read_proof, read_public, read_vk
from zktensor.groth16.formats.json_io import (Proof, dumps, g1_from_json, g2_from_json,
                                              parse_int, proof_from_json, proof_to_json,
                                              public_to_json, vk_from_json, vk_to_json,
                                              write_proof, write_public, write_vk)


def test_dumps_matches_bfj_layout():
    # What bfj.write(..., {space: 1}) produced for these values (snarkjs 0.7.6's bfj 7).
    assert dumps([]) == "[\n]"
    assert dumps({}) == "{\n}"
    assert dumps({"a": [], "b": {}, "c": [[]]}) == '{\n "a": [\n ],\n "b": {\n },\n "c": [\n  [\n  ]\n ]\n}'
    assert dumps(["1", "2"]) == '[\n "1",\n "2"\n]'
    assert dumps({"d": 'x"y\u00e9\n', "e": 1.5, "f": None, "g": True}) == \
        '{\n "d": "x\\"y\u00e9\\n",\n "e": 1.5,\n "f": null,\n "g": true\n}'


def test_parse_int_forms():
    assert parse_int("123", "x") == 123
    assert parse_int("0x1f", "x") == 31
    assert parse_int(7, "x") == 7
    for bad in ("1.5", "", " 1", "abc", True, None, 1.0, ["1"]):
        with pytest.raises(FormatError, match="x: expected a decimal"):
            parse_int(bad, "x")


def test_points_from_json():
    assert g1_from_json(["1", "2", "1"], "p") == (1, 2)
    assert g1_from_json(["0", "1", "0"], "p") is None
    assert g2_from_json([["1", "2"], ["3", "4"], ["1", "0"]], "p") == ((1, 2), (3, 4))
    assert g2_from_json([["0", "0"], ["1", "0"], ["0", "0"]], "p") is None
    with pytest.raises(FormatError, match="z = 2"):
        g1_from_json(["1", "2", "2"], "p")
    with pytest.raises(FormatError, match="expected a list of 3"):
        g1_from_json(["1", "2"], "p")


PROOF = {"pi_a": ["1", "2", "1"], "pi_b": [["1", "2"], ["3", "4"], ["1", "0"]],
         "pi_c": ["5", "6", "1"], "protocol": "groth16", "curve": "bn128"}


def test_proof_round_trip_and_key_order(tmp_path):
    p = proof_from_json(PROOF)
    assert p == Proof("bn254", (1, 2), ((1, 2), (3, 4)), (5, 6))
    assert list(proof_to_json(p)) == ["pi_a", "pi_b", "pi_c", "protocol", "curve"]
    assert proof_to_json(p) == PROOF
    write_proof(tmp_path / "proof.json", p)
    assert read_proof(tmp_path / "proof.json") == p
    assert json.loads((tmp_path / "proof.json").read_text()) == PROOF


@pytest.mark.parametrize("change, message", [
    (lambda d: d.pop("pi_b"), "missing pi_b"),
    (lambda d: d.update(protocol="plonk"), "not groth16"),
    (lambda d: d.update(curve="bn254x"), "unknown curve"),
    (lambda d: d.update(pi_a=["1", "x", "1"]), r"pi_a\[1\]: expected a decimal"),
    (lambda d: d.update(pi_b=[["1", "2"], ["3", "4"]]), "pi_b: expected a list of 3"),
])
def test_malformed_proof_names_file(tmp_path, change, message):
    d = json.loads(json.dumps(PROOF))
    change(d)
    path = tmp_path / "bad_proof.json"
    path.write_text(json.dumps(d))
    with pytest.raises(FormatError, match=message) as e:
        read_proof(path)
    assert str(path) in str(e.value)


def test_not_json_names_file(tmp_path):
    path = tmp_path / "public.json"
    path.write_text('["1", ')
    with pytest.raises(FormatError, match="public.json: not valid JSON"):
        read_public(path)
    path.write_text('{"a": 1}')
    with pytest.raises(FormatError, match="expected a list of public signals"):
        read_public(path)


def test_public_round_trip(tmp_path):
    write_public(tmp_path / "public.json", [0, 5, 2**254])
    assert (tmp_path / "public.json").read_text() == f'[\n "0",\n "5",\n "{2**254}"\n]'
    assert read_public(tmp_path / "public.json") == [0, 5, 2**254]
    write_public(tmp_path / "empty.json", [])
    assert (tmp_path / "empty.json").read_text() == "[\n]"


def test_vk_count_checked():
    vk = {"protocol": "groth16", "curve": "bn128", "nPublic": 2, "vk_alpha_1": ["1", "2", "1"],
          "vk_beta_2": PROOF["pi_b"], "vk_gamma_2": PROOF["pi_b"], "vk_delta_2": PROOF["pi_b"],
          "IC": [["1", "2", "1"]]}
    with pytest.raises(FormatError, match=r"IC must hold nPublic \+ 1 = 3 points, has 1"):
        vk_from_json(vk)


# -- against snarkjs's own files ------------------------------------------------------


@pytest.mark.snarkjs
def test_round_trip_snarkjs_files_byte_for_byte(fx, tmp_path):
    for name, read, write in (("proof.json", read_proof, write_proof),
                              ("public.json", read_public, write_public),
                              ("verification_key.json", read_vk, write_vk)):
        original = (fx.dir / name).read_bytes()
        write(tmp_path / name, read(fx.dir / name))
        assert (tmp_path / name).read_bytes() == original, f"{fx.name}/{name}"


@pytest.mark.snarkjs
def test_vk_key_order(fixtures):
    d = json.loads(fixtures["multiplier"].vk.read_text())
    assert list(vk_to_json(vk_from_json(d))) == list(d) == [
        "protocol", "curve", "nPublic", "vk_alpha_1", "vk_beta_2", "vk_gamma_2", "vk_delta_2",
        "vk_alphabeta_12", "IC"]


@pytest.mark.snarkjs
def test_dumps_matches_bfj_itself(fixtures, tmp_path):
    """Odd shapes through the bfj snarkjs uses, compared byte for byte."""
    value = {"a": [], "b": {}, "c": [[], [[]], {"x": []}], "d": ["1", ["2", ["3"]]],
             "e": "quote\" back\\slash é", "n": 12, "z": [{}]}
    out = tmp_path / "bfj.json"
    script = ("const bfj = require(process.argv[1]);"
              "bfj.write(process.argv[2], JSON.parse(process.argv[3]), {space: 1})"
              ".then(() => process.exit(0));")
    subprocess.run(["node", "-e", script, str(BUILD / "node_modules" / "bfj"), str(out),
                    json.dumps(value)], check=True, timeout=60)
    assert dumps(value) == out.read_text(encoding="utf-8")
    assert public_to_json([1, 2]) == ["1", "2"]


# -- hostile files and what snarkjs accepts ---------------------------------------------


@pytest.mark.parametrize("text, message", [
    ("[" * 100000 + "]" * 100000, "nested deeper than 32"),
    ("[" * 5000, "nested deeper than 32"),
    (("[" * 32 + "]") * 5000, "nested deeper than 32"),       # no run of 33 openers, yet 155,000 deep
    ('["1", NaN]', "not valid JSON"),
    ("\ufeff[]", "not valid JSON"),
    ("[" + "9" * 5000 + "]", r"\[0\]: a number of 5000 digits, out of range"),
    ('["' + "9" * 5000 + '"]', r"\[0\]: a number of 5000 digits, out of range"),
    ('["-1"]', "expected a decimal number string"),
    ("[1.5]", "1.5 is not an integer"),
    ("[1e999]", "Infinity is not an integer"),
])
def test_hostile_public_json_is_one_line_naming_the_file(tmp_path, text, message):
    path = tmp_path / "public.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FormatError, match=message) as e:
        read_public(path)
    assert str(e.value).startswith(str(path)) and "\n" not in str(e.value) and len(str(e.value)) < 400


def test_json_size_bound_and_not_utf8(tmp_path, monkeypatch):
    from zktensor.groth16.formats import json_io
    path = tmp_path / "proof.json"
    path.write_bytes(b'["\xff"]')
    with pytest.raises(FormatError, match="proof.json: not valid JSON .not UTF-8"):
        read_proof(path)
    monkeypatch.setattr(json_io, "MAX_JSON_BYTES", 10)
    path.write_text('["1", "2", "3"]')
    with pytest.raises(FormatError, match="proof.json: 15 bytes, more than the 10"):
        read_proof(path)


def test_leading_zeros_and_hex_are_numbers():
    assert parse_int("0" * 6000 + "7", "x") == 7
    assert parse_int("0x00ff", "x") == 255


def test_coordinates_as_json_numbers_are_refused_like_snarkjs(tmp_path):
    d = json.loads(json.dumps(PROOF))
    d["pi_a"][0] = 1
    path = tmp_path / "proof.json"
    path.write_text(json.dumps(d))
    with pytest.raises(FormatError, match=r"proof.json: pi_a\[0\]: .*JSON number 1"):
        read_proof(path)


def test_rapidsnark_proof_without_curve(tmp_path):
    d = {k: v for k, v in PROOF.items() if k != "curve"}
    path = tmp_path / "proof.json"
    path.write_text(json.dumps(d))
    p = read_proof(path)
    assert p.curve is None and p.pi_a == (1, 2)
    assert "curve" not in proof_to_json(p)


def test_vk_npublic_as_number_or_string():
    vk = {"protocol": "groth16", "curve": "bn128", "nPublic": 0, "vk_alpha_1": ["1", "2", "1"],
          "vk_beta_2": PROOF["pi_b"], "vk_gamma_2": PROOF["pi_b"], "vk_delta_2": PROOF["pi_b"],
          "IC": [["1", "2", "1"]]}
    from zktensor.groth16.formats.json_io import loads
    assert vk_from_json(loads(json.dumps(vk), "vk.json")).n_public == 0
    vk["nPublic"] = "0"
    assert vk_from_json(vk).n_public == 0
    vk["nPublic"] = 2 ** 40
    with pytest.raises(FormatError, match="nPublic: 1099511627776 is out of range"):
        vk_from_json(vk)


def test_public_json_numbers_read_as_javascript_does(tmp_path):
    path = tmp_path / "public.json"
    path.write_text("[33, 1e2, 9007199254740993, 0]")
    assert read_public(path) == [33, 100, 9007199254740992, 0]
