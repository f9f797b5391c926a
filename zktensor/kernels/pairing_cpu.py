"""The verifier's arithmetic compiled for the CPU: a pairing check in one call.

What runs. The step programs of `pairing_programs` (an Fq12 squaring, a line product, a
doubling step, ...) are traced, canonicalized and lowered by field-to-limbs (`int64`
strategy, one lane: a check is one long chain of dependent products, so there is nothing
to put in vector lanes; every product a call to one Montgomery-multiplication function, so
that LLVM compiles a few hundred calls rather than a few hundred inlined products). Around
them this module writes, in MLIR (`cpu_code`), one wrapper per step kind, which loads its
operands from a state buffer of Fq values and stores its results there, and a driver that
runs a schedule:

    pairing_run(state, schedule, n_steps, slots):
        for s in 0 .. n_steps:
            kind, at = schedule[2s], schedule[2s + 1]
            switch kind: call the wrapper of that kind with the slot numbers slots[at:]

A slot holds one Fq value, L 32-bit words in Montgomery form (the layout of every other
kernel's words, one value after another). The schedule is data, built here in Python
(`Schedule`) from the curve's pairing record (`algebra.pairing.PairingCurve`: the Miller
loop's digits, the seed's NAF, the hard part's exponents): the same compiled module runs a
plain check of n pairs, the verifier's check with prepared G2 lines, a Miller loop alone, a
final exponentiation alone, the G2 membership test of `algebra.pairing.g2_in_subgroup` and
the Straus of the verifier's vk_x (its schedule follows the scalars' bits). A launch per
step from Python would cost more than the step (a check is several hundred steps), hence
the driver.

The schedules follow `algebra.pairing.miller_loop` and `final_exponentiation` step for step
(the same lines, scaled the same way), so the values are the same elements of Fq12 (tests
compare the Miller loop and final exponentiation outputs word for word, and the checks with
py_ecc).

The module is compiled once per curve and host into the kernel cache (`runtime.cache`);
`compiled(curve)` is None where it can be neither found there nor compiled (no MLIR
bindings, or ZKTENSOR_NO_COMPILER): the callers then run `algebra.pairing` on Python ints.

Order in this file: kernel (MLIR text), host wrapper (schedules, state, the calls).
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import inspect
import subprocess
import sys
import threading

import numpy as np

from ..algebra import field as field_record
from ..algebra.curves import group
from ..algebra.pairing import PairingCurve, g2_eigenvalue, naf, pairing_curve
from ..runtime import cache
from .cpu_code import Code, compile_module
from .pairing_programs import programs

STRATEGY = "int64"

# =============================================================================
# Kernel: the step programs, their wrappers and the driver (MLIR text)
# =============================================================================


def _programs(curve: str) -> dict:
    """{kind: (n_inputs, n_outputs, step function)} (`pairing_programs.programs`)."""
    F = field_record(f"{curve}.fq")
    return programs(pairing_curve(curve), 3 * group(f"{curve}.g1").b % F.p)


@functools.lru_cache(maxsize=None)
def _traced(curve: str) -> dict:
    """{kind: (n_inputs, n_outputs, Program)}: the step programs, traced (no MLIR, but a
    one-shot verifier's start-up would feel it: only a cache miss needs them)."""
    from ..ir.program import trace
    F = field_record(f"{curve}.fq")
    return {k: (n_in, n_out, trace(fn, F, n_in)) for k, (n_in, n_out, fn) in _programs(curve).items()}


@functools.lru_cache(maxsize=None)
def kinds(curve: str) -> tuple[str, ...]:
    """The step kinds in the order of their numbers in a schedule (untraced)."""
    return tuple(_programs(curve))


def _wrapper(kind: str, n_in: int, n_out: int, L: int) -> str:
    """@w_<kind>(state, slots): operand k is the value in slot slots[k] (inputs, then outputs)."""
    c = Code(lanes=1)
    words = []
    for k in range(n_in):
        base = c.mul(c.load(c.gep("%sl", c.const(k), "i64"), "i64", 8), c.const(L))
        for j in range(L):
            words.append(c.load(c.gep("%st", c.add(base, c.const(j)), "i32"), "i32", 4))
    res = c.fresh("r")
    n_res = n_out * L
    c.emit(f"{res}:{n_res} = func.call @pk_{kind}({', '.join(words)}) : ({', '.join(['i32'] * len(words))}) "
           f"-> ({', '.join(['i32'] * n_res)})")
    for q in range(n_out):
        base = c.mul(c.load(c.gep("%sl", c.const(n_in + q), "i64"), "i64", 8), c.const(L))
        for j in range(L):
            c.store(f"{res}#{q * L + j}", c.gep("%st", c.add(base, c.const(j)), "i32"), "i32", 4)
    return "\n".join([f"  func.func private @w_{kind}(%st: !llvm.ptr, %sl: !llvm.ptr) {{"] + c.lines +
                     ["    return", "  }"])


def _driver(names) -> str:
    """@pairing_run(state, schedule, n_steps, slots): the loop of the module doc, one case of
    its switch per step kind (the wrappers stay calls: inlined, they would make one function
    of the whole module for LLVM)."""
    c = Code(lanes=1)
    one, two = c.const(1), c.const(2)
    with c.loop(c.const(0), "%n", one) as s:
        at = c.mul(s, two)
        kind = c.load(c.gep("%sched", at, "i64"), "i64", 8)
        pos = c.load(c.gep("%sched", c.add(at, one), "i64"), "i64", 8)
        sl = c.gep("%slots", pos, "i64")
        c.emit(f"scf.index_switch {c._index(kind)}")
        for i, name in enumerate(names):
            c.emit(f"case {i} {{")
            c.emit(f"  func.call @w_{name}(%st, {sl}) {{no_inline}} : (!llvm.ptr, !llvm.ptr) -> ()")
            c.emit("  scf.yield")
            c.emit("}")
        c.emit("default {")
        c.emit("  scf.yield")
        c.emit("}")
    head = "  func.func @pairing_run(%st: !llvm.ptr, %sched: !llvm.ptr, %n: i64, %slots: !llvm.ptr) {"
    return "\n".join([head] + c.lines + ["    return", "  }"])


def _glue(curve: str) -> str:
    """The wrappers and the driver: the module's text beside the step kernels."""
    L = field_record(f"{curve}.fq").limbs32
    progs = _traced(curve)
    return "\n".join([_wrapper(k, n_in, n_out, L) for k, (n_in, n_out, _) in progs.items()] +
                     [_driver(list(progs))])


def module_text(curve: str) -> str:
    """The whole module: the outlined product, the step kernels (private, inlined into their
    wrappers), the wrappers and the driver."""
    from ..passes import canonicalize, field_to_limbs
    from ..passes.field_io import FieldFunc
    funcs = [FieldFunc.from_program(prog, name=f"pk_{k}") for k, (_, _, prog) in _traced(curve).items()]
    funcs = canonicalize.run(funcs)
    kernels = field_to_limbs.run(funcs, STRATEGY, lanes=1, outline_mul=True).strip()
    assert kernels.startswith("module {") and kernels.endswith("}")
    body = kernels[len("module {"):-1].replace("func.func @pk_", "func.func private @pk_")
    return "module {\n" + body + "\n" + _glue(curve) + "\n}"


def _cache_key(curve: str) -> str:
    """The module's entry: the traced programs, the glue and `module_text` (how the rest is
    put together) determine it, with the compiler's fingerprint that `cache.entry_key` adds;
    so a warm cache needs no lowering to find it, and host-side edits here keep it. The
    digest of the first three is remembered per package source (`cache.memo`), so a
    process that verifies does not trace them."""
    def digest() -> str:
        h = hashlib.sha256(inspect.getsource(module_text).encode())
        for k, (_, _, prog) in _traced(curve).items():
            h.update(f"{k}\n{prog.text()}\n".encode())
        h.update(_glue(curve).encode())
        return h.hexdigest()
    return cache.entry_key(cache.memo(f"pairing-{curve}", digest), STRATEGY, "cpu-pairing")


class _Library:
    def __init__(self, entry):
        self.lib = ctypes.CDLL(str(entry / "kernels.so"))
        self.run = self.lib.pairing_run
        self.run.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p]
        self.run.restype = None


