"""Small models and checks shared by the zkml tests (a module of its own name, like groth16's
fixture_support)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from zktensor.zkml import reference
from zktensor.zkml.quant import quantise_input


class MLP(nn.Module):
    def __init__(self, n_in=64, hidden=16, n_out=10):
        super().__init__()
        self.fc1 = nn.Linear(n_in, hidden)
        self.fc2 = nn.Linear(hidden, n_out)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Identity1(nn.Module):
    """y = x (weight exactly 1): its rescale hits every tie of round-half-up."""

    def __init__(self, relu=False):
        super().__init__()
        self.fc = nn.Linear(1, 1)
        self.relu = relu
        with torch.no_grad():
            self.fc.weight.fill_(1.0)
            self.fc.bias.zero_()

    def forward(self, x):
        y = self.fc(x)
        return torch.relu(y) if self.relu else y


class CNN(nn.Module):
    """conv (padding) + BatchNorm + ReLU, max pool, conv (stride 2) + ReLU, avg pool, linear."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.c2 = nn.Conv2d(4, 6, 3, stride=2, padding=1)
        self.fc = nn.Linear(6, 10)

    def forward(self, x):
        y = torch.relu(self.bn(self.c1(x)))
        y = F.max_pool2d(y, 2)
        y = torch.relu(self.c2(y))
        y = F.avg_pool2d(y, 2)
        return self.fc(y.flatten(1))


class Residual(nn.Module):
    """A residual add (scales aligned), then a standalone ReLU (not after a rescale)."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)
        self.out = nn.Linear(8, 3)

    def forward(self, x):
        h = torch.relu(self.a(x))
        return self.out(torch.relu(h + self.b(h)))


class PoolSum(nn.Module):
    """Average pooling straight to the output: its 1/4 stays in the output scale."""

    def forward(self, x):
        return F.avg_pool2d(x, 2).flatten(1)


def with_bn_stats(model: nn.Module, seed: int = 0) -> nn.Module:
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.rand(m.num_features, generator=g) - 0.5)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.bias.data.copy_(torch.rand(m.num_features, generator=g) - 0.5)
    return model.eval()


def digits(n_train=1200):
    """scikit-learn's bundled 8x8 digits (no download): float pixels 0..16."""
    from sklearn.datasets import load_digits
    d = load_digits()
    x = torch.tensor(d.data, dtype=torch.float32)
    y = torch.tensor(d.target, dtype=torch.int64)
    return x[:n_train], y[:n_train], x[n_train:], y[n_train:]


def train(model: nn.Module, x, y, epochs=60, lr=0.02, seed=0) -> nn.Module:
    torch.manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(epochs):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return model.eval()


# -- checks ---------------------------------------------------------------------------------------


def edge_inputs(c, n_random=6, seed=0):
    """zero, the largest and smallest representable inputs, an alternating mix, random ones."""
    o = c.options
    lo, hi = -(1 << (o.input_bits - 1)), (1 << (o.input_bits - 1)) - 1
    shape = c.input_shape
    g = torch.Generator().manual_seed(seed)
    # int64 until the end: float32 would round 2^31 - 1 (32-bit inputs) up, out of range
    xs = [torch.zeros(shape, dtype=torch.int64), torch.full(shape, hi), torch.full(shape, lo),
          torch.where(torch.arange(torch.Size(shape).numel()).reshape(shape) % 2 == 0, hi, lo)]
    xs += [torch.randint(lo, hi + 1, shape, generator=g) for _ in range(n_random)]
    return torch.stack(xs).double() / 2.0 ** o.input_scale


def agree(c, x, oracle_check=False):
    ints, floats = c.output(x)
    ref = reference.run(c.qm, quantise_input(x, c.options, c.input_shape))
    assert torch.equal(ints, ref)
    assert torch.equal(floats, ref.double() / 2.0 ** c.qm.output_scale)
    for j in (0, 1, 2, len(x) - 1):
        words = c.witness_words(x[j])
        c.check(words)
        if oracle_check:
            assert c.r1cs().first_unsatisfied(c.witness(x[j])) is None
