"""verification_key.json from a zkey, as snarkjs exports it (vk_alphabeta_12 included)."""
import json

import pytest

from zktensor.algebra import field
from zktensor.groth16.formats import read_zkey
from zktensor.groth16.formats.json_io import dumps, vk_from_json
from tests.oracles.pyecc import bn_seed as _bn_seed, gt_from_snarkjs, gt_to_snarkjs, pairing, pyecc
from zktensor.groth16.formats.gt import snarkjs_gt_exponent
from zktensor.groth16.vk import export_vk, verification_key, vk_json


def test_bn_seed_is_the_bn_parameter():
    q, r = field("bn254.fq").p, field("bn254.fr").p
    x = _bn_seed(q)
    assert 36 * x**4 + 36 * x**3 + 24 * x**2 + 6 * x + 1 == q
    assert 36 * x**4 + 36 * x**3 + 18 * x**2 + 6 * x + 1 == r
    assert snarkjs_gt_exponent("bn254") == 2 * x * (6 * x * x + 3 * x + 1) % r
    assert snarkjs_gt_exponent("bls12_381") == field("bls12_381.fr").p - 3


@pytest.mark.parametrize("curve", ["bn254", "bls12_381"])
def test_gt_basis_change_round_trips(curve):
    from zktensor.algebra.curves import group
    f = pairing(curve, group(f"{curve}.g1").generator, group(f"{curve}.g2").generator)
    t = gt_to_snarkjs(curve, f)
    assert len(t) == 2 and all(len(h) == 3 and all(len(c) == 2 for c in h) for h in t)
    assert gt_from_snarkjs(curve, t) == f ** snarkjs_gt_exponent(curve)
    # e(G1, G2) has order r in GT
    m = pyecc(curve)
    assert f != m.FQ12.one() and f ** field(f"{curve}.fr").p == m.FQ12.one()


@pytest.mark.snarkjs
def test_vk_equals_snarkjs_export(fx, tmp_path):
    z = read_zkey(fx.zkey)
    expected_text = fx.vk.read_text()
    assert vk_json(z) == json.loads(expected_text)
    assert dumps(vk_json(z)) == expected_text
    export_vk(fx.zkey, tmp_path / "verification_key.json")
    assert (tmp_path / "verification_key.json").read_bytes() == fx.vk.read_bytes()
    assert verification_key(z) == vk_from_json(json.loads(expected_text))
