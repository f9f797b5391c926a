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

Twiddles are computed once per (field, N, device, direction) with our own
tensor ops (powers by repeated doubling: log N elementwise multiplications)
and kept in a cache, in the stage-major order the kernels read them:
table[H - 1 + j] = w_{2H}^j for H = 1, 2, 4, ..., N/2.
"""
from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace

import torch

from ..config import choose, ntt_config, tuned_scope
from ..tensor import FieldSpace, FieldTensor, cat

ORDERS = ("natural", "bitrev")

BF_DIF = lambda u, v, w: (u + v, (u - v) * w)      # noqa: E731  Gentleman-Sande
BF_DIT = lambda u, v, w: (u + v * w, u - v * w)    # noqa: E731  Cooley-Tukey
SCALE = lambda a, s: a * s                         # noqa: E731


@dataclass(frozen=True)
class NTTConfig:
    """Knobs of the NTT kernels: what the autotuner searches.

    Triton (GZKP shuffle-less batching): each pass runs `B` radix-2 stages;
    a program holds `G` groups of 2^B elements (one contiguous G-long chunk per
    row, or G/S blocks of S columns when the stride S is below G);
    `num_warps` per program; `max_block` caps 2^B·G (registers).
    CPU: `cpu_rows_log` splits N = 2^rows · 2^cols for the two passes (None:
    `ntt_cpu.default_rows_log`, a little over half); `cpu_unroll` independent butterflies per step (1, 2, 4);
    `threads` (None: all the process may use).
    `algorithm`: "auto", "kernels" or "stages" (one launch per stage).
    """
    B: int = 3          # 2^3-row tiles: Triton's compile time grows fast with B (minutes at B=4)
    G: int = 32
    num_warps: int = 4
    max_block: int = 1024
    cpu_rows_log: int | None = None
    cpu_unroll: int = 2
    threads: int | None = None
    algorithm: str = "auto"

    def __post_init__(self):
        if self.B < 1 or self.G < 1 or self.G & (self.G - 1):
            raise ValueError(f"NTTConfig: B must be >= 1 and G a power of two, got B={self.B}, G={self.G}")
        if self.algorithm not in ("auto", "kernels", "stages"):
            raise ValueError(f"NTTConfig: algorithm must be auto, kernels or stages, got {self.algorithm!r}")


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


@dataclass(frozen=True)
class Plan:
    F: FieldSpace
    n: int
    log_n: int
    inverse: bool
    coset: int | None
    bitrev_in: bool
    bitrev_out: bool
    device: torch.device

    # scaling folded into the transform: x_j · pre[j] before, X_k · post[k] after
    def pre_table(self):
        """Forward coset NTT: x_j · g^j (in the input's storage order) or None."""
        if self.inverse or self.coset is None:
            return None
        t = tables(self.F, self.n, self.device).coset_powers(self.coset)
        return bitrev_tensor(t) if self.bitrev_in else t

    def post_table(self):
        """Inverse: X_j · N^-1 · g^-j (coset) as a table, or N^-1 as a constant (int)."""
        if not self.inverse:
            return None
        F = self.F
        n_inv = pow(self.n, -1, F.p)
        if self.coset is None:
            return n_inv
        t = tables(F, self.n, self.device).coset_powers(pow(self.coset, -1, F.p), scale=n_inv)
        return bitrev_tensor(t) if self.bitrev_out else t


def run_plan(plan: Plan, data: torch.Tensor, cfg: NTTConfig, out: torch.Tensor | None = None) -> torch.Tensor:
    """data: (L, batch, N) limbs; returns a new (L, batch, N) tensor (`out`,
    a contiguous tensor not overlapping data, when a kernel can write there)."""
    if plan.n == 1:
        return apply_scale(plan, apply_scale(plan, data.clone(), plan.pre_table()), plan.post_table())
    strategy, target = choose(data.device.type)
    if cfg.algorithm != "stages":
        if target == "triton":
            from ..kernels import ntt_triton
            return ntt_triton.ntt_triton(plan, data, cfg, strategy)
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
    from .elementwise import run_program
    F, n = plan.F, plan.n
    L = F.limbs
    out = data.contiguous().clone()
    out = apply_scale(plan, out, plan.pre_table())
    tw = tables(F, n, out.device).twiddles(plan.inverse).data
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


def apply_scale(plan: Plan, out: torch.Tensor, table) -> torch.Tensor:
    """out · table in place (table: None, a FieldTensor over N, or an int constant)."""
    from .elementwise import run_program
    if table is None:
        return out
    s = plan.F.full((), table, device=out.device) if isinstance(table, int) else table
    run_program(plan.F, "ntt_scale", 2, SCALE, [out, s.data], out=[out])
    return out


# -- tables ------------------------------------------------------------------------
_bitrev_cache: dict = {}


def bitrev_index(n: int, device) -> torch.Tensor:
    """The bit-reversal permutation of range(n) as an int64 tensor (cached)."""
    key = (n, str(device))
    t = _bitrev_cache.get(key)
    if t is None:
        k = n.bit_length() - 1
        i = torch.arange(n, dtype=torch.int64)
        r = torch.zeros_like(i)
        for b in range(k):
            r |= ((i >> b) & 1) << (k - 1 - b)
        t = _bitrev_cache[key] = r.to(device)
    return t


def bitrev_tensor(x: FieldTensor) -> FieldTensor:
    """x permuted by bit-reversing the index of its last dimension."""
    n = x.shape[-1]
    return FieldTensor(x.F, x.data.index_select(x.data.dim() - 1, bitrev_index(n, x.device)))


def powers(F: FieldSpace, base: int, count: int, device=None, scale: int = 1) -> FieldTensor:
    """scale · base^j for j in [0, count): log2(count) doubling steps, each one
    elementwise multiplication of the powers so far by base^len."""
    out = F.full((1,), scale % F.p, device=device)
    while out.numel() < count:
        k = out.numel()
        out = cat([out, out * F.full((), pow(base, k, F.p), device=device)])
    return out[:count]


class Tables:
    """Twiddles and coset powers of one (field, N, device), made on first use."""

    def __init__(self, F: FieldSpace, n: int, device):
        self.F, self.n, self.device = F, n, device
        self._tw = {}
        self._coset = OrderedDict()
        self.derived = {}        # kernels' own forms of the tables (e.g. 52-bit limbs)
        self.lock = threading.Lock()

    def twiddles(self, inverse: bool) -> FieldTensor:
        """Stage-major: entry H - 1 + j is w_{2H}^j, H = 1, 2, ..., N/2 (N - 1 entries)."""
        with self.lock:
            t = self._tw.get(inverse)
            if t is None:
                F, n = self.F, self.n
                w = F.root_of_unity(n)
                if inverse:
                    w = pow(w, -1, F.p)
                half = powers(F, w, n // 2, self.device)          # w_N^j, j < N/2
                parts = [half[::n // (2 * H)] for H in _halves(n)]
                t = self._tw[inverse] = cat(parts).contiguous() if parts else F.zeros((0,), self.device)
            return t

    def coset_powers(self, g: int, scale: int = 1) -> FieldTensor:
        """scale · g^j for j in [0, N) (the last few are kept)."""
        key = (g, scale)
        with self.lock:
            t = self._coset.get(key)
            if t is None:
                t = self._coset[key] = powers(self.F, g, self.n, self.device, scale).contiguous()
                while len(self._coset) > 4:
                    self._coset.popitem(last=False)
            else:
                self._coset.move_to_end(key)
            return t


def _halves(n: int):
    H = 1
    while H < n:
        yield H
        H *= 2


_tables: dict = {}
_tables_lock = threading.Lock()


def tables(F: FieldSpace, n: int, device) -> Tables:
    key = (F.name, n, str(torch.device(device) if device is not None else "cpu"))
    with _tables_lock:
        t = _tables.get(key)
        if t is None:
            t = _tables[key] = Tables(F, n, device)
        return t


def clear_tables():
    """Forget every cached twiddle table (tests, memory pressure)."""
    with _tables_lock:
        _tables.clear()
    _bitrev_cache.clear()


__all__ = ["ntt", "intt", "NTTConfig", "check_size", "stage_ntt", "bitrev_index", "bitrev_tensor",
           "powers", "tables", "clear_tables", "Plan", "BF_DIF", "BF_DIT"]
