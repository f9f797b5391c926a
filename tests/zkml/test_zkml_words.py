"""Field words of signed integers (lc.signed_to_words) against Python ints mod p."""
import numpy as np
import pytest

from zktensor.zkml.lc import INT_LIMIT, P, signed_to_words, words_to_ints


def test_signed_to_words_matches_python_ints():
    edges = [0, 1, -1, 2**31, -2**31, 2**32 - 1, -(2**32 - 1), 2**32, -2**32, 2**63 // 2 - 1,
             INT_LIMIT - 1, -(INT_LIMIT - 1)]
    rng = np.random.default_rng(5)
    v = np.concatenate([np.array(edges, np.int64), rng.integers(-INT_LIMIT + 1, INT_LIMIT, 20000),
                        rng.integers(-2**33, 2**33, 20000)])
    w = signed_to_words(v)
    assert w.dtype == np.uint32 and w.shape == (v.size, 8)
    assert words_to_ints(w) == [int(x) % P for x in v.tolist()]
    assert signed_to_words(np.zeros(0, np.int64)).shape == (0, 8)


@pytest.mark.parametrize("bad", [INT_LIMIT, -INT_LIMIT, np.iinfo(np.int64).min, np.iinfo(np.int64).max])
def test_signed_to_words_refuses_values_beyond_the_exact_range(bad):
    with pytest.raises(OverflowError, match="2\\^62"):
        signed_to_words([3, bad])
