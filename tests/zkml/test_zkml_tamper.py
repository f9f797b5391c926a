"""Soundness: a tampered witness is refused by the witness check, which names the failing
constraint; the Python-int oracle (groth16.formats.r1cs) finds the same first failure."""
import pytest
import torch

import zktensor.zkml as zk
from zktensor.groth16.r1cs_to_qap import WitnessError
from zktensor.zkml.lc import P
from zkml_models import MLP


@pytest.fixture(scope="module")
def case():
    torch.manual_seed(5)
    c = zk.compile(MLP(16, 6, 4), torch.zeros(1, 16), input_scale=4, act_scale=6)
    x = torch.linspace(-3, 3, 16).reshape(1, 16)
    w = c.witness(x)
    c.check(w)
    return c, x, w


def fid(c, creation_id) -> int:
    """File-order index of a wire made with this creation id."""
    return int(c.new_id[int(creation_id)])


def refused(c, w, *words):
    with pytest.raises(WitnessError) as e:
        c.check(w)
    msg = str(e.value)
    for s in words:
        assert s in msg, msg
    assert c.r1cs().first_unsatisfied(w) == e.value.constraint
    return msg


def test_wrong_output(case):
    c, x, w = case
    for j in range(c.counts["output"]):
        bad = list(w)
        i = 1 + j                                   # the public outputs follow the constant wire
        bad[i] = (bad[i] + 1) % P
        refused(c, bad, "layer 3 linear", "output = q")


def test_wrong_remainder(case):
    c, _, w = case
    g = c.gadgets[1]                                # fc1's rescale (ReLU fused)
    for e in range(0, g["rbits"].shape[0], 2):
        bad = list(w)
        i = fid(c, g["rbits"][e, 0])
        bad[i] ^= 1                                 # still a bit, but y + h != 2^k·q + r
        refused(c, bad, "layer 1 linear", "rescale equation")


def test_flipped_relu_sign_bit(case):
    c, _, w = case
    g = c.gadgets[1]
    b = g["qbits"].shape[1]
    for e in range(g["qbits"].shape[0]):
        bad = list(w)
        bad[fid(c, g["qbits"][e, b - 1])] ^= 1
        refused(c, bad, "layer 1 linear", "rescale equation")


def test_relu_output_not_from_sign(case):
    c, _, w = case
    g = c.gadgets[1]
    bad = list(w)
    bad[fid(c, g["out"][0])] = (bad[fid(c, g["out"][0])] + 1) % P
    refused(c, bad, "relu (sign bit × magnitude)")


def test_out_of_range_quotient(case):
    # q' = q + 2^b with r' = r - 2^(k+b): the rescale equation still holds, but the quotient's
    # top bit becomes 3 and the remainder's top bit r_(k-1) - 2^(b+1): only booleanity catches it
    c, _, w = case
    g = c.gadgets[3]                                # the output layer's rescale
    k, b = g["rbits"].shape[1], g["qbits"].shape[1]
    bad = list(w)
    iq, ir = fid(c, g["qbits"][0, b - 1]), fid(c, g["rbits"][0, k - 1])
    bad[iq] = (bad[iq] + 2) % P                     # + 2·2^(b-1) = + 2^b
    bad[ir] = (bad[ir] - (1 << (b + 1))) % P        # 2^(k-1)·(-2^(b+1)) = -2^(k+b)
    # the output wire must follow q' for the equation "output = q" too
    io = fid(c, g["out"][0])
    bad[io] = (bad[io] + (1 << b)) % P
    msg = refused(c, bad, "layer 3 linear")
    assert "remainder bits" in msg or "quotient bits" in msg


def test_max_pool_difference_bits():
    from zkml_models import CNN, with_bn_stats
    torch.manual_seed(13)
    c = zk.compile(with_bn_stats(CNN()), torch.zeros(1, 1, 8, 8), input_scale=4)
    w = c.witness(torch.rand(1, 8, 8) * 3)
    blocks = [b for b in c.sys.wire_blocks if "difference bits" in b.name]
    assert blocks
    b = blocks[0]
    m = b.n // 64                                   # bits per difference: 4 channels x 4 x 4 maxima
    for e in (0, m - 1, m, 2 * m - 1):              # low and sign bits of two differences
        bad = list(w)
        bad[fid(c, b.start + e)] ^= 1               # d + 2^(m-1) != Σ 2^i bit_i
        refused(c, bad, "max", "difference equation")
