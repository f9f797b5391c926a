"""canonicalize: `field` -> `field` (rewrite rules, CSE, DCE)."""
import pytest

from compiler_support import F, P, XS, field_stage, run
from zktensor.passes import canonicalize


@pytest.mark.parametrize("fn,present,absent", [
    (lambda a: a * a, ['"field.square"'], ['"field.mul"']),                       # x·x = x²
    (lambda a: a + 0, [], ['"field.add"']),                                       # x + 0 = x
    (lambda a: a * 1 + a * 1, ['"field.add"'], ['"field.mul"']),                  # x·1 = x
    (lambda a: a * (F.p - 1) + a, ['"field.neg"'], ['"field.mul"']),              # x·(−1) = −x
    (lambda a: (F.p - 1) * a + a, ['"field.neg"'], ['"field.mul"']),
    (lambda a: a * (2 + 3), ['value = "5"'], ['value = "2"']),                    # constant folding
    (lambda a: a * a + a * a, ['"field.square"'], []),                            # CSE
    (lambda a: a ** 2, ['"field.square"'], ['"field.pow"']),
])
def test_canonicalize_rules(fn, present, absent):
    text = str(field_stage(fn, 1, [canonicalize]))
    for s in present:
        assert s in text
    for s in absent:
        assert s not in text


def test_canonicalize_cse_counts():
    text = str(field_stage(lambda a: a * a + a * a, 1, [canonicalize]))
    assert text.count('"field.square"') == 1


def test_rewritten_program_runs():
    """Every rule above in one program: its value is the unrewritten one's."""
    def f(a):
        return (a * a + 0) * 1 + a * (F.p - 1) + (F.p - 1) * a + a * (2 + 3) + a * a + a ** 2
    (got,) = run(f, [XS])
    assert got == [(3 * x * x + 3 * x) % P for x in XS]
