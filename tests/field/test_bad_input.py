"""Bad input gets a clear error, never a wrong value or a crash in a kernel."""
import pytest
import torch

import zktensor as zt


@pytest.fixture
def F():
    return zt.field("bn254.fr")


def test_out_of_range_ints(F):
    with pytest.raises(ValueError, match="outside"):
        F.tensor([F.p])
    with pytest.raises(ValueError, match="outside"):
        F.tensor([1, -1])
    with pytest.raises(TypeError, match="ints"):
        F.tensor([1.5])
    with pytest.raises(TypeError, match="ints"):
        F.tensor([True])
    with pytest.raises(ValueError, match="ragged"):
        F.tensor([[1, 2], [3]])


def test_bytes(F):
    with pytest.raises(ValueError, match="32-byte"):
        F.from_bytes(b"\x00" * 33)
    with pytest.raises(ValueError, match="element 1 is not below p"):
        F.from_bytes((5).to_bytes(32, "little") + F.p.to_bytes(32, "little"))
    G = zt.field("bls12_381.fq")
    x = G.tensor([7, G.p - 1])
    assert len(x.to_bytes()) == 96 and G.from_bytes(x.to_bytes()).to_ints() == [7, G.p - 1]
    M = zt.field("mnt4753.fr")
    assert len(M.tensor([1]).to_bytes()) == 96


def test_mixing_fields(F):
    G = zt.field("bls12_381.fr")
    with pytest.raises(TypeError, match="cannot mix"):
        F.tensor([1]) + G.tensor([1])
    with pytest.raises(TypeError, match="cannot mix"):
        zt.jit(lambda a, b: a * b)(F.tensor([1]), G.tensor([1]))
    with pytest.raises(TypeError):
        F.tensor([1]) + 1.0
    with pytest.raises(TypeError, match="FieldTensors"):
        zt.jit(lambda a: a)(5)


def test_zero_inverse(F):
    with pytest.raises(ZeroDivisionError, match="index"):
        F.tensor([1, 0, 2]).inverse()
    with pytest.raises(ZeroDivisionError):
        zt.batch_inverse(F.tensor([3, 4, 0]))


def test_bad_shapes_and_options(F):
    with pytest.raises(RuntimeError):
        F.tensor([1, 2, 3]) * F.tensor([1, 2])
    with pytest.raises(ValueError, match="unknown strategy"):
        with zt.config(strategy="int16"):
            F.tensor([1]) * F.tensor([2])
    with pytest.raises(TypeError, match="unknown config"):
        with zt.config(blocks=4):
            pass
    with pytest.raises(ValueError, match="int32 of shape"):
        zt.FieldTensor(F, torch.zeros(4, dtype=torch.int32))


def test_shapes_broadcast_index_cat(F):
    m = F.tensor([[1, 2], [3, 4]])
    v = F.tensor([10, 20])
    assert (m * v).to_ints() == [[10, 40], [30, 80]]
    assert (m + 1).to_ints() == [[2, 3], [4, 5]]
    assert m[:, 1].to_ints() == [2, 4] and m[1, 0].to_ints() == 3
    assert zt.cat([m, m], dim=1).to_ints() == [[1, 2, 1, 2], [3, 4, 3, 4]]
    assert zt.stack([v, v]).to_ints() == [[10, 20], [10, 20]]
    assert (m == m).all() and not (m == v).all()
    t = m.clone()
    t[0] = v
    assert t.to_ints() == [[10, 20], [3, 4]]
    assert F.zeros((2, 3)).to_ints() == [[0] * 3] * 2 and F.ones(2).to_ints() == [1, 1]
    g = torch.Generator().manual_seed(0)
    r = F.random((5, 7), generator=g)
    assert all(0 <= x < F.p for row in r.to_ints() for x in row)
    assert F.random(5, generator=torch.Generator().manual_seed(9)).to_ints() == \
        F.random(5, generator=torch.Generator().manual_seed(9)).to_ints()
