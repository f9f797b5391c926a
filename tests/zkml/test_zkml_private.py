"""Private weights: exact against the integer reference on edge inputs (zero, the largest and the
smallest representable), and a witness with tampered weights, products or commitment refused,
naming the constraint (the Python-int oracle finds the same one)."""
import pytest
import torch

import zktensor.zkml as zk
from zktensor.groth16.r1cs_to_qap import WitnessError
from zktensor.zkml.lc import P
from zkml_models import CNN, MLP, agree, edge_inputs, with_bn_stats


@pytest.mark.parametrize("which", ["mlp", "cnn"])
def test_private_weights_edge_inputs(which):
    torch.manual_seed(30)
    m, shape = (MLP(16, 6, 4), (1, 16)) if which == "mlp" else (with_bn_stats(CNN()), (1, 1, 8, 8))
    for vis in ("public", "private"):
        c = zk.compile(m, torch.zeros(shape), input_scale=4, act_scale=6, weights="private", input_visibility=vis)
        x = edge_inputs(c, n_random=2)
        agree(c, x)
        fixed = zk.compile(m, torch.zeros(shape), input_scale=4, act_scale=6)
        assert torch.equal(c.output(x)[0], fixed.output(x)[0])        # the same quantised model


def refused(c, w, *words):
    with pytest.raises(WitnessError) as e:
        c.check(w)
    for s in words:
        assert s in str(e.value), str(e.value)
    assert c.r1cs().first_unsatisfied(w) == e.value.constraint
    return str(e.value)


def block(c, suffix):
    blocks = [b for b in c.sys.wire_blocks if b.name.endswith(suffix)]
    assert blocks, suffix
    return blocks


def fid(c, creation_id) -> int:
    return int(c.new_id[int(creation_id)])


@pytest.fixture(scope="module")
def private_mlp():
    torch.manual_seed(31)
    m = MLP(16, 6, 4).eval()
    c = zk.compile(m, torch.zeros(1, 16), input_scale=4, weights="private")
    x = torch.linspace(-3, 3, 16)
    w = c.witness(x)
    c.check(w)
    return m, c, x, w


def test_tampered_product_refused(private_mlp):
    _, c, _, w = private_mlp
    assert {v["scheme"] for v in c.products.values()} == {"plain"}     # a Linear layer: plain products
    for b in block(c, "weight × input products"):
        for e in (0, b.n - 1):
            bad = list(w)
            i = fid(c, b.start + e)
            bad[i] = (bad[i] + 1) % P
            refused(c, bad, "weight × input products")


def test_tampered_weight_bit_refused(private_mlp):
    _, c, _, w = private_mlp
    for b in block(c, "private weight bits"):
        bad = list(w)
        i = fid(c, b.start + 3)
        bad[i] = 2                                  # not a bit
        refused(c, bad, "private weight bits")


def other_weights(m):
    """The model with one weight moved by one quantisation step: the same circuit (scales and
    bias widths unchanged), other weights."""
    m2 = MLP(16, 6, 4)
    m2.load_state_dict(m.state_dict())
    with torch.no_grad():
        w = m2.fc1.weight
        i = int(w.abs().argmin())
        w.view(-1)[i] += 2.0 ** -7 * (1 if float(w.view(-1)[i]) <= 0 else -1)
    return m2.eval()


def test_other_weights_need_another_commitment(private_mlp):
    m, c, x, w = private_mlp
    c2 = zk.compile(other_weights(m), torch.zeros(1, 16), input_scale=4, weights="private")
    r1, r2 = c.r1cs(), c2.r1cs()
    for A, B in ((r1.A, r2.A), (r1.B, r2.B), (r1.C, r2.C)):     # one circuit: only the witness differs
        assert (A.rows == B.rows).all() and (A.cols == B.cols).all() and (A.coeff_words == B.coeff_words).all()
    w2 = c2.witness(x)
    c.check(w2)                                     # other weights prove ... under their own commitment
    n_out = c.counts["output"]
    assert w2[n_out] == c2.commitment != c.commitment
    bad = list(w2)
    bad[n_out] = c.commitment                       # ... not under this one
    refused(c, bad, "poseidon hash", "output")
    # the other weights' bits and products with this model's packed weights and hash chain:
    # the packing constraint ties the bits to the hashed elements
    keep = {b.name for b in c.sys.wire_blocks if b.name == "packed weights" or b.name.startswith("poseidon")
            or b.name == "weight commitment"}
    mixed = list(w2)
    for b in c.sys.wire_blocks:
        if b.name in keep:
            for j in range(b.start, b.start + b.n):
                mixed[fid(c, j)] = w[fid(c, j)]
    refused(c, mixed, "private weights: packing")


