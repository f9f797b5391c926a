"""Every field x operation x strategy x target, exactly against Python integers.

One fused program per case computes all the operations at once (so each case
compiles one kernel), on random values plus edge values (0, 1, p-1, R mod p,
2^32-1, 2^k ± 1). The CPU target runs every strategy, also with its vector
and IFMA lowerings switched off; the Triton kernels run under the interpreter
(TRITON_INTERPRET=1) on the CPU.
"""
import random

import pytest
import torch

import zktensor as zt

from tests.field.values import sample

LOOP_EXP = 2 ** 40 + 2 ** 33 + 12345      # two 32-bit chunks: the scf.for lowering of pow


def everything(a, b):
    return a + b, a - b, a * b, -a, a.square(), a ** 5, a * b - b * b + 3, b - a + a


def expected(p, x, y):
    return [(x + y) % p, (x - y) % p, x * y % p, -x % p, x * x % p, pow(x, 5, p),
            (x * y - y * y + 3) % p, y]


def check_program(name, n, strategy, target, fn=everything, oracle=expected, seed=1):
    F = zt.field(name)
    xs = sample(F.p, n, seed)
    ys = xs[:]
    random.Random(seed + 1).shuffle(ys)
    with zt.config(strategy=strategy, target=target):
        a, b = F.tensor(xs), F.tensor(ys)
        assert a.to_ints() == xs and b.to_ints() == ys          # to_mont / from_mont
        outs = zt.jit(fn)(a, b)
        outs = outs if isinstance(outs, tuple) else (outs,)
        got = [o.to_ints() for o in outs]
    for k in range(len(got)):
        want = [oracle(F.p, x, y)[k] for x, y in zip(xs, ys)]
        bad = [i for i in range(n) if got[k][i] != want[i]]
        assert not bad, f"{name} {strategy}/{target}: output {k} wrong at {bad[:5]} " \
                        f"(x={xs[bad[0]]}, y={ys[bad[0]]})"


@pytest.mark.parametrize("strategy", ["int64", "int32", "fp64"])
def test_cpu(field_name, strategy):
    check_program(field_name, 1003, strategy, "cpu")


@pytest.mark.parametrize("lanes,ifma", [("1", "0"), ("8", "0")])
@pytest.mark.parametrize("strategy", ["int32", "fp64"])
@pytest.mark.parametrize("name", ["bn254.fr", "bls12_381.fq", "mnt4753.fr"])
def test_cpu_scalar_and_fma_split_paths(monkeypatch, name, strategy, lanes, ifma):
    monkeypatch.setenv("ZKTENSOR_CPU_LANES", lanes)
    monkeypatch.setenv("ZKTENSOR_CPU_IFMA", ifma)
    check_program(name, 203, strategy, "cpu")


def lazy_chains(a, b):
    """Sums, differences, negations and products read only by products: the values that
    field-to-limbs leaves unreduced (in [0, 2p)) for the fp64 strategy."""
    d, s, n, m = a - b, a + b, -a, a * b
    q = s.square()
    return d * s, n * m, q * d, (m * m) * (q * n), m * d + s


def lazy_expected(p, x, y):
    d, s, n, m = (x - y) % p, (x + y) % p, -x % p, x * y % p
    q = s * s % p
    return [d * s % p, n * m % p, q * d % p, m * m * q * n % p, (m * d + s) % p]


@pytest.mark.parametrize("target,lanes,ifma", [("cpu", "8", "1"), ("cpu", "8", "0"), ("cpu", "1", "0"),
                                               ("triton", None, None)])
def test_unreduced_intermediates(monkeypatch, field_name, target, lanes, ifma):
    """Every product of values in [0, 2p) is reduced where it leaves the kernel: the stored
    words equal the canonical Montgomery words of the oracle's results, on edge values
    (p - 1, p - 2, (p +- 1)/2, ...), for every field, on the IFMA, FMA-split and scalar
    CPU paths and in the Triton interpreter."""
    if lanes is not None:
        monkeypatch.setenv("ZKTENSOR_CPU_LANES", lanes)
        monkeypatch.setenv("ZKTENSOR_CPU_IFMA", ifma)
    F = zt.field(field_name)
    n = 64 if target == "triton" else 300
    xs = sample(F.p, n, 3)
    ys = xs[::-1]
    with zt.config(strategy="fp64", target=target):
        outs = zt.jit(lazy_chains)(F.tensor(xs), F.tensor(ys))
        for k, o in enumerate(outs):
            want = F.tensor([lazy_expected(F.p, x, y)[k] for x, y in zip(xs, ys)])
            assert torch.equal(o.data, want.data), f"{field_name}: output {k}"


