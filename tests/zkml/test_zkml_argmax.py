"""ArgMax: the first largest value's index (torch's rule), ties included, tamper refused."""
import pytest
import torch
from torch import nn

import zktensor.zkml as zk
from zktensor.groth16.r1cs_to_qap import WitnessError
from zktensor.zkml import reference
from zktensor.zkml.quant import quantise_input
from zkml_models import MLP


class ArgMax(nn.Module):
    def forward(self, x):
        return x.argmax(1)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = MLP(16, 8, 5)

    def forward(self, x):
        return self.mlp(x).argmax(dim=1, keepdim=True)


def test_argmax_ties_and_edges():
    c = zk.compile(ArgMax(), torch.zeros(1, 6), input_scale=0, input_bits=3)
    g = torch.Generator().manual_seed(14)
    xs = torch.cat([torch.randint(-4, 4, (200, 6), generator=g), torch.full((1, 6), -4), torch.full((1, 6), 3),
                    torch.tensor([[3, -4, 3, -4, 3, 3], [-4, -4, -4, -4, -4, 3]])]).double()
    ints, _ = c.output(xs)
    assert torch.equal(ints, xs.argmax(1))
    assert torch.equal(ints, reference.run(c.qm, quantise_input(xs, c.options, c.input_shape)))
    for x in xs[[0, 200, 201, 202]]:
        w = c.witness(x)
        c.check(w)
        assert c.r1cs().first_unsatisfied(w) is None


def test_argmax_tie_cannot_pick_a_later_index():
    c = zk.compile(ArgMax(), torch.zeros(1, 4), input_scale=0, input_bits=4)
    x = torch.tensor([1.0, 5.0, 5.0, 2.0])
    w = c.witness(x)
    assert w[1] == 1                                # the output: index 1, the first 5
    e = [b for b in c.sys.wire_blocks if b.name.endswith("one-hot")][0]
    t = [b for b in c.sys.wire_blocks if b.name.endswith("selected value")][0]
    bad = list(w)
    for j, v in ((1, 0), (2, 1)):                   # move the one-hot to the second 5, consistently
        bad[int(c.new_id[e.start + j])] = v
        bad[int(c.new_id[t.start + j])] = 5 * v
    bad[1] = 2
    with pytest.raises(WitnessError, match="gap"):
        c.check(bad)


def test_classifier_with_argmax():
    torch.manual_seed(15)
    m = Classifier().eval()
    c = zk.compile(m, torch.zeros(1, 16), input_scale=4)
    assert c.output_shape == (1,)
    x = torch.rand(20, 16) * 4 - 2
    ints, _ = c.output(x)
    assert torch.equal(ints, reference.run(c.qm, quantise_input(x, c.options, c.input_shape)))
    with torch.no_grad():
        assert float((ints == m(x)).double().mean()) >= 0.9      # quantised vs float classes
    c.check(c.witness_words(x[0]))