def test_cnn_tampered_conv_and_pools():
    torch.manual_seed(32)
    c = zk.compile(with_bn_stats(CNN()), torch.zeros(1, 1, 8, 8), input_scale=4, weights="fixed")
    w = c.witness(torch.rand(1, 8, 8) * 3 - 1)
    c.check(w)
    convs = [i for i, L in enumerate(c.qm.layers) if L.op == "conv"]
    for i in convs:
        g = c.gadgets[i]
        where = f"layer {i} conv"
        for e in (0, g["rbits"].shape[0] - 1):
            bad = list(w)
            bad[fid(c, g["rbits"][e, 0])] ^= 1                      # still a bit, the equation fails
            refused(c, bad, where, "rescale equation")
            bad = list(w)
            o = fid(c, g["out"][e])
            bad[o] = (bad[o] + 1) % P                                # a ReLU output not from its sign
            refused(c, bad, where, "relu (sign bit × magnitude)")
    # the average pool read by the Linear layer has wires of its own, tied to its sums
    pooled = block(c, "pooled sums")[0]
    bad = list(w)
    j = fid(c, pooled.start)
    bad[j] = (bad[j] + 1) % P
    refused(c, bad, "avgpool", "pooled sums: equals its value")
    # the max pool's selected difference: another value than sign × difference
    t = block(c, "selected difference")[0]
    for e in (0, t.n - 1):
        bad = list(w)
        i = fid(c, t.start + e)
        bad[i] = (bad[i] + 1) % P
        refused(c, bad, "maxpool", "sign × difference")


def test_cnn_private_weights_tampered_product_and_weight():
    torch.manual_seed(33)
    c = zk.compile(with_bn_stats(CNN()), torch.zeros(1, 1, 8, 8), input_scale=4, weights="private")
    w = c.witness(torch.rand(1, 8, 8) * 3 - 1)
    c.check(w)
    convs = [i for i, L in enumerate(c.qm.layers) if L.op == "conv"]
    assert all(c.products[i]["scheme"] == "paired" for i in convs)     # weights reused at every position
    kinds = ("paired products", "weight pairs", "input pairs", "(the odd one)")
    seen = set()
    for i in convs:
        prefix = f"layer {i} conv"
        for b in c.sys.wire_blocks:
            if not b.name.startswith(prefix):
                continue
            kind = [k for k in kinds if k in b.name]
            if not kind:
                continue
            seen.add(kind[0])
            for e in (0, b.n - 1):                           # a shifted product one off: its constraint
                bad = list(w)
                j = fid(c, b.start + e)
                bad[j] = (bad[j] - 1) % P
                refused(c, bad, prefix, kind[0])
    assert seen == set(kinds)               # 1x3x3 and 4x3x3 kernels: odd fans, pairs of both kinds
    # a weight bit flipped (still a bit): the first paired product using it fails
    bits = [b for b in block(c, "private weight bits") if b.name.startswith(f"layer {convs[0]} conv")][0]
    bad = list(w)
    bad[fid(c, bits.start)] ^= 1
    refused(c, bad, f"layer {convs[0]} conv", "paired products")


class OneConv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 3, 3)

    def forward(self, x):
        return self.conv(x).flatten(1)


def test_paired_products_only_within_the_exact_range():
    # 32-bit inputs: a paired factor (w + x) squared could pass 2^62, so the layer keeps plain
    # products; 8-bit inputs pair. Both exact against the integer reference.
    torch.manual_seed(34)
    m = OneConv().eval()
    for bits, scheme in ((32, "plain"), (8, "paired")):
        c = zk.compile(m, torch.zeros(1, 1, 5, 5), input_scale=0, input_bits=bits, act_scale=0, weights="private")
        assert c.products[1]["scheme"] == scheme
        agree(c, edge_inputs(c, n_random=2))
