"""Driver code for CPU kernels: loops, loads and stores written as MLIR text (scf, arith,
llvm dialects), lowered to LLVM and compiled into a shared object in the kernel cache.

The field arithmetic inside such loops comes from the compiler's passes
(`ntt_cpu` calls the butterflies that field-to-limbs lowers); this module only
holds the text helpers and the lowering of the surrounding driver.

    c = Code()
    with c.loop("%lo", "%hi", c.const(1)) as i:
        x = c.load(c.gep("%src", i, "i64"), "i64", 8)
        c.store(c.add(x, c.const(1)), c.gep("%dst", i, "i64"), "i64", 8)
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import threading


class Code:
    """A few helpers for writing the driver's MLIR (custom op syntax)."""

    def __init__(self, lanes: int = 8):
        self.lanes = lanes
        self.lines: list[str] = []
        self.count = 0
        self.depth = 2

    def fresh(self, hint="t"):
        self.count += 1
        return f"%{hint}{self.count}"

    def emit(self, line):
        self.lines.append("  " * self.depth + line)

    def const(self, value, t="i64"):
        r = self.fresh("c")
        self.emit(f"{r} = arith.constant {value} : {t}")
        return r

    def bin(self, op, a, b, t="i64"):
        r = self.fresh()
        self.emit(f"{r} = arith.{op} {a}, {b} : {t}")
        return r

    def add(self, a, b, t="i64"): return self.bin("addi", a, b, t)
    def mul(self, a, b, t="i64"): return self.bin("muli", a, b, t)
    def shl(self, a, b, t="i64"): return self.bin("shli", a, b, t)
    def shr(self, a, b, t="i64"): return self.bin("shrui", a, b, t)
    def and_(self, a, b, t="i64"): return self.bin("andi", a, b, t)

    def cmp(self, pred, a, b, t="i64"):
        r = self.fresh()
        self.emit(f"{r} = arith.cmpi {pred}, {a}, {b} : {t}")
        return r

    def gep(self, base, off, elt, vector=False):
        r = self.fresh("p")
        if vector:
            self.emit(f"{r} = llvm.getelementptr {base}[{off}] : (!llvm.ptr, vector<{self.lanes}xi64>) -> "
                      f"vector<{self.lanes}x!llvm.ptr>, {elt}")
        else:
            self.emit(f"{r} = llvm.getelementptr {base}[{off}] : (!llvm.ptr, i64) -> !llvm.ptr, {elt}")
        return r

    def load(self, ptr, t, align):
        r = self.fresh("l")
        self.emit(f"{r} = llvm.load {ptr} {{alignment = {align} : i64}} : !llvm.ptr -> {t}")
        return r

    def store(self, val, ptr, t, align):
        self.emit(f"llvm.store {val}, {ptr} {{alignment = {align} : i64}} : {t}, !llvm.ptr")

    def gather(self, ptrs, elt):
        vt = f"vector<{self.lanes}x{elt}>"
        m = self.fresh("m")
        z = self.fresh("z")
        r = self.fresh("g")
        self.emit(f"{m} = llvm.mlir.constant(dense<true> : vector<{self.lanes}xi1>) : vector<{self.lanes}xi1>")
        self.emit(f"{z} = llvm.mlir.constant(dense<0> : {vt}) : {vt}")
        self.emit(f"{r} = llvm.intr.masked.gather {ptrs}, {m}, {z} {{alignment = {4 if elt == 'i32' else 8} : i32}}"
                  f" : (vector<{self.lanes}x!llvm.ptr>, vector<{self.lanes}xi1>, {vt}) -> {vt}")
        return r

    def scatter(self, val, ptrs, elt):
        m = self.fresh("m")
        self.emit(f"{m} = llvm.mlir.constant(dense<true> : vector<{self.lanes}xi1>) : vector<{self.lanes}xi1>")
        self.emit(f"llvm.intr.masked.scatter {val}, {ptrs}, {m} {{alignment = {4 if elt == 'i32' else 8} : i32}}"
                  f" : vector<{self.lanes}x{elt}>, vector<{self.lanes}xi1> into vector<{self.lanes}x!llvm.ptr>")

    def splat(self, x, elt="i64"):
        r = self.fresh("b")
        self.emit(f"{r} = vector.broadcast {x} : {elt} to vector<{self.lanes}x{elt}>")
        return r

    def call(self, fn, args, n_res, tin, tout):
        r = self.fresh("r")
        self.emit(f"{r}:{n_res} = func.call @{fn}({', '.join(args)}) : ({', '.join([tin] * len(args))}) -> "
                  f"({', '.join([tout] * n_res)})")
        return [f"{r}#{i}" for i in range(n_res)]

    @contextlib.contextmanager
    def loop(self, lo, hi, step):
        """scf.for over i64 bounds; yields the i64 induction value."""
        lo_i, hi_i, st_i = (self._index(x) for x in (lo, hi, step))
        iv = self.fresh("iv")
        self.emit(f"scf.for {iv} = {lo_i} to {hi_i} step {st_i} {{")
        self.depth += 1
        r = self.fresh("i")
        self.emit(f"{r} = arith.index_cast {iv} : index to i64")
        yield r
        self.depth -= 1
        self.emit("}")

    @contextlib.contextmanager
    def when(self, cond):
        self.emit(f"scf.if {cond} {{")
        self.depth += 1
        yield
        self.depth -= 1
        self.emit("}")

    def _index(self, x):
        r = self.fresh("x")
        self.emit(f"{r} = arith.index_cast {x} : i64 to index")
        return r