@pytest.mark.parametrize("strategy", ["int32", "fp64"])
def test_triton_interpreted(field_name, strategy):
    check_program(field_name, 100, strategy, "triton")


@pytest.mark.parametrize("name,strategy", [("bn254.fr", "fp64"), ("bls12_381.fr", "int32")])
def test_triton_pow_loop(name, strategy):
    e = 2 ** 9 + 3          # one 32-step scf.for (the interpreter runs ~100 µs per op)
    check_program(name, 16, strategy, "triton", fn=lambda a, b: a ** e, oracle=lambda p, x, y: [pow(x, e, p)])


@pytest.mark.parametrize("strategy", ["int64", "int32", "fp64"])
def test_cpu_inverse_and_pow_loop(field_name, strategy):
    F = zt.field(field_name)
    xs = [x for x in sample(F.p, 300, 7) if x]
    with zt.config(strategy=strategy):
        a = F.tensor(xs)
        assert a.inverse().to_ints() == [pow(x, -1, F.p) for x in xs]
        assert zt.batch_inverse(a).to_ints() == [pow(x, -1, F.p) for x in xs]
        assert (a ** LOOP_EXP).to_ints() == [pow(x, LOOP_EXP, F.p) for x in xs]
        assert (a ** -3).to_ints() == [pow(x, -3, F.p) for x in xs]
        assert (a ** 0).to_ints() == [1] * len(xs)


@pytest.mark.parametrize("n", [1, 63, 64, 65, 1000, 4099])
def test_batch_inverse_sizes(n):
    F = zt.field("bn254.fr")
    xs = [random.Random(n).randrange(1, F.p) for _ in range(n)]
    got = zt.batch_inverse(F.tensor(xs))
    assert got.to_ints() == [pow(x, -1, F.p) for x in xs]


def test_batch_inverse_keeps_shape():
    F = zt.field("bls12_381.fr")
    a = F.random((3, 50), generator=__import__("torch").Generator().manual_seed(3))
    a = a + (a == 0).to(__import__("torch").int32).sum().item() * 0 + 0
    vals = a.to_ints()
    if any(v == 0 for row in vals for v in row):
        pytest.skip("drew a zero")
    assert zt.batch_inverse(a).to_ints() == [[pow(v, -1, F.p) for v in row] for row in vals]


@pytest.mark.parametrize("target", ["cpu", "triton"])
def test_out_views_receive_the_result(target):
    """`out=` views are written, whatever their strides: a row of a buffer (what the prover's
    POLY rows are), a transposed view, and a view with gaps between its rows, whose batch
    dims do not collapse into the kernels' 2-D addressing (written through a copy). The
    buffer's other words are left alone; the values are Python ints'."""
    from zktensor.ops.elementwise import apply
    F = zt.field("bn254.fr")
    a = F.tensor(sample(F.p, 12, 5)[:12]).reshape(2, 3, 2)
    want = [[[x * x % F.p for x in pair] for pair in row] for row in a.to_ints()]
    with zt.config(target=target):
        for buf, view in [
            (torch.full((F.limbs, 3, 2, 3, 2), -1, dtype=torch.int32), lambda b: b[:, 1]),
            (torch.full((F.limbs, 2, 2, 3), -1, dtype=torch.int32), lambda b: b.permute(0, 1, 3, 2)),
            (torch.full((F.limbs, 2, 4, 2), -1, dtype=torch.int32), lambda b: b[:, :, :3]),
        ]:
            out = zt.FieldTensor(F, view(buf))
            assert apply("mul", a, a, out=out) is out and out.to_ints() == want
            untouched = torch.ones_like(buf, dtype=torch.bool)
            view(untouched).fill_(False)
            assert (buf[untouched] == -1).all()
