"""Bad models and bad inputs get one clear error naming the problem."""
import pytest
import torch
from torch import nn

import zktensor.zkml as zk
from zkml_models import MLP


class Sigmoidal(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.act = nn.Sigmoid()

    def forward(self, x):
        return self.act(self.fc(x))


class DataDependentWeights(nn.Module):
    def forward(self, x):
        return x @ x.T


def test_unsupported_layer_named_with_location():
    with pytest.raises(zk.UnsupportedError, match=r"unsupported operator: aten\.sigmoid.* at 'act' \(Sigmoid\)"):
        zk.compile(Sigmoidal(), torch.zeros(1, 4))
    with pytest.raises(zk.UnsupportedError, match=r"aten\.permute.* at the forward of DataDependentWeights"):
        zk.compile(DataDependentWeights(), torch.zeros(1, 4))


def test_avgpool_area_not_power_of_two():
    m = nn.Sequential(nn.AvgPool2d(3), nn.Flatten())
    with pytest.raises(zk.UnsupportedError, match=r"9 values.*power of two.*'0' \(AvgPool2d\)"):
        zk.compile(m, torch.zeros(1, 1, 6, 6))


def test_batch_dimension_and_options():
    with pytest.raises(zk.UnsupportedError, match="leading batch dimension of 1"):
        zk.compile(MLP(), torch.zeros(2, 64))
    with pytest.raises(TypeError, match="float tensor"):
        zk.compile(MLP(), torch.zeros(1, 64, dtype=torch.int64))
    with pytest.raises(TypeError, match="unknown option"):
        zk.compile(MLP(), torch.zeros(1, 64), input_scal=3)
    with pytest.raises(ValueError, match="weights must be"):
        zk.compile(MLP(), torch.zeros(1, 64), weights="public")


@pytest.fixture(scope="module")
def circuit():
    torch.manual_seed(0)
    return zk.compile(MLP(8, 4, 2), torch.zeros(1, 8), input_scale=4, input_bits=8)


def test_wrong_dtype(circuit):
    with pytest.raises(TypeError, match="complex"):
        circuit.output(torch.zeros(8, dtype=torch.complex64))
    with pytest.raises(TypeError, match="torch.bool"):
        circuit.output(torch.zeros(8, dtype=torch.bool))
    with pytest.raises(TypeError, match="tensor of numbers"):
        circuit.output(["a"] * 8)


def test_wrong_shape(circuit):
    with pytest.raises(ValueError, match=r"shape \[9\], the circuit takes \[8\]"):
        circuit.output(torch.zeros(9))
    with pytest.raises(ValueError, match="a witness is for one input"):
        circuit.witness(torch.zeros(2, 8))


def test_out_of_range_values(circuit):
    # 8 signed bits at scale 2^4: [-8, 7.9375]
    circuit.output(torch.full((8,), 7.9375))
    circuit.output(torch.full((8,), -8.0))
    x = torch.zeros(8)
    x[3] = 8.0
    with pytest.raises(ValueError, match=r"input value 8.0 at index \[0, 3\] is out of range.*\[-8.0, 7.9375\]"):
        circuit.output(x)
    with pytest.raises(ValueError, match="NaN"):
        circuit.output(torch.full((8,), float("nan")))


def test_bounds_that_could_wrap_are_refused():
    # 32-bit inputs at scale 2^30 times 32-bit weights over 64 features: past 2^62
    with pytest.raises(zk.BoundError, match="beyond 2\\^62"):
        zk.compile(MLP(), torch.zeros(1, 64), input_bits=32, input_scale=30, weight_bits=32, act_scale=8)
