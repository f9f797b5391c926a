"""The field programs over raw limbs (`kernels.field_programs`) against Python ints."""
import torch

import zktensor as zt

from tests.field.values import sample


def test_invert_few_on_host(field_name):
    """The host inverse at the top of every batch inversion: Montgomery form in and out,
    zero for zero (as x^(p-2)), edge values included, every field."""
    from zktensor.kernels.msm_inverse import batch_inverse
    from zktensor.kernels.field_programs import invert_few
    F = zt.field(field_name)
    xs = [0, 1, 2, F.p - 1, F.p - 2] + [x for x in sample(F.p, 20, 11)]
    got = zt.FieldTensor(F, invert_few(F, F.tensor(xs).data)).to_ints()
    assert got == [pow(x, -1, F.p) if x else 0 for x in xs]
    nz = [x for x in xs if x]
    # the MSM's blocked batch inversion, whose top it is (MNT4-753: the default block only,
    # each block is a compile of its own)
    for block in ((2, 4, 8) if F.bits <= 384 else (4,)):
        inv = batch_inverse(F, F.tensor(nz).data, block)
        assert zt.FieldTensor(F, inv).to_ints() == [pow(x, -1, F.p) for x in nz]


def _words(vals, L):
    """Standard-form words (L, n) int32 of Python ints."""
    return torch.tensor([[(v >> (32 * j)) & 0xFFFFFFFF for v in vals] for j in range(L)],
                        dtype=torch.int64).to(torch.int32)


def _ints(t):
    L = t.shape[0]
    return [sum((int(t[j, i]) & 0xFFFFFFFF) << (32 * j) for j in range(L)) for i in range(t.shape[1])]


def test_named_ops_and_conversions():
    """Every named operation (`OPS`) through `run_program`, and the Montgomery conversions,
    on edge and random values: x·R mod p in storage, the operation's value out. The traced
    program is made once per key (`traced`): a second request does not trace again."""
    from zktensor.kernels import field_programs as fp
    F = zt.field("bls12_381.fr")
    p, L, R = F.p, F.limbs, pow(2, 32 * F.limbs, F.p)
    xs = sample(p, 40, 5)
    ys = sample(p, 40, 6)[::-1]
    a, b = F.tensor(xs).data, F.tensor(ys).data
    want = {"add": [(x + y) % p for x, y in zip(xs, ys)], "sub": [(x - y) % p for x, y in zip(xs, ys)],
            "mul": [x * y % p for x, y in zip(xs, ys)], "neg": [-x % p for x in xs],
            "square": [x * x % p for x in xs]}
    for name, values in want.items():
        n_in, fn = fp.OPS[name]
        (out,) = fp.run_program(F, name, n_in, fn, [a, b][:n_in])
        assert _ints(out) == [v * R % p for v in values], name
    mont = fp.to_mont(F, _words(xs, L))
    assert _ints(mont) == [x * R % p for x in xs]
    assert _ints(fp.from_mont(F, mont)) == xs
    made = []
    first = fp.traced(("test", "once"), lambda: made.append(1) or object())
    assert fp.traced(("test", "once"), lambda: made.append(2) or object()) is first and made == [1]