_libs_lock = threading.Lock()


def _load(curve: str, build: bool) -> _Library:
    """The compiled module for `curve`: from the kernel cache, else (`build`) compiled now;
    _NotHere where it is not cached and not compiled now, ImportError without the MLIR
    bindings."""
    key = _cache_key(curve)
    entry = cache.lookup(key)
    if entry is None:
        if not build:
            raise _NotHere("no cached pairing kernels (not compiling them in this process)")
        if cache.compiler_disabled():
            raise _NotHere("no cached pairing kernels and compiling is switched off (ZKTENSOR_NO_COMPILER)")
        from ..ir import dialects
        dialects.mlir()                     # ImportError without the bindings
        text = module_text(curve)
        entry = cache.build(key, lambda d: (compile_module(text, d), {"kind": "pairing_cpu", "curve": curve})[1])
    return _Library(entry)


# =============================================================================
# Host wrapper: schedules, the state buffer, the calls
# =============================================================================


class Schedule:
    """A program for the driver: steps over numbered slots. Values are lists of slot
    numbers (an Fq12 value is 12 slots, in `pairing_programs.flat12`'s order)."""

    def __init__(self, curve: str):
        self.curve = curve
        self.kind_ids = {k: i for i, k in enumerate(kinds(curve))}
        self.n_slots = 0
        self.steps: list[int] = []
        self.slots: list[int] = []
        self._zeros: list[int] = []

    def alloc(self, n: int) -> list[int]:
        out = list(range(self.n_slots, self.n_slots + n))
        self.n_slots += n
        return out

    def zeros(self, n: int) -> list[int]:
        """n slots that hold 0 throughout (the state starts zeroed and no step writes them)."""
        if len(self._zeros) < n:
            self._zeros += self.alloc(n - len(self._zeros))
        return self._zeros[:n]

    def step(self, kind: str, ins: list[int], outs: list[int] | int) -> list[int]:
        """Run `kind` on the values in `ins`; the results go to `outs` (slots, which may be
        inputs: a wrapper loads every operand before it stores), or to that many new slots."""
        if isinstance(outs, int):
            outs = self.alloc(outs)
        self.steps += [self.kind_ids[kind], len(self.slots)]
        self.slots += list(ins) + list(outs)
        return outs

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(self.steps, dtype=np.int64), np.asarray(self.slots, dtype=np.int64)


