"""Multi-limb modular arithmetic written as `arith`/`math` ops: the two strategies.

Every strategy stores values fully reduced (in [0, p)) and uses the same
Montgomery radix R = 2^(32·L32), so storage words mean the same thing whichever
strategy computed them. Between ops, `Fp64Limbs` may leave a value in [0, 2p)
where only products read it (`lazy_ops`; field-to-limbs decides which values):
a product of two such values is below 4p²/R + p < 2p when 4p < R, so one
conditional subtraction still makes any product canonical, and the sums,
differences and products that feed only products skip theirs.

`IntLimbs(word)`: word-sized unsigned limbs (32 on a GPU, 64 on a CPU).
Montgomery multiplication is CIOS (Koç, Acar, Kaliski 1996): for each word
b_i, t += a·b_i, then m = t_0·(-p^-1) mod 2^w and t = (t + m·p) / 2^w. Full
products come from `arith.mului_extended` (`umulhi` on Triton, `mulq` on x86),
carries from `arith.addui_extended`.

`Fp64Limbs`: 52-bit limbs held in i64 and multiplied in doubles. A product
a·b < 2^104 of two 52-bit limbs is split exactly by two FMAs (Emmart, Zheng,
Weems, ARITH 2018): hi = fma(a, b, 2^104) has its ulp at 2^52, so its
mantissa holds H = round(a·b / 2^52), read off by subtracting the bit pattern
of 2^104; lo = fma(a, b, 2^104 - hi) = a·b - H·2^52 is exact and in
[-2^51, 2^51]; adding 1.5·2^52 moves it to a binade with ulp 1, so its bit
pattern minus that of 1.5·2^52 is the signed integer L: four f64 ops a product.
Where fma can round down (`round_down`: a GPU's fma.rm), three do: hi =
fma_rd(a, b, 2^104) holds H = floor(a·b / 2^52), (2^104 + 2^52) - hi = (1 - H)·2^52
is exact, and lo = fma(a, b, that) = L + 2^52 with L = a·b mod 2^52 lies in [2^52,
2^53), ulp 1, so no bias is added. H and L are summed
per column in i64 (SOS: products first, then reduction). Reduction uses 52-bit
digits and a final partial digit of B - 52·k bits, so it divides by exactly
R = 2^B with B = 32·L32 (no conversion between strategies).
"""
from __future__ import annotations

from ..algebra import Field
from ..ir.builder import Emitter, V

MASK52 = (1 << 52) - 1
TWO104 = float(2 ** 104)
LO_BIAS = 1.5 * 2 ** 52
TWO52 = float(2 ** 52)


def _bits_of(x: float) -> int:
    import struct
    return struct.unpack("<q", struct.pack("<d", x))[0]


