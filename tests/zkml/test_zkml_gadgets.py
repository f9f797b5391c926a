"""Every gadget's output equals the pure-PyTorch integer reference exactly, on random and edge
inputs, and its witness satisfies every constraint (checked by the tensor check and, for the
small ones, by the Python-int oracle of groth16.formats.r1cs)."""
import pytest
import torch

import zktensor.zkml as zk
from zkml_models import CNN, MLP, Identity1, PoolSum, Residual, agree, edge_inputs, with_bn_stats


@pytest.mark.parametrize("relu", [False, True])
def test_rescale_every_input_and_tie(relu):
    # weight 1.0 -> 64 at scale 2^6; input scale 2^4, output 2^2: k = 8, acc = 64·x, so every
    # even x is an exact tie of round-half-up, and x runs over all 256 representable values
    c = zk.compile(Identity1(relu), torch.zeros(1, 1), input_scale=4, input_bits=8, act_scale=2)
    assert c.qm.layers[1].attrs["k"] == 8
    x = torch.arange(-128, 128).double().reshape(-1, 1) / 16
    ints, _ = c.output(x)
    expect = torch.div(64 * torch.arange(-128, 128) + 128, 256, rounding_mode="floor").reshape(-1, 1)
    if relu:
        expect = expect.clamp(min=0)
    assert torch.equal(ints, expect)
    agree(c, x, oracle_check=True)
    # ties round up, also for negative values: -2/16·64 = -8 at scale 2^6 -> -0.5·4 -> 0 (not -1)
    assert int(c.output(torch.tensor([[-2 / 16]]))[0]) == 0
    assert int(c.output(torch.tensor([[-6 / 16]]))[0]) == -1 * (not relu)


def test_mlp_linear_relu():
    torch.manual_seed(1)
    c = zk.compile(MLP(), torch.zeros(1, 64), input_scale=4, act_scale=8)
    agree(c, edge_inputs(c), oracle_check=True)


def test_cnn_conv_bn_pools():
    torch.manual_seed(2)
    m = with_bn_stats(CNN())
    c = zk.compile(m, torch.zeros(1, 1, 8, 8), input_scale=4, act_scale=7)
    x = edge_inputs(c, n_random=4)
    agree(c, x)
    # the folded BatchNorm and fixed point stay close to float inference
    with torch.no_grad():
        assert float((c.output(x)[1] - m(x.float()).double()).abs().max()) < 0.25


def test_residual_and_standalone_relu():
    torch.manual_seed(3)
    c = zk.compile(Residual(), torch.zeros(1, 8), input_scale=5, act_scale=6)
    agree(c, edge_inputs(c), oracle_check=True)


def test_avgpool_scale_folded():
    c = zk.compile(PoolSum(), torch.zeros(1, 2, 4, 4), input_scale=3, act_scale=3)
    assert c.qm.output_scale == 3 + 2          # the 1/4 of the 2x2 pool is two more fractional bits
    x = edge_inputs(c)
    agree(c, x, oracle_check=True)
    assert torch.equal(c.output(x)[1], torch.nn.functional.avg_pool2d(
        torch.round(x * 8) / 8, 2).flatten(1).double())


def test_private_input_is_range_checked():
    torch.manual_seed(4)
    c = zk.compile(MLP(16, 8, 4), torch.zeros(1, 16), input_scale=4, input_visibility="private")
    assert c.counts["public_input"] == 0 and c.counts["private_input"] == 16
    agree(c, edge_inputs(c), oracle_check=True)
    pub = zk.compile(MLP(16, 8, 4), torch.zeros(1, 16), input_scale=4)
    assert c.num_constraints == pub.num_constraints + 16 * (8 + 1)


def test_mlp_constraint_count_is_rescales_only():
    # weights fixed: the linear layers cost nothing; each activation costs its rescale
    # (k remainder bits + b quotient bits + equation + ReLU/output), the input nothing (public)
    c = zk.compile(MLP(), torch.zeros(1, 64), input_scale=4, act_scale=8)
    expect = sum(g["rbits"].numel() + g["qbits"].numel() + 2 * g["out"].numel() for g in c.gadgets.values())
    assert c.num_constraints == expect