class Lines:
    """A G2 point's prepared lines (`algebra.pairing.prepare_g2`) as Montgomery words: the
    kinds ("d" or "a", in loop order) and a (count·6, L) word array of (cy, cx, c)."""

    def __init__(self, curve: str, prepared):
        self.kinds = tuple(kind for kind, _ in prepared)
        F = field_record(f"{curve}.fq")
        self.words = _to_words(F, [v for _, line in prepared for q in line for v in q])


def _to_words(F, values) -> np.ndarray:
    """Python ints (any representatives) -> (n, L) uint32 Montgomery-form words."""
    p, R, L = F.p, F.R, F.limbs32
    raw = b"".join((v * R % p).to_bytes(4 * L, "little") for v in values)
    return np.frombuffer(raw, dtype="<u4").reshape(len(values), L)


def _from_words(F, words: np.ndarray) -> list[int]:
    p, Rinv = F.p, pow(F.R, -1, F.p)
    raw = np.ascontiguousarray(words, dtype="<u4").tobytes()
    n = 4 * F.limbs32
    return [int.from_bytes(raw[i:i + n], "little") * Rinv % p for i in range(0, len(raw), n)]


def _fq12(values) -> tuple:
    q = [(values[2 * k], values[2 * k + 1]) for k in range(6)]
    return ((q[0], q[1], q[2]), (q[3], q[4], q[5]))


def _flat12(f) -> list[int]:
    return [c for half in f for q in half for c in q]