class IntLimbs:
    """Word-sized unsigned limbs; `word` is 32 or 64."""

    lazy_ops: frozenset = frozenset()       # every value reduced after every op

    def __init__(self, e: Emitter, F: Field, word: int):
        self.e, self.F, self.w = e, F, word
        self.t = f"i{word}"
        self.n = F.limbs32 * 32 // word
        self.p = [e.const(x, self.t) for x in F.limbs(F.p, word)]
        self.zero = e.const(0, self.t)

    # storage is always 32-bit words; 64-bit limbs pair them up.
    def from_words(self, words: list[V]) -> list[V]:
        e = self.e
        if self.w == 32:
            return list(words)
        return [e.or_(e.zext(words[2 * k], "i64"), e.shl(e.zext(words[2 * k + 1], "i64"), 32))
                for k in range(self.n)]

    def to_words(self, limbs: list[V]) -> list[V]:
        e = self.e
        if self.w == 32:
            return list(limbs)
        out = []
        for x in limbs:
            out += [e.trunc(x, "i32"), e.trunc(e.shr(x, 32), "i32")]
        return out

    def constant(self, value: int) -> list[V]:
        """A field constant (standard form) as Montgomery-form limbs."""
        return [self.e.const(x, self.t) for x in self.F.limbs(self.F.to_mont(value), self.w)]

    # -- carry chains --------------------------------------------------------
    def _add_chain(self, a, b):
        e, out, carry = self.e, [], None
        for x, y in zip(a, b):
            s, c = e.add_carry(x, y)
            if carry is not None:
                s, c2 = e.add_carry(s, e.zext(carry, self.t))
                c = e.or_(c, c2)
            out.append(s)
            carry = c
        return out, carry

    def _sub_chain(self, a, b):
        e, out, borrow = self.e, [], None
        for x, y in zip(a, b):
            d = e.sub(x, y)
            bo = e.ult(x, y)
            if borrow is not None:
                bz = e.zext(borrow, self.t)
                bo = e.or_(bo, e.ult(d, bz))
                d = e.sub(d, bz)
            out.append(d)
            borrow = bo
        return out, borrow

    def _reduce_once(self, t, top=None):
        """t - p if t >= p else t, for t < 2p (top: an extra high bit of t, as i1 or word)."""
        e = self.e
        d, borrow = self._sub_chain(t, self.p)
        keep = borrow
        if top is not None:  # t >= 2^(wL) > p: always subtract
            keep = e.and_(borrow, e.ult(top, e.const(1, top.type)) if top.type != "i1"
                          else e.xor(top, e.const(1, "i1")))
        return [e.select(keep, x, y) for x, y in zip(t, d)]

    # -- field ops -----------------------------------------------------------
    def add(self, a, b):
        s, _ = self._add_chain(a, b)   # 2p < 2^(wL): no carry out
        return self._reduce_once(s)

    def sub(self, a, b):
        e = self.e
        d, borrow = self._sub_chain(a, b)
        mask = e.sub(self.zero, e.zext(borrow, self.t))   # all ones on borrow
        s, _ = self._add_chain(d, [e.and_(pj, mask) for pj in self.p])
        return s

    def neg(self, a):
        return self.sub([self.zero] * self.n, a)

    def mul(self, a, b):
        if self.F.limbs(self.F.p, self.w)[-1] < (1 << (self.w - 1)) - 1:
            return self._mul_no_carry(a, b)
        return self._mul_cios(a, b)

    def _mul_no_carry(self, a, b):
        """CIOS without the two extra words: when p's top word is below 2^(w-1) - 1,
        t stays below 2p < 2^(wL) between iterations, so t[L] and t[L+1] are never
        needed (the observation behind gnark-crypto's "no-carry" multiplication)."""
        e, n = self.e, self.n
        inv = e.const(self.F.neg_inv(self.w), self.t)
        t = [self.zero] * n
        for i in range(n):
            t[0], A = self._mac(t[0], a[0], b[i], self.zero)
            m = e.mul(t[0], inv)
            _, C = self._mac(t[0], m, self.p[0], self.zero)
            for j in range(1, n):
                t[j], A = self._mac(t[j], a[j], b[i], A)
                t[j - 1], C = self._mac(t[j], m, self.p[j], C)
            t[n - 1] = e.add(C, A)
        return self._reduce_once(t)

    def _mul_cios(self, a, b):
        e, n = self.e, self.n
        inv = e.const(self.F.neg_inv(self.w), self.t)
        t = [self.zero] * (n + 2)
        for i in range(n):
            carry = self.zero
            for j in range(n):
                t[j], carry = self._mac(t[j], a[j], b[i], carry)
            t[n], c = e.add_carry(t[n], carry)
            t[n + 1] = e.zext(c, self.t)
            m = e.mul(t[0], inv)
            _, carry = self._mac(t[0], m, self.p[0], self.zero)
            for j in range(1, n):
                t[j - 1], carry = self._mac(t[j], m, self.p[j], carry)
            t[n - 1], c = e.add_carry(t[n], carry)
            t[n] = e.add(t[n + 1], e.zext(c, self.t))
        return self._reduce_once(t[:n], top=t[n])

    def _mac(self, t, a, b, c):
        """t + a·b + c as (low word, high word); cannot overflow two words."""
        e = self.e
        lo, hi = e.mul_wide(a, b)
        lo, c1 = e.add_carry(lo, t)
        lo, c2 = e.add_carry(lo, c)
        hi = e.add(e.add(hi, e.zext(c1, self.t)), e.zext(c2, self.t))
        return lo, hi

    def square(self, a):
        """a² by products then reduction (SOS): each cross product a_i·a_j (i < j) once,
        the sum doubled, the diagonal a_i² added, then Montgomery's reduction of the 2n
        words (one deferred carry bit per row). CIOS on (a, a) has the same products twice;
        a compiler shares them and keeps them live across the whole multiplication: a
        24-word (MNT4-753) Triton square took 255 registers and spilled (75 STL) where a·b
        takes 128."""
        e, n, w = self.e, self.n, self.w
        t = [self.zero] * (2 * n)
        for i in range(n - 1):
            c = self.zero
            for j in range(i + 1, n):
                t[i + j], c = self._mac(t[i + j], a[i], a[j], c)
            t[i + n] = c
        # 2·sum_{i<j} a_i a_j < a² < 2^(2wn): the doubling cannot overflow
        t = [e.shl(t[0], 1)] + [e.or_(e.shl(t[k], 1), e.shr(t[k - 1], w - 1)) for k in range(1, 2 * n)]
        diag = []
        for x in a:
            diag += list(e.mul_wide(x, x))
        t, _ = self._add_chain(t, diag)
        inv = e.const(self.F.neg_inv(w), self.t)
        extra = None            # the carry out of row i - 1, owed to word i - 1 + n + 1
        for i in range(n):
            m = e.mul(t[i], inv)
            c = self.zero
            for j in range(n):
                t[i + j], c = self._mac(t[i + j], m, self.p[j], c)
            s, c1 = e.add_carry(t[i + n], c)
            if extra is not None:   # s <= 2^w - 2 when c1 is set: one carry at most
                s, c2 = e.add_carry(s, e.zext(extra, self.t))
                c1 = e.or_(c1, c2)
            t[i + n] = s
            extra = c1
        return self._reduce_once(t[n:], top=extra)


