"""NTT, inverse NTT and coset NTT over the last dimension of a FieldTensor.

    X = zt.ntt(x)                    # X[k] = sum_j x[j] w^(jk), w = F.root_of_unity(N)
    x = zt.intt(X)                   # the inverse (scaled by 1/N)
    E = zt.ntt(x, coset=g)           # evaluations on g·<w>: sum_j x[j] (g w^k)^j
    x = zt.intt(E, coset=g)
    Y = zt.ntt(x, output_order="bitrev")   # leave the output bit-reversed ...
    x = zt.intt(Y, input_order="bitrev")   # ... for a consumer that takes it so

Leading dimensions are a batch: every row is transformed, in one launch per
pass. Sizes are powers of two from 2 to 2^two_adicity of the field.

Algorithms (all the same arithmetic: Gentleman-Sande (DIF) butterflies
`(u + v, (u - v)·w)` for natural-order input, Cooley-Tukey (DIT) butterflies
`(u + v·w, u - v·w)` for bit-reversed input, traced from Python lambdas and
compiled by the pass pipeline):

- `triton` target (CUDA tensors, or CPU tensors under the Triton
  interpreter): GZKP shuffle-less batched passes, `zktensor.kernels.ntt_triton`.
- `cpu` target on an x86 CPU with AVX-512: two cache-blocked passes
  (four-step, the bit reversal folded into the second pass's store),
  8 polynomial lanes per vector, IFMA products: `zktensor.kernels.ntt_cpu`.
- otherwise (`algorithm="stages"`, tiny sizes, other CPUs): one elementwise
  butterfly launch per stage over strided views (`stage_ntt` below), which is
  also the reference the kernels are tested against.

The plan the kernels run (butterflies, twiddle and coset tables, bit reversal, the
scaling folded into a transform) lives below them, in `zktensor.kernels.ntt_plan`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch

from ..kernels import ntt_plan
from ..kernels.field_programs import run_program
from ..kernels.ntt_plan import BF_DIF, BF_DIT, Plan, apply_scale, bitrev_index, tables
from ..runtime.target import choose
from ..tensor import FieldSpace, FieldTensor
from ..tune.resolve import resolve, tuned_scope

ORDERS = ("natural", "bitrev")



@dataclass(frozen=True)
class NTTConfig:
    """Knobs of the NTT kernels: what the autotuner searches.

    Triton (GZKP shuffle-less batching): each pass runs `B` radix-2 stages;
    a program holds `G` groups of 2^B elements (one contiguous G-long chunk per
    row, or G/S blocks of S columns when the stride S is below G);
    `num_warps` per program; `max_block` caps 2^B·G (registers); `max_registers`: ptxas's
    register cap for the pass kernels (.maxnreg; None: ptxas's choice; each cap is its
    own binary).
    CPU: `cpu_rows_log` splits N = 2^rows · 2^cols for the two passes (None:
    `tune.costmodel.default_rows_log`, a little over half); `cpu_unroll` independent butterflies per step (1, 2, 4);
    `threads` (None: all the process may use).
    `algorithm`: "auto", "kernels" or "stages" (one launch per stage).
    """
    B: int = 3          # 2^3-row tiles: Triton's compile time grows fast with B (minutes at B=4)
    G: int = 32
    num_warps: int = 4
    max_block: int = 1024
    max_registers: int | None = None
    cpu_rows_log: int | None = None
    cpu_unroll: int = 2
    threads: int | None = None
    algorithm: str = "auto"

    def __post_init__(self):
        if self.B < 1 or self.G < 1 or self.G & (self.G - 1):
            raise ValueError(f"NTTConfig: B must be >= 1 and G a power of two, got B={self.B}, G={self.G}")
        if self.max_registers is not None and (isinstance(self.max_registers, bool)
                                               or not isinstance(self.max_registers, int)
                                               or not 24 <= self.max_registers <= 255):
            raise ValueError(f"NTTConfig: max_registers must be an int in 24..255 or None, "
                             f"got {self.max_registers!r}")
        if self.algorithm not in ("auto", "kernels", "stages"):
            raise ValueError(f"NTTConfig: algorithm must be auto, kernels or stages, got {self.algorithm!r}")


def ntt_config(F, n: int, device, batch: int = 1) -> tuple[NTTConfig, dict]:
    """(NTTConfig, values) for an NTT of length n over F: `zt.config(ntt=...)`, else the
    tuning cache, else the cost model (`tune.resolve.resolve`). `values` also holds what is not
    an NTTConfig field (strategy, ifma): run the NTT inside `tuned_scope(..., values=values)`."""
    return resolve(NTTConfig, "ntt", "ntt", F, n, device, batch)


DEFAULT_CONFIG = NTTConfig()


def ntt(x: FieldTensor, *, coset=None, input_order: str = "natural", output_order: str = "natural",
        out: FieldTensor | None = None, config: NTTConfig | None = None, **overrides) -> FieldTensor:
    """The NTT of every row (last dimension) of `x`; with `coset=g`, the
    evaluations on the coset g·<w> (x scaled by g^j first). `out`: a tensor
    of x's field and shape to write the result into (may be x itself).
    Keyword overrides (B=, G=, algorithm=, ...) replace fields of `config`."""
    return _transform(x, False, coset, input_order, output_order, out, config, overrides)


def intt(x: FieldTensor, *, coset=None, input_order: str = "natural", output_order: str = "natural",
         out: FieldTensor | None = None, config: NTTConfig | None = None, **overrides) -> FieldTensor:
    """The inverse NTT of every row; with `coset=g`, the inverse of ntt(., coset=g)."""
    return _transform(x, True, coset, input_order, output_order, out, config, overrides)


# -- checks ---------------------------------------------------------------------
def check_size(F: FieldSpace, n: int) -> int:
    """log2(n), or a clear error for a size the field cannot transform."""
    if n < 1 or n & (n - 1):
        raise ValueError(f"ntt: length {n} of the last dimension is not a power of two")
    k = n.bit_length() - 1
    if k > F.two_adicity:
        raise ValueError(f"ntt: length 2^{k} is too large for {F.name}: its 2-adicity is "
                         f"{F.two_adicity}, so the largest NTT is 2^{F.two_adicity}")
    return k


def _coset_value(F: FieldSpace, coset) -> int | None:
    if coset is None:
        return None
    if isinstance(coset, FieldTensor):
        if coset.F != F:
            raise TypeError(f"ntt: coset shift is a {coset.F.name} value, the tensor is {F.name}")
        if coset.numel() != 1:
            raise ValueError("ntt: coset shift must be a single field element")
        coset = coset.reshape(()).to_ints()
    if isinstance(coset, bool) or not isinstance(coset, int):
        raise TypeError(f"ntt: coset shift must be an int or a 0-d FieldTensor, got {type(coset).__name__}")
    g = coset % F.p
    if g == 0:
        raise ValueError("ntt: coset shift must be non-zero")
    return g


def _transform(x, inverse, coset, input_order, output_order, out, config, overrides):
    if not isinstance(x, FieldTensor):
        raise TypeError(f"ntt: expected a FieldTensor, got {type(x).__name__}")
    for name, order in (("input_order", input_order), ("output_order", output_order)):
        if order not in ORDERS:
            raise ValueError(f"ntt: {name} must be one of {ORDERS}, got {order!r}")
    if not x.shape:
        raise ValueError("ntt: a 0-d tensor has no dimension to transform")
    F = x.F
    n = x.shape[-1]
    k = check_size(F, n)
    g = _coset_value(F, coset)
    batch = tuple(x.shape[:-1])
    tuned = {}
    if config is None:   # zt.config(ntt=...), else the tuning cache, else the cost model
        config, tuned = ntt_config(F, n, x.device, batch=math.prod(batch))
    cfg = replace(config, **overrides) if overrides else config
    if out is not None:
        if not isinstance(out, FieldTensor) or out.F != F:
            raise TypeError(f"ntt: out must be a {F.name} FieldTensor")
        if out.shape != x.shape or out.device != x.device:
            raise ValueError(f"ntt: out has shape {tuple(out.shape)} on {out.device}, expected "
                             f"{tuple(x.shape)} on {x.device}")
    data = x.data.reshape((F.limbs, -1, n))
    if data.shape[1] == 0:
        res = x.data.clone()
    else:
        plan = Plan(F, n, k, inverse, g, input_order == "bitrev", output_order == "bitrev", x.device)
        dest = None
        if out is not None and out.data.is_contiguous() and _separate_or_same(out.data, x.data):
            dest = out.data.view((F.limbs, -1, n))
        with tuned_scope("ntt", F.name, n, x.device, values=tuned):
            res = run_plan(plan, data, cfg, dest)
    if out is None:
        return FieldTensor(F, res.reshape((F.limbs,) + batch + (n,)))
    if res.data_ptr() != out.data.data_ptr():
        out.data.copy_(res.reshape(out.data.shape))
    return out


def _separate_or_same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether a kernel may write a while reading b: no shared bytes, or the very
    same layout (every pass reads a tile completely before writing it back)."""
    if a.data_ptr() == b.data_ptr() and a.shape == b.shape and a.stride() == b.stride():
        return True

    def span(t):
        lo = t.data_ptr()
        hi = lo + t.element_size() * (1 + sum((n - 1) * st for n, st in zip(t.shape, t.stride())))
        return lo, hi
    (a0, a1), (b0, b1) = span(a), span(b)
    return a1 <= b0 or b1 <= a0


