"""Prime fields as data.

One record per field holds what cannot be derived: its name and modulus.
Everything else (limb counts, Montgomery constants, two-adicity, roots of
unity, a multiplicative generator) is computed here from the modulus with
Python integers (and sympy's factorisation of p - 1, on first use), and checked
when the record is built.

Montgomery form: every strategy and target uses R = 2^(32·L32), where L32 is
the number of 32-bit storage words. The 64-bit CPU strategy uses L32/2 words
(L32 is even for every field here) and the fp64 strategy reduces by the same R
with a final partial digit, so a tensor's bits mean the same thing everywhere.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field as dc_field

# The only numbers pasted: the moduli, with where they come from.
_MODULI = {
    # BN254 (alt_bn128): r and q of the Ethereum precompile curve (EIP-196).
    "bn254.fr": 21888242871839275222246405745257275088548364400416034343698204186575808495617,
    "bn254.fq": 21888242871839275222246405745257275088696311157297823662689037894645226208583,
    # BLS12-381: r and p from the IETF pairing-friendly-curves draft.
    "bls12_381.fr": 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001,
    "bls12_381.fq": 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB,
    # MNT4-753 (Coda/Mina cycle): scalar field r and base field q.
    "mnt4753.fr": 0x01C4C62D92C41110229022EEE2CDADB7F997505B8FAFED5EB7E8F96C97D87307FDB925E8A0ED8D99D124D9A15AF79DB26C5C28C859A99B3EEBCA9429212636B9DFF97634993AA4D6C381BC3F0057974EA099170FA13A4FD90776E240000001,
    "mnt4753.fq": 0x01C4C62D92C41110229022EEE2CDADB7F997505B8FAFED5EB7E8F96C97D87307FDB925E8A0ED8D99D124D9A15AF79DB117E776F218059DB80F0DA5CB537E38685ACCE9767254A4638810719AC425F0E39D54522CDD119F5E9063DE245E8001,
}

FP64_LIMB_BITS = 52


# Miller-Rabin bases: no composite below 3.3e24 passes all of them, and a large composite
# that was not built against this fixed set passes each with probability < 1/4
_MR_BASES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53)


def is_probable_prime(n: int) -> bool:
    """Miller-Rabin with the fixed bases above: the check that a field record's modulus is
    prime. (sympy.isprime is its oracle in the tests; importing sympy here cost every
    process, the CLI's included, half a second.)"""
    if n < 2:
        return False
    for q in _MR_BASES:
        if n % q == 0:
            return n == q
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for a in _MR_BASES:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _limbs(value: int, bits: int, count: int) -> tuple[int, ...]:
    mask = (1 << bits) - 1
    return tuple((value >> (bits * i)) & mask for i in range(count))


@dataclass(frozen=True)
class Field:
    """A prime field and every constant the compiler needs for it."""

    name: str
    p: int
    bits: int = dc_field(init=False)
    limbs32: int = dc_field(init=False)       # storage words (32-bit)
    limbs64: int = dc_field(init=False)       # CPU int64 strategy words
    limbs52: int = dc_field(init=False)       # fp64 strategy limbs
    bytes: int = dc_field(init=False)         # snarkjs/circom word size on the wire
    R: int = dc_field(init=False)             # 2^(32·limbs32) mod p
    R2: int = dc_field(init=False)            # R^2 mod p
    two_adicity: int = dc_field(init=False)
    nqr: int = dc_field(init=False)           # smallest quadratic non-residue

    def __post_init__(self):
        p = self.p
        if not is_probable_prime(p):
            raise ValueError(f"{self.name}: modulus is not prime")
        bits = p.bit_length()
        limbs32 = -(-bits // 32)
        limbs32 += limbs32 % 2                      # even, so 64-bit words tile it
        limbs52 = -(-(bits + 1) // FP64_LIMB_BITS)  # room for values < 2p
        if 2 * p >= 1 << (32 * limbs32) or 32 * limbs32 > FP64_LIMB_BITS * limbs52:
            raise ValueError(f"{self.name}: no headroom for lazy reduction")
        s = ((p - 1) & -(p - 1)).bit_length() - 1
        nqr = next(g for g in range(2, 1000) if pow(g, (p - 1) // 2, p) == p - 1)
        set_ = functools.partial(object.__setattr__, self)
        set_("bits", bits)
        set_("limbs32", limbs32)
        set_("limbs64", limbs32 // 2)
        set_("limbs52", limbs52)
        set_("bytes", 8 * -(-bits // 64))
        set_("R", pow(2, 32 * limbs32, p))
        set_("R2", pow(2, 64 * limbs32, p))
        set_("two_adicity", s)
        set_("nqr", nqr)

    # -- Montgomery constants -------------------------------------------------
    def neg_inv(self, word_bits: int) -> int:
        """-p^-1 mod 2^word_bits, the Montgomery reduction multiplier."""
        return (-pow(self.p, -1, 1 << word_bits)) % (1 << word_bits)

    def limbs(self, value: int, word_bits: int) -> tuple[int, ...]:
        count = {32: self.limbs32, 64: self.limbs64, FP64_LIMB_BITS: self.limbs52}[word_bits]
        return _limbs(value, word_bits, count)

    def to_mont(self, x: int) -> int:
        return x * self.R % self.p

    def from_mont(self, x: int) -> int:
        return x * self.R_inv % self.p

    @functools.cached_property
    def R_inv(self) -> int:
        return pow(self.R, -1, self.p)

    # -- roots of unity -------------------------------------------------------
    @functools.cached_property
    def two_adic_root(self) -> int:
        """A primitive 2^s-th root of unity: nqr^((p-1)/2^s), as snarkjs/ffjavascript take it."""
        return pow(self.nqr, (self.p - 1) >> self.two_adicity, self.p)

    def root_of_unity(self, n: int) -> int:
        """The primitive n-th root of unity (n a power of two <= 2^s) of the snarkjs convention."""
        if n <= 0 or n & (n - 1):
            raise ValueError(f"{self.name}: root of unity order {n} is not a power of two")
        k = n.bit_length() - 1
        if k > self.two_adicity:
            raise ValueError(
                f"{self.name}: no root of unity of order 2^{k}; the field's 2-adicity is {self.two_adicity}")
        return pow(self.two_adic_root, 1 << (self.two_adicity - k), self.p)

    # -- multiplicative generator ---------------------------------------------
    @functools.cached_property
    def factors_of_p_minus_1(self) -> dict[int, int]:
        """Prime factorisation of p-1 by sympy (slow for some fields: computed on first use)."""
        import sympy
        return sympy.factorint(self.p - 1)

    @functools.cached_property
    def generator(self) -> int:
        """The smallest generator of the multiplicative group (its order checked against p-1)."""
        qs = list(self.factors_of_p_minus_1)
        for g in range(2, 10_000):
            if all(pow(g, (self.p - 1) // q, self.p) != 1 for q in qs):
                return g
        raise ArithmeticError(f"{self.name}: no small generator")

    def __repr__(self) -> str:
        return f"Field({self.name}, {self.bits} bits)"


@functools.lru_cache(maxsize=None)
def field(name: str) -> Field:
    """The field record named like ``"bn254.fr"``, ``"bls12_381.fq"``, ``"mnt4753.fr"``."""
    key = name.lower().replace("-", "_").replace("bls12381", "bls12_381").replace("bn128", "bn254")
    if key not in _MODULI:
        raise ValueError(f"unknown field {name!r}; known: {', '.join(sorted(_MODULI))}")
    return Field(key, _MODULI[key])


FIELD_NAMES = tuple(sorted(_MODULI))
