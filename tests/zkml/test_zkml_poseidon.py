"""Poseidon with circomlib's parameters (derived in code) and the private-weight commitment."""
import json
import random
import subprocess

import pytest
import torch

import zktensor.zkml as zk
from zktensor.groth16.r1cs_to_qap import WitnessError
from zktensor.zkml import poseidon as PS
from zktensor.zkml.lc import P
from conftest import node_modules
from zkml_models import CNN, MLP, with_bn_stats

CIRCOMLIBJS = """
const {buildPoseidon} = require("circomlibjs");
const cases = JSON.parse(require("fs").readFileSync(0, "utf8"));
buildPoseidon().then(p => {
  const out = cases.map(c => {
    if (c.chain === undefined) return p.F.toString(p(c.map(BigInt)));
    let e = c.chain.map(BigInt), h = p(e.slice(0, 16)), i = 16;
    while (i < e.length) { h = p([h, ...e.slice(i, i + 15)]); i += 15; }
    return p.F.toString(h);
  });
  console.log(JSON.stringify(out));
  process.exit(0);
});
"""


def circomlibjs(cases):
    mods = node_modules()
    res = subprocess.run(["node", "-e", CIRCOMLIBJS], input=json.dumps(cases), capture_output=True, text=True,
                         cwd=mods.parent, timeout=300, check=True)
    return [int(v) for v in json.loads(res.stdout.strip().splitlines()[-1])]


def test_published_vector():
    # circomlib's test vector for Poseidon([1, 2]) (test/poseidon.js)
    assert PS.poseidon([1, 2]) == 0x115cc0f5e7d690413df64c6b9662e9cf2a3617f2743245519e19607a4417189a


def test_parameter_shapes():
    for t in (2, 3, 17):
        C, M, rf, rp = PS.params(t)
        assert len(C) == (rf + rp) * t and all(0 <= c < P for c in C)
        assert len(M) == t and len(set(x for r in M for x in r)) == t * t    # Cauchy: distinct entries
    with pytest.raises(ValueError, match="1 to 16 inputs"):
        PS.params(18)


@pytest.mark.snarkjs
def test_against_circomlibjs():
    rng = random.Random(7)
    cases = [[rng.randrange(P) for _ in range(n)] for n in range(1, 17)]
    cases += [[0] * 16, [P - 1] * 5]
    assert circomlibjs([[str(v) for v in c] for c in cases]) == [PS.poseidon(c) for c in cases]


def test_private_weights_agree_with_reference_and_commit():
    from zktensor.zkml import reference
    from zktensor.zkml.quant import quantise_input
    torch.manual_seed(8)
    for m, shape in ((MLP(16, 6, 4), (1, 16)), (with_bn_stats(CNN()), (1, 1, 8, 8))):
        c = zk.compile(m, torch.zeros(shape), input_scale=4, weights="private")
        x = torch.rand(3, *shape[1:]) * 4
        ref = reference.run(c.qm, quantise_input(x, c.options, c.input_shape))
        assert torch.equal(c.output(x)[0], ref)
        fixed = zk.compile(m, torch.zeros(shape), input_scale=4)
        assert torch.equal(fixed.output(x)[0], ref)        # same quantised model, either visibility
        w = c.witness(x[0])
        c.check(w)
        # the commitment is the last public output, and the chain over the packed weights
        assert w[c.counts["output"]] == c.commitment
        vals = c.private.packed_values()
        h = PS.poseidon(vals[:16])
        for i in range(16, len(vals), 15):
            h = PS.poseidon([h] + vals[i:i + 15])
        assert h == c.commitment


def test_tampered_weight_or_commitment_refused():
    torch.manual_seed(9)
    c = zk.compile(MLP(16, 6, 4), torch.zeros(1, 16), input_scale=4, weights="private")
    w = c.witness(torch.ones(16))
    bad = list(w)
    bad[c.counts["output"]] = (bad[c.counts["output"]] + 1) % P
    with pytest.raises(WitnessError, match="poseidon hash .*: output"):
        c.check(bad)
    # a weight bit flipped: its products, or the packing, no longer agree
    bits = c.private.streams[0][0]
    bad = list(w)
    i = int(c.new_id[int(bits[0, 0])])
    bad[i] ^= 1
    with pytest.raises(WitnessError, match="layer 1 linear"):
        c.check(bad)


@pytest.mark.snarkjs
def test_commitment_matches_circomlibjs():
    torch.manual_seed(10)
    c = zk.compile(MLP(32, 12, 4), torch.zeros(1, 32), input_scale=4, weights="private")
    vals = c.private.packed_values()
    assert len(vals) > 16                                   # exercises the chain
    assert circomlibjs([{"chain": [str(v) for v in vals]}]) == [c.commitment]