class _Plan:
    """A schedule with where its values go: `fixed` slots with their constant words, `inputs`
    named groups of slots filled per call, `out` the result's slots."""

    def __init__(self, sched: Schedule, inputs: dict, out: list[int], fixed: list[tuple[list[int], np.ndarray]]):
        self.steps, self.slots = sched.arrays()
        self.n_steps = len(sched.steps) // 2
        self.inputs, self.out, self.n_slots = inputs, out, sched.n_slots
        self.fixed = fixed


class CompiledPairing:
    """The compiled pairing of one curve (see the module doc). Points are Python-int affine
    tuples as in `algebra.pairing` (None the identity); `prepared` pairs are (P, Lines)."""

    def __init__(self, curve: str, lib: _Library):
        self.curve, self.lib = curve, lib
        self.C: PairingCurve = pairing_curve(curve)
        self.kind_ids = {k: i for i, k in enumerate(kinds(curve))}
        self.F = field_record(f"{curve}.fq")
        self.one_words = _to_words(self.F, _flat12(self.C.tower.one))
        self._plans: dict = {}
        self._lock = threading.Lock()

    # -- schedules ------------------------------------------------------------------------
    def _miller(self, S: Schedule, n_full: int, line_kinds: tuple, inputs: dict, fixed: list) -> list[int]:
        """The Miller loop of n_full pairs with full steps and of prepared pairs whose lines
        have `line_kinds`, step for step as `algebra.pairing.miller_loop`; f's slots."""
        C = self.C
        f = S.alloc(12)
        fixed.append((f, self.one_words))
        full = []
        for i in range(n_full):
            # P's (yP, -xP, 2yP, -3xP), Q, -Q, and R (Q, Z = 1 at the start)
            P, Q, negQ, R = S.alloc(4), S.alloc(4), S.alloc(4), S.alloc(6)
            inputs[f"full{i}"] = P + Q + negQ + R
            full.append((P, Q, negQ, R))
        prepared = []
        for j, kinds_j in enumerate(line_kinds):
            P, lines = S.alloc(4), S.alloc(6 * len(kinds_j))
            inputs[f"prep{j}"] = P
            inputs[f"lines{j}"] = lines
            prepared.append((P, lines, kinds_j))
        coeffs = S.alloc(6)

        def prepared_lines(k):
            for P, lines, kinds_j in prepared:
                a, b = (P[2], P[3]) if kinds_j[k] == "d" else (P[0], P[1])
                S.step("line", f + lines[6 * k:6 * k + 6] + [a, b], f)

        k = 0
        for n, digit in enumerate(C.loop):
            if n:                                  # f = 1 before the first lines
                S.step("sqr12", f, f)
            for P, Q, negQ, R in full:
                S.step("dbl", R, R + coeffs)
                S.step("line", f + coeffs + [P[2], P[3]], f)
            prepared_lines(k)
            k += 1
            if digit:
                for P, Q, negQ, R in full:
                    S.step("add", R + (Q if digit > 0 else negQ), R + coeffs)
                    S.step("line", f + coeffs + [P[0], P[1]], f)
                prepared_lines(k)
                k += 1
        if C.family == "bn":                       # the lines through pi(Q) and -pi^2(Q)
            for P, Q, negQ, R in full:
                for kind in ("pi", "negpi2"):
                    S.step("add", R + S.step(kind, Q, 4), R + coeffs)
                    S.step("line", f + coeffs + [P[0], P[1]], f)
            prepared_lines(k)
            prepared_lines(k + 1)
            k += 2
        for _, _, kinds_j in prepared:
            if len(kinds_j) != k:
                raise ValueError(f"prepared lines: {len(kinds_j)} of them, the {self.curve} Miller loop has {k}")
        if C.loop_negative:
            S.step("conj12", f, f)
        return f

    def _final_exp(self, S: Schedule, f: list[int]) -> list[int]:
        """f^(m·(p^12 - 1)/r), step for step as `algebra.pairing.final_exponentiation`."""
        C = self.C
        # f^(p^6 - 1) = conj(f) / f = conj(f)^2 / N(f), N(f) = f·conj(f) in Fq6 (its w-part is 0)
        c = S.step("conj12", f, 12)
        t = S.step("inv6", S.step("mul12", f + c, 12)[:6], 6)
        g = S.step("mul12", S.step("sqr12", c, 12) + t + S.zeros(6), 12)
        f = S.step("mul12", S.step("frob2", g, 12) + g, 12)                            # ^(p^2 + 1)

        def pow_x(a):                              # a^x in the cyclotomic subgroup, by the NAF of |x|
            a_inv = S.step("conj12", a, 12)
            r = a
            for digit in C.x_naf[1:]:
                r = S.step("csqr", r, r if r is not a else 12)
                if digit:
                    S.step("mul12", r + (a if digit > 0 else a_inv), r)
            return S.step("conj12", r, r) if C.x < 0 else r

        powers = [f]
        while len(powers) < len(C.hard[0]):
            powers.append(pow_x(powers[-1]))
        terms = []
        for i, row in enumerate(C.hard):
            for k, c in enumerate(row):
                if c:
                    base = S.step(f"frob{i}", powers[k], 12) if i else powers[k]
                    terms.append((S.step("conj12", base, 12) if c < 0 else base, abs(c)))
        # one multi-exponentiation by the small |c| sharing its squarings; `result` starts as
        # one of the bases (not a copy), so its first update goes to new slots
        result, owned = None, False
        for bit in reversed(range(max(e for _, e in terms).bit_length())):
            if result is not None:
                result, owned = S.step("csqr", result, result if owned else 12), True
            for base, e in terms:
                if e >> bit & 1:
                    if result is None:
                        result = base
                    else:
                        result, owned = S.step("mul12", result + base, result if owned else 12), True
        return result

    def _g2_member(self, S: Schedule, inputs: dict) -> list[int]:
        """[|lambda|]Q by doubling and addition steps (lambda = `algebra.pairing.g2_eigenvalue`)
        and psi(Q): the slots of R = (X, Y, Z) and of psi(Q)."""
        Q, negQ, R = S.alloc(4), S.alloc(4), S.alloc(6)
        inputs["q"] = Q + negQ + R
        coeffs = S.alloc(6)
        for digit in naf(abs(g2_eigenvalue(self.curve)))[1:]:
            S.step("dbl", R, R + coeffs)
            if digit:
                S.step("add", R + (Q if digit > 0 else negQ), R + coeffs)
        return R + S.step("pi", Q, 4)

    def _plan(self, what: str, n_full: int = 0, line_kinds: tuple = (), extra: bool = False) -> _Plan:
        """The schedule of `what`: "ml" (Miller loop), "fe" (final exponentiation of an input
        f), "check" (both), for n_full full pairs and prepared pairs with `line_kinds`,
        `extra` an Fq12 input multiplied into the Miller loop value; or "g2" (`g2_in_subgroup`)."""
        key = (what, n_full, line_kinds, extra)
        plan = self._plans.get(key)
        if plan is None:
            S, inputs, fixed = Schedule(self.curve), {}, []
            if what == "g2":
                out = self._g2_member(S, inputs)
            elif what == "fe":
                inputs["f"] = S.alloc(12)
                out = self._final_exp(S, inputs["f"])
            else:
                out = self._miller(S, n_full, line_kinds, inputs, fixed)
                if extra:
                    inputs["extra"] = S.alloc(12)
                    S.step("mul12", out + inputs["extra"], out)
                if what == "check":
                    out = self._final_exp(S, out)
            plan = _Plan(S, inputs, out, fixed)
            with self._lock:
                self._plans[key] = plan
        return plan

    # -- running ----------------------------------------------------------------------------
    def _run(self, plan: _Plan, values: dict) -> np.ndarray:
        """Fill a fresh state (so that threads may share this object), run, return the
        result's words (len(plan.out), L)."""
        state = np.zeros((plan.n_slots, self.F.limbs32), dtype=np.uint32)
        for slots, words in plan.fixed:
            state[slots] = words
        for name, words in values.items():
            state[plan.inputs[name]] = words
        self.lib.run(state.ctypes.data, plan.steps.ctypes.data, plan.n_steps, plan.slots.ctypes.data)
        return state[plan.out]

    def _ml_values(self, pairs, prepared, extra):
        """(plan key parts, input words) for the live pairs (the identity contributes 1)."""
        F = self.F
        full = [(P, Q) for P, Q in pairs if P is not None and Q is not None]
        prep = [(P, lines) for P, lines in prepared if P is not None and lines.kinds]
        values = {}
        for i, ((x, y), (qx, qy)) in enumerate(full):
            negy = (-qy[0], -qy[1])
            values[f"full{i}"] = _to_words(F, [y, -x, 2 * y, -3 * x, *qx, *qy, *qx, *negy, *qx, *qy, 1, 0])
        for j, ((x, y), lines) in enumerate(prep):
            values[f"prep{j}"] = _to_words(F, [y, -x, 2 * y, -3 * x])
            values[f"lines{j}"] = lines.words
        if extra is not None:
            values["extra"] = _to_words(F, _flat12(extra))
        return (len(full), tuple(lines.kinds for _, lines in prep), extra is not None), values

    def miller_loop(self, pairs, prepared=(), extra=None) -> tuple:
        """prod f_Q(P) over `pairs` (P, Q) and `prepared` (P, Lines), times `extra` (an Fq12
        tuple or None): the value of `algebra.pairing.miller_loop`."""
        (n_full, line_kinds, has_extra), values = self._ml_values(pairs, prepared, extra)
        if not n_full and not line_kinds:
            return self.C.tower.reduce12(extra) if has_extra else self.C.tower.one
        words = self._run(self._plan("ml", n_full, line_kinds, has_extra), values)
        return _fq12(_from_words(self.F, words))

    def final_exponentiation(self, f) -> tuple:
        """f^(m·(p^12 - 1)/r): the value of `algebra.pairing.final_exponentiation`."""
        words = self._run(self._plan("fe"), {"f": _to_words(self.F, _flat12(f))})
        return _fq12(_from_words(self.F, words))

    def check(self, pairs, prepared=(), extra=None) -> bool:
        """Whether the product of the pairings (and of `extra`'s final exponentiation) is 1."""
        (n_full, line_kinds, has_extra), values = self._ml_values(pairs, prepared, extra)
        if not n_full and not line_kinds and not has_extra:
            return True
        words = self._run(self._plan("check", n_full, line_kinds, has_extra), values)
        return bool(np.array_equal(words, self.one_words))


    def g2_in_subgroup(self, Q) -> bool:
        """`algebra.pairing.g2_in_subgroup` for a point Q of the twist (on the curve: the
        caller checks that; not None): psi(Q) = [lambda]Q, compiled. The steps' formulas are
        incomplete, but Z = 0 is absorbing in both (Z3 = 8·Y^3·Z, and Z·lam^3 where an
        addition meets R = ±Q), so a result with Z != 0 went through no exceptional case and
        is [|lambda|]Q; a point of G2 meets none (its multiples below r are neither O nor ±Q)."""
        (x0, x1), (y0, y1) = Q
        F, p = self.F, self.F.p
        words = self._run(self._plan("g2"), {"q": _to_words(F, [x0, x1, y0, y1, x0, x1, -y0, -y1,
                                                                 x0, x1, y0, y1, 1, 0])})
        X0, X1, Y0, Y1, Z0, Z1, px0, px1, py0, py1 = _from_words(F, words)
        if (Z0, Z1) == (0, 0):
            return False
        mul2 = self.C.tower.mul2
        sign = -1 if g2_eigenvalue(self.curve) < 0 else 1             # [lambda]Q = (X : sign·Y : Z)
        return (mul2((px0, px1), (Z0, Z1)) == (X0, X1) and
                mul2((py0, py1), (Z0, Z1)) == (sign * Y0 % p, sign * Y1 % p))


    def g1_lincomb(self, base, terms):
        """base + sum s·P over (s, P) in terms, s >= 0, P affine in G1 (not None); base affine
        or None: `curves.lincomb`'s value by its Straus (the doublings shared by all terms,
        then an addition per set bit, most significant bit first), compiled with complete
        projective formulas, so that no case needs a branch. The schedule depends on the
        scalars' bits: it is built per call, with numpy."""
        F, p = self.F, self.F.p
        terms = [(s, P) for s, P in terms if s]
        n = len(terms)
        bits = max((s.bit_length() for s, _ in terms), default=0)
        # slots: acc (0..2), then each term's x, y, then base's x, y
        acc = [0, 1, 2]
        raw = b"".join(s.to_bytes(-(-bits // 8) or 1, "big") for s, _ in terms)
        bitmap = np.unpackbits(np.frombuffer(raw, np.uint8).reshape(n, -1), axis=1)[:, -bits:] \
            if n else np.zeros((0, 0), np.uint8)                    # (n, bits), most significant first
        # one row of 8 slot numbers per step: a doubling (acc, acc, -, -) where a bit starts
        # (but the first: it would double the identity), then (acc, P_i, acc) per set bit
        order_bit, order_term = np.nonzero(bitmap.T)                    # by bit, then term
        kd, ka = self.kind_ids["g1dbl"], self.kind_ids["g1add"]
        dbl_at = np.arange(1, bits)
        bit_of = np.concatenate([dbl_at, order_bit, [bits] if base is not None else []])
        rank = np.concatenate([np.zeros(len(dbl_at)), np.ones(len(order_bit)), [1] if base is not None else []])
        term_of = np.concatenate([np.full(len(dbl_at), -1), order_term, [n] if base is not None else []])
        order = np.lexsort((term_of, rank, bit_of))
        is_add = rank[order] == 1
        rows = np.zeros((len(order), 8), dtype=np.int64)
        rows[:, 0:3] = acc
        rows[~is_add, 3:6] = acc
        t = term_of[order][is_add].astype(np.int64)
        rows[is_add, 3] = 3 + 2 * t
        rows[is_add, 4] = 4 + 2 * t
        rows[is_add, 5:8] = acc
        steps = np.empty((len(order), 2), dtype=np.int64)
        steps[:, 0] = np.where(is_add, ka, kd)
        steps[:, 1] = 8 * np.arange(len(order))
        coords = [c for _, P in terms for c in P] + list(base or (0, 0))
        state = np.zeros((3 + len(coords), F.limbs32), dtype=np.uint32)
        state[:3] = _to_words(F, [0, 1, 0])                             # the identity (0 : 1 : 0)
        state[3:] = _to_words(F, coords)
        self.lib.run(state.ctypes.data, steps.ctypes.data, len(order), rows.ctypes.data)
        X, Y, Z = _from_words(F, state[:3])
        if Z == 0:
            return None
        zi = pow(Z, -1, p)
        return (X * zi % p, Y * zi % p)


_compiled: dict = {}


class _NotHere(ImportError):
    """Not cached and not compiled now: asked again later, the cache may hold it."""


failed: dict = {}      # curve -> why its module could not be had (not asked again)


def compiled(curve: str, build: bool | None = None) -> CompiledPairing | None:
    """The compiled pairing of `curve` ("bn254", "bls12_381"), from the kernel cache or
    compiled on first use; None where it is not cached and not compiled here: the caller
    then runs `algebra.pairing` on Python ints.

    `build`: compile a module the cache lacks (False: never; True: where the MLIR bindings
    are and ZKTENSOR_NO_COMPILER is not set). By default only in a process that has loaded
    torch already (a prover, the service, zkml, the tests): the bindings are torch-mlir, so
    elsewhere (a one-shot `zktensor verify`) a cold cache would cost torch's import and the
    compile, far more than the one check on Python ints; `zktensor warmup` compiles it.
    Where a compile fails (no bindings, no linker), `failed[curve]` says why and the process
    does not try again."""
    if build is None:
        build = "torch" in sys.modules
    with _libs_lock:
        if curve not in _compiled and curve not in failed:
            try:
                _compiled[curve] = CompiledPairing(curve, _load(curve, build))
            except _NotHere:
                return None
            except (ImportError, OSError, RuntimeError, subprocess.CalledProcessError) as e:
                failed[curve] = e
        return _compiled.get(curve)
