"""Host side of compiled field programs: load from the kernel cache, check operands, launch.

A `CompiledProgram` runs its launch plan (see `passes._launch_plan`) over
limb tensors of shape (L, *batch), broadcasting batch shapes. Each kernel
sees every operand as a 2-D strided batch (rows x columns) so views run in
place; operands whose batch dimensions cannot be collapsed that way are
copied first.

Triton kernels run compiled on a CUDA device and under the Triton interpreter
(TRITON_INTERPRET=1, set while the generated module is imported) on the CPU.
CPU kernels are the shared object from limbs-to-cpu, called through ctypes
with rows split across threads. `run_many` also takes operands as addresses, which is how
host code without torch runs them over numpy arrays (`field_programs.run_host`).
"""
from __future__ import annotations

import ctypes
import json
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..runtime import cache
from ..runtime.cpu_isa import cpu_options
from ..runtime.host_memory import keep_freed_memory
from ..runtime.triton_modules import load_triton_module, triton_mode
from ..runtime.triton_passes import skip_coalesce
from ..runtime import counters, threads as _threads
from ..runtime.threads import launch_threads

if TYPE_CHECKING:       # torch is imported where tensors are handled: host arrays need none
    import torch

TRITON_BLOCK = 128


def broadcast_shapes(*shapes) -> tuple[int, ...]:
    """The broadcast of batch shapes (NumPy's rule; a mismatch raises RuntimeError, as torch's
    does). torch.broadcast_shapes imports torch._refs, which imports sympy: 0.8 s of a cold
    `zktensor prove`."""
    out: list[int] = []
    for shape in shapes:
        shape = tuple(shape)
        if len(shape) > len(out):
            out = [1] * (len(shape) - len(out)) + out
        for i, n in enumerate(shape, len(out) - len(shape)):
            if n != out[i] and n != 1 and out[i] != 1:
                raise RuntimeError(f"shapes {[tuple(s) for s in shapes]} do not broadcast")
            if out[i] == 1:
                out[i] = n
    return tuple(out)


def _operand_2d(t: torch.Tensor, batch: tuple[int, ...]):
    """(tensor, limb stride, row stride, column stride) addressing t over batch as 2-D:
    the last batch dim is the column, the others collapse into rows."""
    if len(batch) == 1 and t.dim() == 2 and t.shape[1] == batch[0]:
        ls, is_ = t.stride()          # the common case (a point kernel's (L, m) views), without
        return t, ls, 0, is_          # the reshape/expand, a cost paid per operand per launch
    extra = len(batch) - (t.dim() - 1)
    t = t.reshape((t.shape[0],) + (1,) * extra + tuple(t.shape[1:])).expand((t.shape[0],) + batch)
    if len(batch) <= 1:
        st = t.stride()
        return t, st[0], 0, (st[1] if batch else 0)

    def lead_dims(x):
        return [(n, s) for n, s in zip(batch[:-1], x.stride()[1:-1]) if n != 1]

    lead = lead_dims(t)
    if not all(s1 == s2 * n2 for (_, s1), (n2, s2) in zip(lead, lead[1:])):
        t = t.contiguous()
        lead = lead_dims(t)
    st = t.stride()
    return t, st[0], (lead[-1][1] if lead else 0), st[-1]


def _in_place(t: torch.Tensor, batch: tuple[int, ...]) -> bool:
    """Whether `_operand_2d` addresses t itself, so a kernel can write it: not where t's
    batch dims do not collapse into rows (a view with gaps), which it copies."""
    if len(batch) <= 1 or t.is_contiguous():
        return True
    return _operand_2d(t, batch)[0].data_ptr() == t.data_ptr()


