"""Triton kernel of the GLV split: full-width scalars to the signed digits of two half-width ones.

For the device MSM of a group with an endomorphism (`algebra.glv`): lane i reads scalar i
(standard-form words), splits it as k = k1 + lambda·k2 (mod r) and writes the signed
digits of k1 and k2 (W windows of C bits, runtime arguments) at columns b·2n + j and
b·2n + n + j of a (W, B, 2n) int32 array (i = b·n + j), for the 2n bases (P, phi(P)).
The curve's constants are written into the source, one module a group:

    glv_split[B·n]   c_i = (k·g_i + 2^(m-1)) >> m            (the full product, 14 words)
                     k1 = k - c1·a1 - c2·a2,  k2 = -c1·b1 - c2·b2   (mod 2^160, two's complement)
                     |k| = k or 2^160 - k by the top bit, then for t < W:
                     d_t = sign·(w_t + b_(tC-1) - 2^C·b_((t+1)C-1))  (`signed_digits_torch`'s recoding)

Words are 32 bits held in uint64 lanes: a product of two is below 2^64, and a column sums
its products' low halves and the previous column's high halves, at most 2^37, before its
carry moves on. |k1|, |k2| < 2^bits <= 2^127 (`Endomorphism.bits`, checked where the
constants are made), so 160 bits hold either sign and 4 words the magnitude. Making the
digits here replaces the dozen whole-array torch operations of the closed form.

Kernel, host wrapper (`ops.msm.device.glv_digits`), reference: the tests rebuild k1 and k2
from the digits on Python ints and check k1 + lambda·k2 = k (mod r), the bound and the
digits' range, and the MSM against py_ecc.
"""
from __future__ import annotations

from ..passes.limbs_to_triton import HEADER
from ..runtime.triton_modules import loaded_module
from .msm_device import _ints, _kernel_head

TEMPLATE_VERSION = "1"
W_OUT = 4               # words of |k1|, |k2|: below 2^127
T = 5                   # words of the two's-complement arithmetic (160 bits)
MASK = 0xFFFFFFFF


