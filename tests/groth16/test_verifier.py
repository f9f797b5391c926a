"""The verifier: simulated instances (no node), and snarkjs's proofs with snarkjs as the oracle."""
import copy
import json
import random

import pytest

from fixture_support import SMALL
from zktensor.algebra import field
from zktensor.algebra.curves import group, in_subgroup, is_on_curve
from zktensor.groth16.formats import FormatError, read_zkey
from zktensor.groth16.formats.json_io import (Proof, VerificationKey, proof_to_json, public_to_json,
                                              read_json, vk_to_json)
from tests.oracles.pyecc import g1_from_pyecc, g1_to_pyecc, g2_from_pyecc, g2_to_pyecc, pyecc
from zktensor.groth16.verifier import verify

CURVES = ["bn254", "bls12_381"]


def mul1(curve, k, P=None):
    m = pyecc(curve)
    G = group(f"{curve}.g1").generator if P is None else P
    return g1_from_pyecc(curve, m.multiply(g1_to_pyecc(curve, G), k))


def mul2(curve, k, Q=None):
    m = pyecc(curve)
    G = group(f"{curve}.g2").generator if Q is None else Q
    return g2_from_pyecc(curve, m.multiply(g2_to_pyecc(curve, G), k))


def simulated(curve, n_public=3, seed=0):
    """A valid (vk, public, proof) made with the trapdoor: pick alpha, beta, gamma, delta,
    IC_i = u_i·G1, A = a·G1, B = b·G2, then C = c·G1 with
    a·b = alpha·beta + gamma·(u_0 + sum x_i·u_i) + delta·c."""
    rng = random.Random(seed)
    r = field(f"{curve}.fr").p
    al, be, ga, de, a, b = (rng.randrange(1, r) for _ in range(6))
    u = [rng.randrange(1, r) for _ in range(n_public + 1)]
    x = [rng.randrange(r) for _ in range(n_public)]
    ux = (u[0] + sum(xi * ui for xi, ui in zip(x, u[1:]))) % r
    c = (a * b - al * be - ga * ux) * pow(de, -1, r) % r
    vk = VerificationKey(curve, n_public, mul1(curve, al), mul2(curve, be), mul2(curve, ga),
                         mul2(curve, de), tuple(mul1(curve, ui) for ui in u), None)
    return vk, x, Proof(curve, mul1(curve, a), mul2(curve, b), mul1(curve, c))


@pytest.fixture(scope="module", params=CURVES)
def instance(request):
    return simulated(request.param)


def test_accepts_valid(instance, tmp_path):
    vk, x, proof = instance
    assert verify(vk, x, proof) is True
    # As dicts from JSON, and as files.
    assert verify(vk_to_json(vk), public_to_json(x), proof_to_json(proof))
    for name, obj in (("vk.json", vk_to_json(vk)), ("public.json", public_to_json(x)),
                      ("proof.json", proof_to_json(proof))):
        (tmp_path / name).write_text(json.dumps(obj))
    assert verify(tmp_path / "vk.json", str(tmp_path / "public.json"), tmp_path / "proof.json")


def _neg1(curve, P):
    return (P[0], (field(f"{curve}.fq").p - P[1]))