class CompiledProgram:
    def __init__(self, entry: Path, target: str, limbs: int):
        self.entry = entry
        self.target = target
        self.limbs = limbs
        self.meta = json.loads((entry / "meta.json").read_text())
        # the launch plan with hashable value names: (kernel, input keys, output keys)
        self._calls = [(c["kernel"], [tuple(v) for v in c["inputs"]], [tuple(v) for v in c["outputs"]])
                       for c in self.meta["calls"]]
        self._outputs = [tuple(v) for v in self.meta["outputs"]]
        self._mods = {}
        self._lib = None
        self._fns: dict = {}
        self._slots = None           # run_many's kernel operand order, made on first use
        self._cost: dict = {}        # entry point -> seconds per element on one thread, measured

    # -- artifacts -----------------------------------------------------------
    @property
    def source(self) -> str:
        return (self.entry / "kernels.py").read_text()

    def triton_module(self, interpret: bool):
        if interpret not in self._mods:
            self._mods[interpret] = load_triton_module(str(self.entry / "kernels.py"), interpret)
        return self._mods[interpret]

    def _cpu_fn(self, name: str, entry: str = "run"):
        key = (name, entry)
        if key not in self._fns:
            self._fns[key] = self._load_cpu_fn(name, entry)
        return self._fns[key]

    def _load_cpu_fn(self, name: str, entry: str):
        if self._lib is None:
            keep_freed_memory()
            self._lib = ctypes.CDLL(str(self.entry / "kernels.so"))
        if not hasattr(self._lib, f"{name}_{entry}"):
            return None
        fn = getattr(self._lib, f"{name}_{entry}")
        if fn.argtypes is None:
            call = next(c for c in self.meta["calls"] if c["kernel"] == name)
            n_ops = len(call["inputs"]) + len(call["outputs"])
            fn.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64] * n_ops + \
                [ctypes.c_int64] * 3
            fn.restype = None
        return fn

    # -- running ---------------------------------------------------------------
    def __call__(self, *inputs: torch.Tensor, out=None) -> list[torch.Tensor]:
        """Run over limb tensors; `out` optionally gives tensors (views) for the
        program's outputs (None entries are allocated)."""
        import torch            # here, not at the top: host arrays (`run_many`) need no torch
        plan = self.meta
        if len(inputs) != plan["n_inputs"]:
            raise TypeError(f"program takes {plan['n_inputs']} inputs, got {len(inputs)}")
        device = inputs[0].device
        where = inputs[0].get_device()          # an int: cheaper than comparing torch.device objects
        shapes = set()
        for t in inputs:
            shape = t.shape
            if t.dtype != torch.int32 or shape[0] != self.limbs:
                raise ValueError(f"operand must be int32 limbs of shape ({self.limbs}, ...), got "
                                 f"{tuple(shape)} {t.dtype}")
            if t.get_device() != where:
                raise ValueError(f"operands on different devices: {device} and {t.device}")
            shapes.add(shape[1:])
        batch = tuple(shapes.pop() if len(shapes) == 1 else broadcast_shapes(*shapes))
        values = {(i, None): t for i, t in enumerate(inputs)}
        given = {}
        if out is not None:
            if len(out) != len(self._outputs):
                raise ValueError(f"out= needs {len(self._outputs)} tensors")
            for v, t in zip(self._outputs, out):
                if t is not None:
                    if t.dtype != torch.int32 or tuple(t.shape) != (self.limbs,) + batch:
                        raise ValueError(f"out tensor must be int32 of shape {(self.limbs,) + batch}")
                    given[v] = t
        shape = (self.limbs,) + batch
        late = []               # (given view, the buffer written instead): copied in at the end
        for kernel, ins, outs in self._calls:
            ts = []
            for v in outs:
                t = given.get(v)
                if t is None or not _in_place(t, batch):
                    buf = torch.empty(shape, dtype=torch.int32, device=device)
                    if t is not None:
                        late.append((t, buf))
                    t = buf
                ts.append(t)
            self.launch(kernel, ts, [values[v] for v in ins], batch)
            values.update(zip(outs, ts))
        for t, buf in late:
            t.copy_(buf)
        return [given.get(v, values[v]) for v in self._outputs]

    def run_many(self, jobs) -> None:
        """The program over several batches at once: jobs is a list of (inputs, outs, m),
        every operand a (L, m) int32 view with unit column stride, or on the CPU its address
        (data pointer, limb stride) as a tuple, and every output given. On the CPU a
        one-kernel program's jobs are shared by the threads as one launch would be: the
        columns of all jobs, cut into equal shares, each share one task that calls the
        kernel on its pieces (the MSM's rank-major tree level is dozens of column ranges,
        many too small to split alone: launched one by one they ran mostly on one thread;
        addresses spare the caller a tensor view per operand). Elsewhere the jobs run
        one after another."""
        jobs = [j for j in jobs if j[2]]
        if self.target != "cpu" or len(self._calls) != 1:
            for ins, outs, _ in jobs:
                self(*ins, out=outs)
            return
        if not jobs:
            return
        counters.launch()           # one launch, shared by the threads
        name = self._calls[0][0]
        fn, vfn = self._cpu_fn(name), self._cpu_fn(name, "vrun")
        slots = self._kernel_slots()
        n_in, n_out = self.meta["n_inputs"], len(self._outputs)
        pieces = []                   # (kernel operand addresses, columns)
        for ins, outs, m in jobs:
            if len(ins) != n_in or len(outs) != n_out:
                raise TypeError(f"program takes {n_in} inputs and {n_out} outputs")
            ops = []
            for is_out, i in slots:
                t = outs[i] if is_out else ins[i]
                if not isinstance(t, tuple):
                    import torch
                    if t.dtype != torch.int32 or t.shape != (self.limbs, m) or (m > 1 and t.stride(1) != 1):
                        raise ValueError(f"run_many operands must be int32 ({self.limbs}, {m}) views with "
                                         f"unit column stride, got {tuple(t.shape)} {t.dtype}")
                    t = (t.data_ptr(), t.stride(0))
                ops.append(t)
            pieces.append((ops, m))
        total = sum(m for _, m in pieces)
        # shared by threads as `_launch_cpu` shares a launch: from SPLIT_FROM columns and
        # SPLIT_WORK of one-thread time, by the kernel's measured cost (a first launch runs on
        # one thread, timed)
        timer = vfn if vfn is not None else fn
        cost = self._cost.get(id(timer))
        split = total >= SPLIT_FROM and (SPLIT_WORK <= 0 or (cost is not None and total * cost >= SPLIT_WORK))
        threads = launch_threads() if split else 1
        share = -(-total // (threads * SPLIT_ALIGN)) * SPLIT_ALIGN
        tasks, cur, room = [], [], share
        for ops, m in pieces:
            lo = 0
            while lo < m:
                take = min(m - lo, room)
                cur.append((vfn if vfn is not None and take >= 16 else fn,     # as `_launch_cpu`
                            [x for p, ls in ops for x in (p + 4 * lo, ls, 0, 1)] + [0, 1, take]))
                lo += take
                room -= take
                if room == 0:
                    tasks.append(cur)
                    cur, room = [], share
        if cur:
            tasks.append(cur)

        def work(calls):
            for f, args in calls:
                f(*args)
        if threads == 1 and total >= COST_FROM:
            t0 = time.perf_counter()
            work(tasks[0])
            per = (time.perf_counter() - t0) / total
            if cost is None or per < cost:
                self._cost[id(timer)] = per
            return
        futs = [_threads.pool(threads).submit(work, t) for t in tasks[1:]]
        work(tasks[0])
        for f in futs:
            f.result()

    def _kernel_slots(self) -> list[tuple[bool, int]]:
        """The one kernel's operands, in its order (outputs, then inputs), as (is an output of
        the program, index among those)."""
        if self._slots is None:
            _, kin, kout = self._calls[0]
            outs = {v: i for i, v in enumerate(self._outputs)}
            self._slots = [(True, outs[v]) for v in kout] + [(False, v[0]) for v in kin]
        return self._slots

    def launch(self, name: str, outs, ins, batch: tuple[int, ...]):
        ops = [_operand_2d(t, batch) for t in list(outs) + list(ins)]
        n_inner = batch[-1] if batch else 1
        n_outer = math.prod(batch[:-1]) if batch else 1
        if n_inner * n_outer == 0:
            return
        with counters.kernel():
            if self.target == "triton":
                self._launch_triton(name, ops, n_outer, n_inner)
            else:
                self._launch_cpu(name, ops, n_outer, n_inner)

    def _launch_triton(self, name, ops, n_outer, n_inner):
        interpret = ops[0][0].device.type != "cuda"
        kernel = getattr(self.triton_module(interpret), name)
        args = []
        for t, ls, os_, is_ in ops:
            args += [t, ls, os_, is_]
        n_total = n_outer * n_inner
        block, launch = launch_options()
        grid = (triton_cdiv(n_total, block),)
        if interpret:
            with triton_mode(True):
                kernel[grid](*args, n_inner, n_total, BLOCK=block)
        else:
            with skip_coalesce():
                kernel[grid](*args, n_inner, n_total, BLOCK=block, **launch)

    def _launch_cpu(self, name, ops, n_outer, n_inner):
        fn = self._cpu_fn(name)
        vfn = self._cpu_fn(name, "vrun") if n_inner >= 16 else None
        if vfn is not None:
            if all(op[3] == 1 for op in ops):
                fn = vfn
            else:
                # the vector loop needs unit column strides: materialise broadcasts
                fixed = []
                for t, ls, os_, is_ in ops:
                    if is_ == 0 and n_inner > 1:
                        rows = n_outer if os_ else 1
                        t = t.as_strided((t.shape[0], rows, n_inner), (ls, os_, 0)).contiguous()
                        ls, os_, is_ = t.stride(0), (t.stride(1) if rows > 1 else 0), 1
                    fixed.append((t, ls, os_, is_))
                if all(is_ == 1 for _, _, _, is_ in fixed):
                    ops, fn = fixed, vfn
        n = n_outer * n_inner
        cost = self._cost.get(id(fn))        # ctypes functions do not hash; ours live in _fns
        # a kernel's first launch this large runs on one thread, to be timed
        if n < SPLIT_FROM or (SPLIT_WORK > 0 and (cost is None or n * cost < SPLIT_WORK)) or \
                (threads := launch_threads()) == 1:
            args = [x for t, ls, os_, is_ in ops for x in (t.data_ptr(), ls, os_, is_)]
            if n < COST_FROM:
                fn(*args, 0, n_outer, n_inner)
                return
            t0 = time.perf_counter()
            fn(*args, 0, n_outer, n_inner)
            per = (time.perf_counter() - t0) / n
            if cost is None or per < cost:          # the least seen: the host's noise only adds
                self._cost[id(fn)] = per
            return
        ptrs = [(t.data_ptr(), ls, os_, is_) for t, ls, os_, is_ in ops]
        if n_outer >= threads:                       # whole rows to each thread
            step = -(-n_outer // threads)
            parts = [(_flat(ptrs), lo, min(lo + step, n_outer), n_inner) for lo in range(0, n_outer, step)]
        else:                                        # column ranges (multiples of the vector width)
            step = -(-n_inner // (threads * SPLIT_ALIGN)) * SPLIT_ALIGN
            parts = [(_flat([(p + 4 * lo * is_, ls, os_, is_) for p, ls, os_, is_ in ptrs]), 0, n_outer,
                      min(step, n_inner - lo)) for lo in range(0, n_inner, step)]     # 4: int32 words
        futs = [_threads.pool(threads).submit(fn, *args, lo, hi, ni) for args, lo, hi, ni in parts[1:]]
        args, lo, hi, ni = parts[0]
        fn(*args, lo, hi, ni)                         # the calling thread takes the first share
        for f in futs:
            f.result()


SPLIT_FROM = 1024     # elements from which a launch may be shared by threads; below, a
                      # thread hand-off costs more than it saves even for point kernels
SPLIT_WORK = 300e-6   # and only when its one-thread time, from the kernel's measured cost per
                      # element, is at least this: several times what waking a pool thread
                      # costs, so that cheap kernels (batch inversion's, ~3 products an
                      # element) are not split at sizes where that cost dominates
COST_FROM = 512       # elements from which a one-thread launch is timed for that cost (below,
                      # the call's fixed overhead would dominate the measure)
SPLIT_ALIGN = 8       # column shares are whole vectors (8 lanes)


def _flat(ptrs) -> list:
    return [x for op in ptrs for x in op]


def launch_options() -> tuple[int, dict]:
    """BLOCK and the num_warps/num_stages of a Triton elementwise launch: `zt.config(block=,
    num_warps=, num_stages=)`, else the tuning cache's (see `zktensor.config`), else
    TRITON_BLOCK and Triton's defaults."""
    from ..config import get
    block = int(get("block", TRITON_BLOCK))
    launch = {k: int(v) for k in ("num_warps", "num_stages") if (v := get(k)) is not None}
    return block, launch


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


_programs: dict[str, CompiledProgram] = {}


def get_program(prog, strategy: str, target: str, cuts: dict | None = None) -> CompiledProgram:
    """The compiled form of a traced Program: from memory, the disk cache, or compiled now.
    cuts: fuse-elementwise's max_products / max_inputs, for programs whose single kernel
    would not fit a GPU's registers."""
    options = cpu_options(strategy) if target == "cpu" else {}
    if cuts:
        options = dict(options, **{k: int(v) for k, v in cuts.items()})
    # by the program object first: its text and hash cost more than a small launch
    fast = (id(prog), strategy, target, tuple(sorted(options.items())))
    hit = _by_object.get(fast)
    if hit is not None and hit[0] is prog:
        return hit[1]
    key = cache.entry_key(prog.text(), strategy, target + json.dumps(options, sort_keys=True))
    compiled = _programs.get(key)
    if compiled is None:
        entry = cache.lookup(key)
        if entry is None:
            entry = _compile(prog, key, strategy, target, options)
        compiled = _programs[key] = CompiledProgram(entry, target, prog.field.limbs32)
    _by_object[fast] = (prog, compiled)       # the program is kept: its id stays its own
    return compiled


_by_object: dict[tuple, tuple] = {}


CompilerUnavailable, compiler_disabled = cache.CompilerUnavailable, cache.compiler_disabled


def _compile(prog, key: str, strategy: str, target: str, options: dict):
    what = f"{prog.field.name} {strategy} {target} kernel"
    hint = ("" if target.startswith("cpu") else
            "; pre-build the Triton source on a machine with them (python -m zktensor.prebuild) "
            "and bring its folder along")
    if compiler_disabled():
        raise CompilerUnavailable(f"no cached {what} and compiling is switched off (ZKTENSOR_NO_COMPILER){hint}")
    try:
        from ..passes import compile_program  # imports MLIR: only on a miss
        return cache.build(key, lambda d: compile_program(prog, strategy, target, d, **options),
                           label=f"{prog.field.name}, {len(prog.nodes)} operations, {strategy} on {target}")
    except CompilerUnavailable:
        raise
    except ImportError as e:
        raise CompilerUnavailable(f"no cached {what} and no compiler: {e}{hint}") from e