class Fp64Limbs:
    """52-bit limbs in i64; products through f64 FMAs, sums in i64 columns.

    With `ifma` (x86 AVX-512 IFMA, 8 lanes), the same column algorithm takes
    its products from vpmadd52luq/vpmadd52huq, which add the low and high 52
    bits of a 52x52-bit product to a 64-bit accumulator: the hardware form of
    the FMA split. With `round_down` (a target whose fma rounds toward -inf on
    request), the split takes three f64 ops instead of four (module docstring).
    """

    def __init__(self, e: Emitter, F: Field, ifma: bool = False, round_down: bool = False):
        if ifma and e.lanes != 8:
            raise ValueError("the IFMA lowering works on 8-lane vectors")
        if ifma and round_down:
            raise ValueError("IFMA has no FMA split to round")
        self.e, self.F, self.ifma, self.round_down = e, F, ifma, round_down
        self.n = F.limbs52
        self.B = 32 * F.limbs32
        assert -(-self.B // 52) <= self.n, "one reduction step per row"
        self.p = [e.const(x, "i64") for x in F.limbs(F.p, 52)]
        self.pf = [e.const(float(x), "f64") for x in F.limbs(F.p, 52)]
        self.zero = e.const(0, "i64")
        # ops whose result may stay in [0, 2p) (reduce=False) when only products read it
        self.lazy_ops = LAZY_OPS if 4 * F.p < 1 << self.B else frozenset()

    def from_words(self, words: list[V]) -> list[V]:
        return _rebase(self.e, [self.e.zext(w, "i64") for w in words], 32, 52, self.n)

    def to_words(self, limbs: list[V]) -> list[V]:
        return [self.e.trunc(w, "i32") for w in _rebase(self.e, limbs, 52, 32, self.F.limbs32)]

    def constant(self, value: int) -> list[V]:
        return [self.e.const(x, "i64") for x in self.F.limbs(self.F.to_mont(value), 52)]

    def _normalize(self, cols):
        """Carry-propagate signed columns into 52-bit limbs; returns (limbs, final carry)."""
        e, out, carry = self.e, [], self.zero
        mask = e.const(MASK52, "i64")
        for c in cols:
            v = e.add(c, carry)
            out.append(e.and_(v, mask))
            carry = e.sar(v, 52)
        return out, carry

    def _reduce_once(self, t):
        e = self.e
        d, borrow = self._normalize([e.sub(x, pj) for x, pj in zip(t, self.p)])
        neg = e.slt(borrow, self.zero)
        return [e.select(neg, x, y) for x, y in zip(t, d)]

    # add, sub, neg take reduced operands; with reduce=False their result is in [0, 2p)
    def add(self, a, b, reduce=True):
        s, _ = self._normalize([self.e.add(x, y) for x, y in zip(a, b)])
        return self._reduce_once(s) if reduce else s

    def sub(self, a, b, reduce=True):
        e = self.e
        if not reduce:          # a - b + p is in [1, 2p): one carry chain, no borrow test
            s, _ = self._normalize([e.add(e.sub(x, y), pj) for x, y, pj in zip(a, b, self.p)])
            return s
        d, borrow = self._normalize([e.sub(x, y) for x, y in zip(a, b)])
        # the final carry is 0 or -1: as a mask it adds p back after a borrow
        s, _ = self._normalize([e.add(x, e.and_(pj, borrow)) for x, pj in zip(d, self.p)])
        return s

    def neg(self, a, reduce=True):
        if not reduce:          # p - a is in (0, p]
            s, _ = self._normalize([self.e.sub(pj, x) for x, pj in zip(a, self.p)])
            return s
        return self.sub([self.zero] * self.n, a)

    def _split(self, af, bf):
        """(H, L) with a·b = H·2^52 + L exactly."""
        e = self.e
        c1 = e.const(TWO104, "f64")
        hi = e.fma_down(af, bf, c1) if self.round_down else e.fma(af, bf, c1)
        H = e.sub(e.bitcast(hi, "i64"), e.const(_bits_of(TWO104), "i64"))
        if self.round_down:     # lo = (a·b mod 2^52) + 2^52: already in the binade with ulp 1
            lo, bias = e.fma(af, bf, e.fsub(e.const(TWO104 + TWO52, "f64"), hi)), TWO52
        else:                   # lo = a·b - H·2^52 in [-2^51, 2^51], moved to that binade
            lo, bias = e.fadd(e.fma(af, bf, e.fsub(c1, hi)), e.const(LO_BIAS, "f64")), LO_BIAS
        L = e.sub(e.bitcast(lo, "i64"), e.const(_bits_of(bias), "i64"))
        return H, L

    def _operand(self, limbs):
        """What products take: doubles for the FMA split, the i64 limbs for IFMA."""
        return list(limbs) if self.ifma else [self.e.sitofp(x) for x in limbs]

    def _accumulate(self, cols, k, x, y):
        """cols[k] += low part, cols[k+1] += high part of x·y."""
        e = self.e
        if self.ifma:
            cols[k] = _ifma(e, "l", cols[k], x, y)
            cols[k + 1] = _ifma(e, "h", cols[k + 1], x, y)
            return
        H, L = self._split(x, y)
        cols[k] = e.add(cols[k], L)
        cols[k + 1] = e.add(cols[k + 1], H)

    def mul(self, a, b, reduce=True):
        """Row by row (FIOS order): after row i's products, column i is complete,
        so it is reduced at once and only about n+2 columns are ever live. Operands
        in [0, 2p) give a result below 2p, reduced to [0, p) unless reduce=False."""
        e, n = self.e, self.n
        cols = [self.zero] * (2 * n + 2)
        ax = self._operand(a)
        bx = ax if b is a else self._operand(b)
        inv = e.const(self.F.neg_inv(52), "i64")
        px = self.p if self.ifma else self.pf
        k_full, partial = divmod(self.B, 52)
        steps = k_full + (1 if partial else 0)
        for i in range(n):
            for j in range(n):
                self._accumulate(cols, i + j, ax[i], bx[j])
            if i >= steps:
                continue
            width = 52 if i < k_full else partial
            if self.ifma:   # the low 52 bits of cols[i]·inv, which is all m needs: 1 uop
                m = _ifma(e, "l", self.zero, cols[i], inv)   # against vpmullq's 3 (latency 15)
                if width < 52:
                    m = e.and_(m, e.const((1 << width) - 1, "i64"))
            else:
                m = e.and_(e.mul(cols[i], inv), e.const((1 << width) - 1, "i64"))
            mx = self._operand([m])[0]
            for j in range(n):
                self._accumulate(cols, i + j, mx, px[j])
            if width == 52:
                cols[i + 1] = e.add(cols[i + 1], e.sar(cols[i], 52))
        # the value is sum(cols[k_full:]) / 2^partial, below 2p
        limbs, _ = self._normalize(cols[k_full:k_full + n + 1])
        if partial:
            mask = e.const(MASK52, "i64")
            limbs = [e.or_(e.shr(limbs[j], partial), e.and_(e.shl(limbs[j + 1], 52 - partial), mask))
                     for j in range(n)]
        else:
            limbs = limbs[:n]
        return self._reduce_once(limbs) if reduce else limbs

    def square(self, a, reduce=True):
        return self.mul(a, a, reduce)


LAZY_OPS = frozenset(("add", "sub", "neg", "mul", "square"))


def _ifma(e: Emitter, half: str, acc: V, x: V, y: V) -> V:
    return e.op("llvm.call_intrinsic", [acc, x, y], "i64",
                f'intrin = "llvm.x86.avx512.vpmadd52{half}.uq.512", op_bundle_sizes = array<i32>, '
                f"operandSegmentSizes = array<i32: 3, 0>")


def _rebase(e: Emitter, limbs: list[V], src: int, dst: int, count: int) -> list[V]:
    """Re-cut an integer from src-bit limbs (in i64) into `count` dst-bit limbs (in i64)."""
    out = []
    mask = e.const((1 << dst) - 1, "i64")
    for k in range(count):
        lo_bit, acc = k * dst, None
        for i, x in enumerate(limbs):
            s = i * src
            if s + src <= lo_bit or s >= lo_bit + dst:
                continue
            part = e.shr(x, lo_bit - s) if s <= lo_bit else e.shl(x, s - lo_bit)
            acc = part if acc is None else e.or_(acc, part)
        out.append(e.and_(acc, mask) if acc is not None else e.const(0, "i64"))
    return out


STRATEGIES = ("int32", "int64", "fp64")


def limb_arith(strategy: str, e: Emitter, F: Field, ifma: bool = False, round_down: bool = False):
    if strategy == "int32":
        return IntLimbs(e, F, 32)
    if strategy == "int64":
        return IntLimbs(e, F, 64)
    if strategy == "fp64":
        return Fp64Limbs(e, F, ifma=ifma, round_down=round_down)
    raise ValueError(f"unknown multiplication strategy {strategy!r}; choose from {STRATEGIES}")