def test_rejects_wrong_proofs(instance):
    vk, x, p = instance
    curve, q, r = vk.curve, field(f"{vk.curve}.fq").p, field(f"{vk.curve}.fr").p
    G1 = group(f"{curve}.g1").generator
    wrong = {
        "public + 1": (x[:-1] + [(x[-1] + 1) % r], p),
        "public + r": (x[:-1] + [x[-1] + r], p),
        "public < 0": ([-1] + x[1:], p),
        "swap A and C": (x, Proof(curve, p.pi_c, p.pi_b, p.pi_a)),
        "-A": (x, Proof(curve, _neg1(curve, p.pi_a), p.pi_b, p.pi_c)),
        "C + G": (x, Proof(curve, p.pi_a, p.pi_b, g1_from_pyecc(curve, pyecc(curve).add(
            g1_to_pyecc(curve, p.pi_c), g1_to_pyecc(curve, G1))))),
        "A off curve": (x, Proof(curve, (p.pi_a[0], (p.pi_a[1] + 1) % q), p.pi_b, p.pi_c)),
        "A x + q": (x, Proof(curve, (p.pi_a[0] + q, p.pi_a[1]), p.pi_b, p.pi_c)),
        "B x0 <-> x1": (x, Proof(curve, p.pi_a, ((p.pi_b[0][1], p.pi_b[0][0]), p.pi_b[1]), p.pi_c)),
        "A = infinity": (x, Proof(curve, None, p.pi_b, p.pi_c)),
        "B = infinity": (x, Proof(curve, p.pi_a, None, p.pi_c)),
    }
    for name, (pub, proof) in wrong.items():
        assert verify(vk, pub, proof) is False, name


def _non_subgroup_point(curve, which):
    """A point on the curve (E(Fq) or the twist) that is not in the order-r subgroup."""
    G = group(f"{curve}.{which}")
    F = G.F
    for i in range(1, 100):
        xx = F.elem(i) if which == "g1" else F.elem(i, 1)
        y = F.sqrt(F.add(F.mul(F.mul(xx, xx), xx), G.b))
        if y is not None:
            P = (xx, y)
            assert is_on_curve(G, P)
            if not in_subgroup(G, P):
                return P
    raise AssertionError("no point found")


@pytest.mark.parametrize("curve, which", [("bn254", "g2"), ("bls12_381", "g1"), ("bls12_381", "g2")])
def test_rejects_points_outside_the_subgroup(curve, which):
    vk, x, p = simulated(curve, n_public=1, seed=3)
    T = _non_subgroup_point(curve, which)
    proof = Proof(curve, p.pi_a, T, p.pi_c) if which == "g2" else Proof(curve, T, p.pi_b, p.pi_c)
    assert verify(vk, x, proof) is False


def test_malformed_or_mismatched_inputs_raise(instance):
    vk, x, p = instance
    with pytest.raises(ValueError, match="public signals: 2 public signals, verification key expects 3"):
        verify(vk, x[:2], p)
    with pytest.raises(ValueError, match="expects 3"):
        verify(vk, x + [1], p)
    other = "bls12_381" if vk.curve == "bn254" else "bn254"
    with pytest.raises(ValueError, match=f"the proof is for {other}"):
        verify(vk, x, Proof(other, None, None, None))
    bad_vk = VerificationKey(vk.curve, vk.n_public, (vk.alpha_1[0], vk.alpha_1[1] + 1), vk.beta_2,
                             vk.gamma_2, vk.delta_2, vk.IC, None)
    with pytest.raises(FormatError, match="vk_alpha_1 is not a point of"):
        verify(bad_vk, x, p)
    # key_checked: the caller vouches for the key's points (a prover's validated key), so
    # they are not tested again; the proof still fails against the wrong key
    assert verify(bad_vk, x, p, key_checked=True) is False
    assert verify(vk, x, p, key_checked=True) is True
    d = proof_to_json(p)
    del d["pi_c"]
    with pytest.raises(FormatError, match="missing pi_c"):
        verify(vk, x, d)
    with pytest.raises(FormatError, match=r"public signals\[0\]: expected a decimal"):
        verify(vk, ["0x", "1", "2"], p)


