"""The front end's less common forms, each exact against the integer reference: a constant bias
added after a matrix product (folded, or an addconst layer), BatchNorm1d folded into Linear,
bias-less mm/matmul/Linear, MaxPool with a stride other than its kernel, rescales that scale up."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import zktensor.zkml as zk
from zkml_models import Identity1, agree, edge_inputs


def ops(c) -> list[str]:
    return [L.op for L in c.qm.layers]


class MatmulBias(nn.Module):
    """x @ W + b with W and b plain parameters (no nn.Linear): mm, then add."""

    def __init__(self, n_in=12, n_out=5, bias_first=False):
        super().__init__()
        g = torch.Generator().manual_seed(20)
        self.W = nn.Parameter(torch.randn(n_in, n_out, generator=g) * 0.3)
        self.b = nn.Parameter(torch.randn(n_out, generator=g))
        self.bias_first = bias_first

    def forward(self, x):
        return self.b + x @ self.W if self.bias_first else x @ self.W + self.b


def test_matmul_plus_constant_bias_is_folded():
    for bias_first in (False, True):
        m = MatmulBias(bias_first=bias_first).eval()
        c = zk.compile(m, torch.zeros(1, 12), input_scale=4, act_scale=6)
        assert ops(c) == ["input", "linear"]                 # the add became the layer's bias
        agree(c, edge_inputs(c), oracle_check=not bias_first)
        # the same model as nn.Linear: the same quantised layer, the same circuit size
        lin = nn.Linear(12, 5).eval()
        with torch.no_grad():
            lin.weight.copy_(m.W.T)
            lin.bias.copy_(m.b)
        ref = zk.compile(lin, torch.zeros(1, 12), input_scale=4, act_scale=6)
        assert torch.equal(c.qm.layers[1].attrs["b_int"], ref.qm.layers[1].attrs["b_int"])
        assert c.num_constraints == ref.num_constraints
        x = edge_inputs(c)
        assert torch.equal(c.output(x)[0], ref.output(x)[0])
        with torch.no_grad():
            assert float((c.output(x)[1] - m(x.float()).double()).abs().max()) < 0.25


class ConvConstants(nn.Module):
    """Bias-less conv + a per-channel parameter - 0.5 (both folded), ReLU, then a per-element
    constant (not foldable after a ReLU: an addconst layer), max pool with stride 1."""

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(21)
        self.conv = nn.Conv2d(1, 3, 3, bias=False)
        self.cb = nn.Parameter(torch.randn(3, 1, 1, generator=g))
        self.shift = nn.Parameter(torch.randn(1, 3, 4, 4, generator=g) * 0.5)

    def forward(self, x):
        y = torch.relu(self.conv(x) + self.cb - 0.5)
        return F.max_pool2d(y + self.shift, 2, stride=1).flatten(1)


def test_conv_constants_folded_or_added():
    torch.manual_seed(22)
    m = ConvConstants().eval()
    c = zk.compile(m, torch.zeros(1, 1, 6, 6), input_scale=4, act_scale=6)
    assert ops(c) == ["input", "conv", "relu", "addconst", "maxpool", "reshape"]
    assert c.qm.layers[2].inputs == [1] and 1 in c.qm.fused          # the ReLU still fuses
    assert torch.allclose(c.qm.layers[1].attrs["bias"], m.cb.reshape(-1) - 0.5)
    x = edge_inputs(c)
    agree(c, x, oracle_check=True)
    with torch.no_grad():
        assert float((c.output(x)[1] - m(x.float()).double()).abs().max()) < 0.25


class Shared(nn.Module):
    """The linear output is read twice: the constant cannot go into its bias."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 4)

    def forward(self, x):
        y = self.fc(x)
        return (y + 0.75) + y


def test_constant_not_folded_into_a_shared_output():
    torch.manual_seed(23)
    c = zk.compile(Shared().eval(), torch.zeros(1, 6), input_scale=4, act_scale=5)
    assert ops(c) == ["input", "linear", "addconst", "add"]
    assert c.qm.layers[2].attrs["c_int"].tolist() == [24] * 4         # 0.75 at scale 2^5
    agree(c, edge_inputs(c), oracle_check=True)


class BN1d(nn.Module):
    def __init__(self, bias: bool):
        super().__init__()
        self.fc = nn.Linear(10, 6, bias=bias)
        self.bn = nn.BatchNorm1d(6)
        self.out = nn.Linear(6, 3)

    def forward(self, x):
        return self.out(torch.relu(self.bn(self.fc(x))))