def run_plan(plan: Plan, data: torch.Tensor, cfg: NTTConfig, out: torch.Tensor | None = None) -> torch.Tensor:
    """data: (L, batch, N) limbs; returns a new (L, batch, N) tensor (`out`,
    a contiguous tensor not overlapping data, when a kernel can write there)."""
    if plan.n == 1:
        return apply_scale(plan, apply_scale(plan, data.clone(), plan.pre_table()), plan.post_table())
    strategy, target = choose(data.device.type)
    if cfg.algorithm != "stages":
        if target == "triton":
            from ..kernels import ntt_triton
            return ntt_triton.ntt_triton(plan, data, cfg, strategy, out)
        from ..kernels import ntt_cpu
        # the CPU kernels compute with the fp64 strategy's 52-bit limbs (IFMA where
        # present); every strategy is bit-exact, so they serve either CPU strategy
        if strategy in ("fp64", "int64") and ntt_cpu.available(plan):
            return ntt_cpu.ntt_cpu(plan, data, cfg, out)
        if cfg.algorithm == "kernels":
            raise RuntimeError(f"ntt: no NTT kernel for {plan.F.name} 2^{plan.log_n} on this machine "
                               f"(target {target}, strategy {strategy})")
    return stage_ntt(plan, data)


# -- the portable algorithm: one elementwise launch per stage ---------------------
def stage_ntt(plan: Plan, data: torch.Tensor) -> torch.Tensor:
    """log N butterfly launches over strided views, in place on a copy of data.
    DIF (natural in, bit-reversed out) unless the input is bit-reversed (DIT)."""
    F, n = plan.F, plan.n
    L = F.limbs
    out = data.contiguous().clone()
    out = apply_scale(plan, out, plan.pre_table())
    tw = tables(F, n, out.device).twiddles(plan.inverse)
    B = out.shape[1]
    halves = [n >> (s + 1) for s in range(plan.log_n)]
    if plan.bitrev_in:
        halves.reverse()
    for H in halves:
        v = out.view(L, B, n // (2 * H), 2, H)
        u, w = v[:, :, :, 0, :], v[:, :, :, 1, :]
        t = tw[:, H - 1:2 * H - 1]
        if plan.bitrev_in:
            run_program(F, "ntt_bf_dit", 3, BF_DIT, [u, w, t], out=[u, w])
        else:
            run_program(F, "ntt_bf_dif", 3, BF_DIF, [u, w, t], out=[u, w])
    # DIF leaves bit-reversed order, DIT natural order
    now_bitrev = not plan.bitrev_in
    if now_bitrev != plan.bitrev_out:
        out = out.index_select(2, bitrev_index(n, out.device))
    return apply_scale(plan, out, plan.post_table())


def powers(F: FieldSpace, base: int, count: int, device=None, scale: int = 1) -> FieldTensor:
    """scale · base^j for j in [0, count) (`kernels.ntt_plan.powers`)."""
    return FieldTensor(F, ntt_plan.powers(F, base, count, device, scale))


__all__ = ["ntt", "intt", "NTTConfig", "check_size", "stage_ntt", "powers"]
