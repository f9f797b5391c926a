"""The NTT's plan, below the kernels that run it: the butterflies they trace, the twiddle and
coset tables they read, the bit-reversal permutation and the scaling folded into a transform.

Butterflies: Gentleman-Sande (DIF) `(u + v, (u - v)·w)` for natural-order input,
Cooley-Tukey (DIT) `(u + v·w, u - v·w)` for bit-reversed input, traced from these lambdas
by every NTT kernel (`ntt_triton`, `ntt_cpu`) and by the per-stage algorithm
(`ops.ntt.stage_ntt`).

Tables are (L, N) int32 limb tensors in Montgomery form, computed once per (field, N,
device) with the field programs (powers by repeated doubling: log N elementwise
multiplications) and kept in a cache; twiddles are stage-major, in the order the kernels
read them: table[H - 1 + j] = w_{2H}^j for H = 1, 2, 4, ..., N/2. `F` is a field space
(`tensor.FieldSpace`).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import torch

from .field_programs import OPS, run_program

BF_DIF = lambda u, v, w: (u + v, (u - v) * w)      # noqa: E731  Gentleman-Sande
BF_DIT = lambda u, v, w: (u + v * w, u - v * w)    # noqa: E731  Cooley-Tukey
SCALE = lambda a, s: a * s                         # noqa: E731


@dataclass(frozen=True)
class Plan:
    F: object               # the field space
    n: int
    log_n: int
    inverse: bool
    coset: int | None
    bitrev_in: bool
    bitrev_out: bool
    device: torch.device

    # scaling folded into the transform: x_j · pre[j] before, X_k · post[k] after
    def pre_table(self):
        """Forward coset NTT: x_j · g^j (in the input's storage order) as (L, N) limbs, or None."""
        if self.inverse or self.coset is None:
            return None
        t = tables(self.F, self.n, self.device).coset_powers(self.coset)
        return bitrev(t) if self.bitrev_in else t

    def post_table(self):
        """Inverse: X_j · N^-1 · g^-j (coset) as (L, N) limbs, or N^-1 as a constant (int)."""
        if not self.inverse:
            return None
        F = self.F
        n_inv = pow(self.n, -1, F.p)
        if self.coset is None:
            return n_inv
        t = tables(F, self.n, self.device).coset_powers(pow(self.coset, -1, F.p), scale=n_inv)
        return bitrev(t) if self.bitrev_out else t


def apply_scale(plan: Plan, out: torch.Tensor, table) -> torch.Tensor:
    """out · table in place (table: None, (L, N) limbs, or an int constant)."""
    if table is None:
        return out
    s = plan.F.full((), table, device=out.device).data if isinstance(table, int) else table
    run_program(plan.F, "ntt_scale", 2, SCALE, [out, s], out=[out])
    return out


# -- bit reversal -------------------------------------------------------------------
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


def bitrev(data: torch.Tensor) -> torch.Tensor:
    """Limbs permuted by bit-reversing the index of their last dimension."""
    n = data.shape[-1]
    return data.index_select(data.dim() - 1, bitrev_index(n, data.device))


# -- tables --------------------------------------------------------------------------
def powers(F, base: int, count: int, device=None, scale: int = 1) -> torch.Tensor:
    """scale · base^j for j in [0, count) as (L, count) limbs: log2(count) doubling steps,
    each one elementwise multiplication of the powers so far by base^len."""
    n_in, mul = OPS["mul"]
    out = F.full((1,), scale % F.p, device=device).data
    while out.shape[-1] < count:
        k = out.shape[-1]
        (step,) = run_program(F, "mul", n_in, mul, [out, F.full((), pow(base, k, F.p), device=device).data])
        out = torch.cat([out, step], dim=-1)
    return out[:, :count]


class Tables:
    """Twiddles and coset powers of one (field, N, device), made on first use."""

    def __init__(self, F, n: int, device):
        self.F, self.n, self.device = F, n, device
        self._tw = {}
        self._coset = OrderedDict()
        self.derived = {}        # kernels' own forms of the tables (e.g. 52-bit limbs)
        self.lock = threading.Lock()

    def twiddles(self, inverse: bool) -> torch.Tensor:
        """Stage-major: entry H - 1 + j is w_{2H}^j, H = 1, 2, ..., N/2 (N - 1 entries)."""
        with self.lock:
            t = self._tw.get(inverse)
            if t is None:
                F, n = self.F, self.n
                w = F.root_of_unity(n)
                if inverse:
                    w = pow(w, -1, F.p)
                half = powers(F, w, n // 2, self.device)          # w_N^j, j < N/2
                parts = [half[:, ::n // (2 * H)] for H in _halves(n)]
                t = self._tw[inverse] = (torch.cat(parts, dim=-1).contiguous() if parts else
                                         F.zeros((0,), self.device).data)
            return t

    def coset_powers(self, g: int, scale: int = 1) -> torch.Tensor:
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


def tables(F, n: int, device) -> Tables:
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


__all__ = ["BF_DIF", "BF_DIT", "SCALE", "Plan", "apply_scale", "bitrev_index", "bitrev", "powers", "Tables",
           "tables", "clear_tables"]