LOWERING = ("builtin.module(inline, canonicalize, cse, loop-invariant-code-motion, convert-scf-to-cf, "
            "convert-vector-to-llvm, convert-math-to-llvm, convert-arith-to-llvm, convert-func-to-llvm, "
            "convert-cf-to-llvm, reconcile-unrealized-casts)")


def compile_module(text: str, out_dir: str, name: str = "kernels.so") -> str:
    """Parse, lower (`LOWERING`) and compile a driver module into out_dir/name."""
    from ..ir import dialects
    from ..passes import limbs_to_cpu
    limbs_to_cpu.refuse_rounded(text)
    _, passmanager, _, _ = dialects.mlir()
    ctx = dialects.context()
    module = dialects.parse(text, ctx)
    with ctx:
        passmanager.PassManager.parse(LOWERING).run(module.operation)
    return limbs_to_cpu.emit_shared_object(module, ctx, os.path.join(out_dir, name))


class Loops:
    """A module of driver loops over pointers and i64s, compiled on first use (or found in
    the kernel cache) and loaded once per process. `functions` names each function and its
    parameters as a string of "p" (pointer) and "i" (i64): ``{"count": "pip"}``. `get()`
    returns the library, or None where it cannot be had (no MLIR bindings and a cold
    cache, or no linker; `error` says why): the callers then take their numpy form."""

    def __init__(self, name: str, text, functions: dict[str, str]):
        self.name, self.text, self.functions = name, text, functions
        self.lib = None
        self.error: Exception | None = None
        self._lock = threading.Lock()

    def get(self):
        with self._lock:
            if self.lib is None and self.error is None:
                try:
                    self.lib = self._load()
                except (ImportError, OSError, RuntimeError) as e:
                    self.error = e
            return self.lib

    def _load(self):
        from ..runtime import cache
        text = self.text()
        key = cache.entry_key(text, "none", f"cpu-{self.name}")       # names the host CPU
        entry = cache.lookup(key) or cache.build(
            key, lambda d: (compile_module(text, d), {"kind": self.name})[1])
        lib = ctypes.CDLL(str(entry / "kernels.so"))
        kinds = {"p": ctypes.c_void_p, "i": ctypes.c_int64}
        for fn, params in self.functions.items():
            f = getattr(lib, fn)
            f.argtypes = [kinds[k] for k in params]
            f.restype = None
        return lib


# -- private vector functions over limbs (the compiler's field arithmetic) --------------------


def vector_function(F, name: str, groups: list, body, ifma: bool, lanes: int = 8,
                    strategy: str = "fp64") -> str:
    """`func.func private @name` over `lanes`-lane vectors of F's limbs: its arguments are
    `groups`, each (count, type) — count values of i32 storage words ("i32") or of the
    strategy's limbs ("i64") — and body(e, A, args) returns the results (`ir.builder.V`
    lists), with args[g][i] the limbs of value i of group g."""
    from ..ir.builder import Emitter, V
    from ..passes.limb_arith import limb_arith

    e = Emitter(lanes=lanes)
    A = limb_arith(strategy, e, F, ifma=ifma)
    args, k = [], 0
    for count, ty in groups:
        width = F.limbs32 if ty == "i32" else A.n
        group = []
        for _ in range(count):
            group.append([V(f"%a{k}_{j}", ty) for j in range(width)])
            k += 1
        args.append(group)
    results = body(e, A, args)
    flat_args = ", ".join(f"{a.name}: {e.ty(a.type)}" for g in args for xs in g for a in xs)
    rtypes = ", ".join(e.ty(r.type) for r in results)
    return "\n".join([f"  func.func private @{name}({flat_args}) -> ({rtypes}) {{",
                      e.text(),
                      f"    func.return {', '.join(r.name for r in results)} : {rtypes}",
                      "  }"])


def field_func(prog):
    """A traced program (a field `Program`, or an `ec` program: through ec-to-field) as one
    canonicalized `FieldFunc`, ready for `apply`."""
    from ..passes import canonicalize, lower_ec
    from ..passes.field_io import FieldFunc
    (f,) = canonicalize.run([FieldFunc.from_program(lower_ec(prog))])
    return f


def apply(A, F, e, f, inputs: list) -> list:
    """The limbs of f's outputs for the limbs of its inputs (one list per argument), its
    nodes lowered inline by field-to-limbs."""
    from ..passes.field_to_limbs import lower_nodes
    if len(inputs) != f.n_args:
        raise ValueError(f"{f.name}: {f.n_args} arguments, got {len(inputs)}")
    vals = dict(enumerate(inputs))
    lower_nodes(A, F, e, f, vals)
    return [vals[o] for o in f.outputs]