@pytest.mark.parametrize("curve", CURVES)
def test_vk_x_every_way_agrees_with_pyecc(curve):
    """vk_x by the compiled Straus, on Python ints and by the MSM (BN254: its kernels are
    those the prover uses): py_ecc's sum, for small, large and 'negative' (r - k) signals,
    a zero and an identity among the IC."""
    from zktensor.groth16.verifier import vk_x
    from zktensor.kernels import pairing_cpu
    vk, _, _ = simulated(curve, n_public=6, seed=7)
    r = field(f"{curve}.fr").p
    IC = vk.IC[:3] + (None,) + vk.IC[4:]
    vk = VerificationKey(curve, 6, vk.alpha_1, vk.beta_2, vk.gamma_2, vk.delta_2, IC, None)
    pub = [5, r - 3, random.Random(1).randrange(r), 0, 7, r - 1]
    m = pyecc(curve)
    want = g1_to_pyecc(curve, IC[0])
    for s, P in zip(pub, IC[1:]):
        want = m.add(want, m.multiply(g1_to_pyecc(curve, P), s))
    want = g1_from_pyecc(curve, want)
    ways = ["python"] + (["compiled"] if pairing_cpu.compiled(curve, build=True) is not None else []) + \
        (["msm"] if curve == "bn254" else [])
    for way in ways:
        assert vk_x(vk, pub, way=way) == want, way
    assert vk_x(vk, pub) == want


def test_no_public_signals():
    vk, x, p = simulated("bn254", n_public=0, seed=5)
    assert x == [] and verify(vk, [], p)
    assert not verify(vk, [], Proof("bn254", p.pi_c, p.pi_b, p.pi_a))


# -- snarkjs's proofs, snarkjs as the oracle ---------------------------------------------


@pytest.mark.snarkjs
def test_accepts_snarkjs_proofs(fx, snarkjs):
    assert verify(fx.vk, fx.public, fx.proof) is True
    assert snarkjs.verify_cli(fx.vk, fx.public, fx.proof) is True
    # The proving key serves as a verification key too.
    assert verify(read_zkey(fx.zkey), read_json(fx.public), read_json(fx.proof)) is True


def _tampered(fx, others):
    """(name, public, proof) variants of a fixture's proof, as JSON values."""
    pub, proof = read_json(fx.public), read_json(fx.proof)
    q = field(f"{fx.curve}.fq").p
    r = field(f"{fx.curve}.fr").p
    out = []

    def variant(name, change, pub_change=None):
        p2, pub2 = copy.deepcopy(proof), copy.deepcopy(pub)
        if change:
            change(p2)
        if pub_change:
            pub_change(pub2)
        out.append((name, pub2, p2))

    inc = lambda v, k=1: str((int(v) + k) % q)  # noqa: E731
    variant("pi_a.x + 1", lambda p: p["pi_a"].__setitem__(0, inc(p["pi_a"][0])))
    variant("pi_a.y + 1", lambda p: p["pi_a"].__setitem__(1, inc(p["pi_a"][1])))
    variant("pi_c.y + 1", lambda p: p["pi_c"].__setitem__(1, inc(p["pi_c"][1])))
    variant("pi_b.x0 + 1", lambda p: p["pi_b"][0].__setitem__(0, inc(p["pi_b"][0][0])))
    variant("pi_b.y1 + 1", lambda p: p["pi_b"][1].__setitem__(1, inc(p["pi_b"][1][1])))
    variant("pi_b x0 <-> x1", lambda p: p["pi_b"].__setitem__(0, p["pi_b"][0][::-1]))
    variant("swap A and C", lambda p: p.update(pi_a=p["pi_c"], pi_c=p["pi_a"]))
    variant("-A", lambda p: p["pi_a"].__setitem__(1, str(q - int(p["pi_a"][1]))))
    variant("-A, -B", lambda p: (p["pi_a"].__setitem__(1, str(q - int(p["pi_a"][1]))),
                                 p["pi_b"].__setitem__(1, [str(q - int(v)) for v in p["pi_b"][1]])))
    variant("A = infinity", lambda p: p.update(pi_a=["0", "1", "0"]))
    if pub:
        variant("public[0] + 1", None, lambda s: s.__setitem__(0, str((int(s[0]) + 1) % r)))
        variant("public[-1] + r", None, lambda s: s.__setitem__(-1, str(int(s[-1]) + r)))
        if pub != pub[::-1]:
            variant("public reversed", None, lambda s: s.reverse())
    for o in others:
        out.append((f"proof of {o.name}", pub, read_json(o.proof)))
    return out


