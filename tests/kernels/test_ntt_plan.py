"""The NTT's plan (`kernels.ntt_plan`): twiddle and coset tables, the bit-reversal
permutation and the scaling folded into a transform, against Python ints."""
from __future__ import annotations

import pytest
import torch

import zktensor as zt
from tests.oracles import field as ff
from zktensor.kernels.ntt_plan import Plan, bitrev, bitrev_index, clear_tables, host_tables, powers, tables


# -- twiddle tables -----------------------------------------------------------------
def test_twiddles_cached_and_stage_major():
    F = zt.field("bls12_381.fr")
    n = 64
    T = tables(F, n, "cpu")
    tw = T.twiddles(False)
    assert T.twiddles(False) is tw and tables(F, n, "cpu") is T
    vals = zt.FieldTensor(F, tw).to_ints()
    assert len(vals) == n - 1
    H = 1
    while H < n:
        w2h = F.root_of_unity(2 * H)
        assert vals[H - 1:2 * H - 1] == [pow(w2h, j, F.p) for j in range(H)]
        H *= 2
    inv = zt.FieldTensor(F, T.twiddles(True)).to_ints()
    assert inv[n // 2 - 1 + 1] == pow(F.root_of_unity(n), -1, F.p)
    clear_tables()
    assert tables(F, n, "cpu") is not T


@pytest.mark.parametrize("n", [1, 2, 8, 32])
def test_bitrev_powers_and_scaling_tables(n):
    """The bit-reversal permutation, scale·base^j for counts that are not powers of two,
    and the tables a plan folds into a forward coset NTT (g^j) and an inverse one
    (N^-1·g^-j, or N^-1 alone): each against Python ints, in both storage orders."""
    F = zt.field("bn254.fr")
    p = F.p
    ints = lambda t: zt.FieldTensor(F, t).to_ints()      # noqa: E731
    assert bitrev_index(n, "cpu").tolist() == ff.bit_reverse(list(range(n)))
    xs = [(i * 0x9E3779B97F4A7C15 + 1) % p for i in range(n)]
    assert ints(bitrev(F.tensor(xs).data)) == ff.bit_reverse(xs)
    for count in (1, 3, n + 5):
        assert ints(powers(F, 7, count, scale=11)) == [11 * pow(7, j, p) % p for j in range(count)]
    g, n_inv = 5, pow(n, -1, p)
    for bitrev_in in (False, True):
        plan = Plan(F, n, n.bit_length() - 1, False, g, bitrev_in, False, torch.device("cpu"))
        want = [pow(g, j, p) for j in range(n)]
        assert ints(plan.pre_table()) == (ff.bit_reverse(want) if bitrev_in else want)
        assert plan.post_table() is None
    for bitrev_out in (False, True):
        plan = Plan(F, n, n.bit_length() - 1, True, g, False, bitrev_out, torch.device("cpu"))
        want = [n_inv * pow(g, -j, p) % p for j in range(n)]
        assert ints(plan.post_table()) == (ff.bit_reverse(want) if bitrev_out else want)
        assert plan.pre_table() is None
    plain = Plan(F, n, n.bit_length() - 1, True, None, False, False, torch.device("cpu"))
    assert plain.post_table() == n_inv and plain.pre_table() is None


@pytest.mark.parametrize("first", [False, True], ids=["natural-first", "bitrev-first"])
def test_coset_tables_in_both_orders_made_once(first):
    """A coset table in either order, whichever is asked for first (the second is the
    first permuted), kept: a later call returns the same tensor. `post_table(bitrev=)`
    asks for the other order than the plan's output (a kernel that permutes after
    scaling); `constant` is N^-1 on the device, made once."""
    clear_tables()
    F = zt.field("bn254.fr")
    p, n, g = F.p, 16, 7
    ints = lambda t: zt.FieldTensor(F, t).to_ints()      # noqa: E731
    T = tables(F, n, "cpu")
    want = [3 * pow(g, j, p) % p for j in range(n)]
    for rev in (first, not first):
        t = T.coset_powers(g, 3, bitrev=rev)
        assert ints(t) == (ff.bit_reverse(want) if rev else want)
        assert T.coset_powers(g, 3, bitrev=rev) is t
    plan = Plan(F, n, 4, True, g, False, False, torch.device("cpu"))
    want_post = [pow(n, -1, p) * pow(g, -j, p) % p for j in range(n)]
    assert ints(plan.post_table()) == want_post
    assert ints(plan.post_table(bitrev=True)) == ff.bit_reverse(want_post)
    c = T.constant(pow(n, -1, p))
    assert c.shape == (F.limbs, 1) and ints(c[:, 0]) == pow(n, -1, p)
    assert T.constant(pow(n, -1, p)) is c
    H = host_tables(F, n)                                 # the numpy twin: the same words
    h = H.constant(pow(n, -1, p))
    assert h.shape == (F.limbs, 1) and ints(torch.from_numpy(h)[:, 0]) == pow(n, -1, p)
    assert H.constant(pow(n, -1, p)) is h