@pytest.mark.parametrize("bias", [True, False])
def test_batchnorm1d_folded_into_linear(bias):
    torch.manual_seed(24)
    m = BN1d(bias)
    g = torch.Generator().manual_seed(25)
    m.bn.running_mean.copy_(torch.rand(6, generator=g) - 0.5)
    m.bn.running_var.copy_(torch.rand(6, generator=g) + 0.5)
    with torch.no_grad():
        m.bn.weight.copy_(torch.rand(6, generator=g) + 0.5)
        m.bn.bias.copy_(torch.rand(6, generator=g) - 0.5)
    m.eval()
    c = zk.compile(m, torch.zeros(1, 10), input_scale=4, act_scale=7)
    assert ops(c) == ["input", "linear", "relu", "linear"]
    x = edge_inputs(c)
    agree(c, x, oracle_check=True)
    with torch.no_grad():
        assert float((c.output(x)[1] - m(x.float()).double()).abs().max()) < 0.25


class Biasless(nn.Module):
    def __init__(self, how: str):
        super().__init__()
        g = torch.Generator().manual_seed(26)
        self.how = how
        self.W = nn.Parameter(torch.randn(8, 4, generator=g) * 0.4)
        self.fc = nn.Linear(8, 4, bias=False)

    def forward(self, x):
        if self.how == "mm":
            return torch.mm(x, self.W)
        if self.how == "matmul":
            return torch.matmul(x, self.W)
        return self.fc(x)


@pytest.mark.parametrize("how", ["mm", "matmul", "linear"])
def test_biasless_products(how):
    torch.manual_seed(27)
    c = zk.compile(Biasless(how).eval(), torch.zeros(1, 8), input_scale=4, act_scale=6)
    assert ops(c) == ["input", "linear"] and c.qm.layers[1].attrs["bias"] is None
    assert int(c.qm.layers[1].attrs["b_int"].abs().sum()) == 0
    agree(c, edge_inputs(c), oracle_check=True)


class Pool(nn.Module):
    def __init__(self, kernel, stride):
        super().__init__()
        self.kernel, self.stride = kernel, stride

    def forward(self, x):
        return F.max_pool2d(x, self.kernel, stride=self.stride).flatten(1)


@pytest.mark.parametrize("kernel,stride", [(3, 2), (2, 1), ((2, 3), (3, 1))])
def test_maxpool_stride_not_kernel(kernel, stride):
    c = zk.compile(Pool(kernel, stride), torch.zeros(1, 2, 7, 7), input_scale=3, input_bits=6)
    x = edge_inputs(c)
    agree(c, x, oracle_check=True)
    assert torch.equal(c.output(x)[1], F.max_pool2d(torch.round(x * 8) / 8, kernel, stride=stride).flatten(1)
                       .double())


@pytest.mark.parametrize("relu", [False, True])
def test_rescale_scaling_up(relu):
    # weight 1.0 -> 64 at scale 2^6 and an input at scale 2^0 give an accumulator at 2^6; the
    # activations at 2^10 need a left shift by 4 (k = -4): exact, no remainder bits
    c = zk.compile(Identity1(relu), torch.zeros(1, 1), input_scale=0, input_bits=8, act_scale=10)
    assert c.qm.layers[1].attrs["k"] == -4 and c.gadgets[1]["rbits"].shape[1] == 0
    x = torch.arange(-128, 128).double().reshape(-1, 1)
    ints, floats = c.output(x)
    expect = x.to(torch.int64) << 10
    assert torch.equal(ints, expect.clamp(min=0) if relu else expect)
    assert torch.equal(floats, x.clamp(min=0) if relu else x)
    agree(c, x, oracle_check=True)


def test_rescale_scaling_up_in_an_mlp():
    from zkml_models import MLP
    torch.manual_seed(28)
    c = zk.compile(MLP(16, 8, 4), torch.zeros(1, 16), input_scale=0, act_scale=16)
    assert [L.attrs["k"] < 0 for L in c.qm.layers if L.op == "linear"] == [True, False]   # up, then down
    agree(c, edge_inputs(c), oracle_check=True)


class SubActs(nn.Module):
    def forward(self, x):
        return x - torch.relu(x)


class ConstMinus(nn.Module):
    def forward(self, x):
        return 1.0 - x


class Widening(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Parameter(torch.zeros(3, 4))

    def forward(self, x):
        return x + self.c


def test_refused_additions_are_named():
    with pytest.raises(zk.UnsupportedError, match=r"only a plain addition.*aten\.sub"):
        zk.compile(SubActs(), torch.zeros(1, 4))
    with pytest.raises(zk.UnsupportedError, match=r"constant minus an activation.*aten\.rsub|constant minus"):
        zk.compile(ConstMinus(), torch.zeros(1, 4))
    with pytest.raises(zk.UnsupportedError, match=r"constant of shape \[3, 4\].*shape \[4\]"):
        zk.compile(Widening(), torch.zeros(1, 4))