@pytest.mark.snarkjs
def test_tampered_proofs_agree_with_snarkjs(fixtures, snarkjs, tmp_path):
    """Our verdict is snarkjs's for every tampered proof (all fixtures, one node process)."""
    cases, names = [], []
    for fx in (fixtures[n] for n in SMALL):  # the verifier's cost is per pairing, not per circuit
        vk = read_json(fx.vk)
        others = [o for o in fixtures.values() if o.curve == fx.curve and o.name != fx.name][:1]
        for name, pub, proof in _tampered(fx, others):
            cases.append((vk, pub, proof))
            names.append(f"{fx.name}: {name}")
    theirs = snarkjs.verify_many(cases, tmp_path)
    ours = [verify(*case) for case in cases]
    disagree = [(n, o, t) for n, o, t in zip(names, ours, theirs) if o != t]
    assert not disagree
    # Groth16 proofs are malleable: (-A, -B, C) is a valid proof too (e(-A, -B) = e(A, B)).
    assert [n for n, o in zip(names, ours) if o] == [n for n in names if n.endswith("-A, -B")]


@pytest.mark.snarkjs
def test_stricter_than_snarkjs_on_unreduced_coordinates(fixtures, snarkjs, tmp_path):
    """x + q names the same point to snarkjs (it reduces); we refuse it (malleability)."""
    fx = fixtures["multiplier"]
    vk, pub, proof = read_json(fx.vk), read_json(fx.public), read_json(fx.proof)
    q = field("bn254.fq").p
    proof["pi_a"][0] = str(int(proof["pi_a"][0]) + q)
    assert snarkjs.verify_many([(vk, pub, proof)], tmp_path) == [True]
    assert verify(vk, pub, proof) is False


@pytest.mark.snarkjs
def test_rapidsnark_proof_and_json_numbers_as_snarkjs(fixtures, snarkjs, tmp_path):
    """rapidsnark's proof.json names no curve: it verifies (the key's curve). Small public
    signals written as JSON numbers: snarkjs takes them (a double holds them exactly), and so
    do we. A coordinate written as a JSON number: snarkjs says the proof is invalid, we refuse
    the file (FormatError; the CLI exits 2)."""
    from zktensor.cli import main
    fx = fixtures["multiplier"]
    proof = read_json(fx.proof)
    del proof["curve"]
    (tmp_path / "rs_proof.json").write_text(json.dumps(proof))
    assert verify(fx.vk, fx.public, tmp_path / "rs_proof.json") is True
    assert snarkjs.verify_cli(fx.vk, fx.public, tmp_path / "rs_proof.json") is True
    pub = json.loads(fx.public.read_text())
    (tmp_path / "num_public.json").write_text("[" + ", ".join(pub) + "]")
    text = fx.proof.read_text()
    x = json.loads(text)["pi_a"][0]
    (tmp_path / "num_proof.json").write_text(text.replace(f'"{x}"', x, 1))
    # small public signals as numbers: snarkjs takes them (a double holds them exactly)
    assert snarkjs.verify_cli(fx.vk, tmp_path / "num_public.json", fx.proof) is True
    assert verify(fx.vk, tmp_path / "num_public.json", fx.proof) is True
    # a coordinate as a number: snarkjs says invalid, we refuse the file
    assert snarkjs.verify_cli(fx.vk, fx.public, tmp_path / "num_proof.json") is False
    with pytest.raises(FormatError, match="JSON number"):
        verify(fx.vk, fx.public, tmp_path / "num_proof.json")
    assert main(["verify", str(fx.vk), str(fx.public), str(tmp_path / "num_proof.json")]) == 2
