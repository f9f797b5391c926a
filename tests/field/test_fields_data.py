"""Field records: every derived constant checked from first principles."""
import pytest
import sympy

from zktensor.algebra import FIELD_NAMES, field


@pytest.mark.parametrize("name", FIELD_NAMES)
def test_derived_constants(name):
    F = field(name)
    p = F.p
    assert sympy.isprime(p)
    assert F.R == pow(2, 32 * F.limbs32, p) and F.R2 == F.R * F.R % p
    assert 2 * p < 2 ** (32 * F.limbs32)               # lazy-reduction headroom
    assert 32 * F.limbs32 <= 52 * F.limbs52             # fp64 limbs cover R
    for w in (32, 52, 64):
        assert (F.neg_inv(w) * p) % 2 ** w == 2 ** w - 1
    s = F.two_adicity
    assert (p - 1) % 2 ** s == 0 and ((p - 1) >> s) % 2 == 1
    assert pow(F.nqr, (p - 1) // 2, p) == p - 1
    assert all(pow(g, (p - 1) // 2, p) == 1 for g in range(2, F.nqr))


@pytest.mark.parametrize("name", FIELD_NAMES)
def test_roots_of_unity(name):
    F = field(name)
    for k in sorted({k for k in (1, 2, 5, F.two_adicity) if k <= F.two_adicity}):
        w = F.root_of_unity(2 ** k)
        assert pow(w, 2 ** k, F.p) == 1 and pow(w, 2 ** (k - 1), F.p) == F.p - 1
    with pytest.raises(ValueError, match="2-adicity"):
        F.root_of_unity(2 ** (F.two_adicity + 1))
    with pytest.raises(ValueError, match="power of two"):
        F.root_of_unity(12)


def test_bn254_root_matches_snarkjs_convention():
    # ffjavascript: w[s] = nqr^t with nqr = 5 for BN254 Fr; so w[28]^(2^28) = 1 and
    # the 2-element root is p-1.
    F = field("bn254.fr")
    assert F.nqr == 5 and F.two_adicity == 28
    assert F.root_of_unity(2) == F.p - 1


@pytest.mark.parametrize("name", ["bn254.fr", "bls12_381.fr", "bn254.fq"])
def test_generator_has_full_order(name):
    F = field(name)
    g = F.generator
    assert all(pow(g, (F.p - 1) // q, F.p) != 1 for q in F.factors_of_p_minus_1)
    assert all(sympy.isprime(q) for q in F.factors_of_p_minus_1)


def test_unknown_field():
    with pytest.raises(ValueError, match="unknown field"):
        field("secp256k1.fq")


def test_primality_check_against_sympy():
    """The modulus check (our Miller-Rabin) agrees with sympy.isprime: every number below
    5000, Carmichael numbers and strong pseudoprimes to small bases, products of two large
    primes, and every modulus here with its neighbours."""
    from zktensor.algebra.fields import is_probable_prime
    cases = list(range(5000))
    cases += [561, 1105, 1729, 2465, 2821, 6601, 8911, 41041, 825265, 321197185]      # Carmichael
    cases += [2047, 1373653, 25326001, 3215031751, 2152302898747, 3474749660383,       # strong pseudoprimes
              341550071728321, 3825123056546413051, 318665857834031151167461]
    big = [field(n).p for n in FIELD_NAMES]
    cases += [q + d for q in big for d in (-2, 0, 2)] + [big[0] * big[1], (2**127 - 1) * (2**89 - 1)]
    assert [is_probable_prime(n) for n in cases] == [sympy.isprime(n) for n in cases]