def _words(c: int) -> list[int]:
    return [(c >> 32 * j) & MASK for j in range(max(1, -(-c.bit_length() // 32)))]


class _Code:
    """Straight-line uint64 code over [BLOCK] lanes; constants hoisted as tensors."""

    def __init__(self):
        self.lines: list[str] = []
        self.consts: dict[int, str] = {}
        self.n = 0

    def const(self, v: int) -> str:
        if v not in self.consts:
            self.consts[v] = f"k_{len(self.consts)}"
        return self.consts[v]

    def tmp(self, p: str) -> str:
        self.n += 1
        return f"{p}{self.n}"

    def let(self, p: str, expr: str) -> str:
        v = self.tmp(p)
        self.lines.append(f"    {v} = {expr}")
        return v

    def mul(self, xs: list[str], c: int, nout: int, add: dict | None = None) -> list[str]:
        """The low `nout` words of x·c (+ add: {word: value < 2^32}), x as words, c >= 0."""
        lo: dict = {t: [] for t in range(nout)}
        hi: dict = {t: [] for t in range(nout)}
        for t, v in (add or {}).items():
            lo[t].append(self.const(v))
        for i, x in enumerate(xs):
            for j, w in enumerate(_words(c)):
                if w == 0 or i + j >= nout:
                    continue
                p = self.let("p", f"{x} * {self.const(w)}")
                lo[i + j].append(f"({p} & {self.const(MASK)})")
                if i + j + 1 < nout:
                    hi[i + j + 1].append(f"({p} >> 32)")
        out, carry = [], None
        for t in range(nout):
            terms = lo[t] + hi[t] + ([carry] if carry else [])
            s = self.let("s", " + ".join(terms) if terms else self.const(0))
            out.append(self.let("w", f"{s} & {self.const(MASK)}"))
            carry = self.let("c", f"{s} >> 32")
        return out

    def add(self, a: list[str], b: list[str], sub: bool) -> list[str]:
        """a + b or a - b mod 2^(32·len(a))."""
        out, cy = [], None
        for x, y in zip(a, b):
            if sub:         # x + 2^32 - y - borrow, in [1, 2^33): the next borrow is 1 - (d >> 32)
                d = self.let("d", f"{x} + {self.const(1 << 32)} - {y}" + (f" - {cy}" if cy else ""))
                cy = self.let("b", f"{self.const(1)} - ({d} >> 32)")
            else:
                d = self.let("d", f"{x} + {y}" + (f" + {cy}" if cy else ""))
                cy = self.let("b", f"{d} >> 32")
            out.append(self.let("w", f"{d} & {self.const(MASK)}"))
        return out


def kernel_source(e, Lr: int) -> str:
    """`glv_split` for scalars of Lr words and the endomorphism `e` (`algebra.glv`)."""
    (a1, b1), (a2, b2) = e.v1, e.v2
    mw = e.m // 32
    if e.m % 32 or e.bits > 32 * W_OUT - 1 or max(map(abs, (a1, b1, a2, b2))).bit_length() > 32 * T - 1 \
            or min(e.g1, e.g2) < 0:
        raise ValueError(f"{e.name}: GLV constants outside the kernel's word layout")
    code = _Code()
    zero = [code.const(0)] * T
    ks = [f"x{j}" for j in range(Lr)]
    cs = []
    for g in (e.g1, e.g2):      # c = (k·g + 2^(m-1)) >> m: words mw.. of the full product
        prod = code.mul(ks, g, Lr + len(_words(g)) + 1, add={mw - 1: 1 << 31})
        cs.append((prod[mw:] + zero)[:T])
    kl = (ks + zero)[:T]
    k1 = kl
    for c, a in ((cs[0], a1), (cs[1], a2)):
        if a:
            k1 = code.add(k1, code.mul(c, abs(a), T), sub=a > 0)
    k2 = zero
    for c, b in ((cs[0], b1), (cs[1], b2)):
        if b:
            k2 = code.add(k2, code.mul(c, abs(b), T), sub=b > 0)
    mags = []
    for v in (k1, k2):          # the sign from the top bit; the magnitude k or 2^160 - k
        sg = code.let("sg", f"{v[T - 1]} >> 31")
        neg = code.add(zero, v, sub=True)
        mags.append((sg, [code.let("m", f"tl.where({sg} != 0, {y}, {x})") for x, y in zip(v[:W_OUT], neg[:W_OUT])]))
    lines = _kernel_head("glv_split", ["k", "k_c: tl.int64", "k_w: tl.int64", "digits", "d_t: tl.int64"]
                         + _ints("n", "nk", "C", "W"))
    lines += ["    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)",
              "    live = i < nk",
              "    col = i + (i // n) * n                  # b·2n + j for i = b·n + j"]
    lines += [f"    {name} = tl.full([BLOCK], {v}, tl.uint64)" for v, name in code.consts.items()]
    lines += [f"    x{j} = tl.load(k + i * k_c + {j} * k_w, mask=live, other=0).to(tl.uint32, bitcast=True)"
              f".to(tl.uint64)" for j in range(Lr)]
    lines += code.lines
    # signed digits of |k1| and |k2| times their signs, as `signed_digits_torch` makes them:
    # d_t = w_t + b_(tC-1) - 2^C·b_((t+1)C-1), the top bit of the window before carried along
    nil = code.const(0)                     # a word past the magnitude's four
    lines += ["    c32 = C.to(tl.int32)",
              "    wmask = (tl.full([BLOCK], 1, tl.uint64) << C.to(tl.uint64)) - 1"]
    lines += [f"    sgn{q} = 1 - 2 * {sg}.to(tl.int32)" for q, (sg, _) in enumerate(mags)]
    # (tl.full: tl.zeros is a jit function, which the interpreter refuses here)
    lines += [f"    tp{q} = tl.full([BLOCK], 0, tl.int32)" for q in range(2)]
    lines += ["    for t in range(W):",
              "        s = t * C",
              "        j = s // 32",
              "        o = (s % 32).to(tl.uint64)"]

    def word(m, j):
        expr = nil
        for idx in reversed(range(W_OUT)):
            expr = f"tl.where({j} == {idx}, {m[idx]}, {expr})"
        return expr
    for q, (_, m) in enumerate(mags):
        lines += [f"        lo{q} = {word(m, 'j')}",
                  f"        hi{q} = {word(m, 'j + 1')}",
                  f"        win{q} = (((lo{q} | (hi{q} << 32)) >> o) & wmask).to(tl.int32)",
                  f"        top{q} = win{q} >> (c32 - 1)",
                  f"        tl.store(digits + t * d_t + col + {q} * n, (win{q} + tp{q} - (top{q} << c32)) * sgn{q}, "
                  f"mask=live)",
                  f"        tp{q} = top{q}"]
    return "\n".join(lines) + "\n"


def module_source(e, Lr: int) -> str:
    head = '"""Generated by zktensor (kernels/glv_split.py). Do not edit: the kernel cache rewrites it."""\n' \
           + HEADER + "\n\n"
    return head + kernel_source(e, Lr)


def module(e, Lr: int, interpret: bool):
    """The loaded module of the endomorphism `e` (cached on disk by its source, and per process)."""
    return loaded_module("glv_split", (e.name, Lr, interpret), lambda: module_source(e, Lr),
                         TEMPLATE_VERSION, "triton-glv-split", ["glv_split"], interpret)


def aot_signature(fn, block: int) -> tuple[dict, dict]:
    """(signature, constexprs) of `glv_split` as it is launched, for `runtime.aot`."""
    sig, const = {}, {}
    for a in fn.arg_names:
        if a == "BLOCK":
            sig[a], const[a] = "constexpr", block
        else:
            sig[a] = {"k": "*i32", "digits": "*i32"}.get(a, "i64")
    return sig, const


__all__ = ["module", "module_source", "aot_signature", "W_OUT"]
