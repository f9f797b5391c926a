"""The NTT's plan, below the kernels that run it: the butterflies they trace, the twiddle and
coset tables they read, the bit-reversal permutation and the scaling folded into a transform.

Butterflies: Gentleman-Sande (DIF) `(u + v, (u - v)·w)` for natural-order input,
Cooley-Tukey (DIT) `(u + v·w, u - v·w)` for bit-reversed input, traced from these lambdas
by every NTT kernel (`ntt_triton`, `ntt_cpu`) and by the per-stage algorithm
(`ops.ntt.stage_ntt`).

Tables are (L, N) int32 limbs in Montgomery form, computed once per (field, N, device)
with the field programs (powers by repeated doubling: log N elementwise multiplications)
and kept in a cache; twiddles are stage-major, in the order the kernels read them:
table[H - 1 + j] = w_{2H}^j for H = 1, 2, 4, ..., N/2. Two caches hold them: `tables`,
torch tensors on a device (the Triton kernels, the per-stage algorithm), and
`host_tables`, numpy arrays made with `field_programs.run_host` (the CPU kernels, which
also run without torch: `ntt_cpu.transform`). `F` is a field space (`tensor.FieldSpace`)
or, for the host tables, a field's record (`algebra.fields.Field`).

Importing this module does not import torch (the CPU kernels' host entry imports it):
the functions over tensors import it when called.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .field_programs import OPS, run_host, run_program
from .host_words import mont_limbs

if TYPE_CHECKING:       # annotations only: the functions over tensors import torch when called
    import torch

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
        spec = scale_spec(self.F.p, self.n, self.inverse, self.coset)[0]
        if spec is None:
            return None
        return tables(self.F, self.n, self.device).coset_powers(*spec, bitrev=self.bitrev_in)

    def post_table(self, bitrev: bool | None = None):
        """Inverse: X_j · N^-1 · g^-j (coset) as (L, N) limbs, or N^-1 as a constant (int).
        The table is in the output's order, or bit-reversed if `bitrev` says so (a kernel
        that scales before its own final permutation)."""
        spec = scale_spec(self.F.p, self.n, self.inverse, self.coset)[1]
        if spec is None or isinstance(spec, int):
            return spec
        rev = self.bitrev_out if bitrev is None else bitrev
        return tables(self.F, self.n, self.device).coset_powers(*spec, bitrev=rev)


def scale_spec(p: int, n: int, inverse: bool, coset: int | None):
    """(pre, post): what a transform multiplies its input by before the butterflies and its
    output by after them, each None, an int (one constant for every element) or
    (base, scale) for the table scale·base^j, j the element's natural index. Forward:
    g^j before (evaluations on g·<w>). Inverse: N^-1·g^-j after (its inverse), N^-1 without
    a coset. The one statement of the scaling, for the device tables (`Plan`) and the host
    ones (`ntt_cpu`)."""
    if not inverse:
        return ((coset, 1) if coset is not None else None), None
    n_inv = pow(n, -1, p)
    return None, (n_inv if coset is None else (pow(coset, -1, p), n_inv))


def apply_scale(plan: Plan, out: torch.Tensor, table) -> torch.Tensor:
    """out · table in place (table: None, (L, N) limbs, or an int constant)."""
    if table is None:
        return out
    s = tables(plan.F, plan.n, out.device).constant(table) if isinstance(table, int) else table
    run_program(plan.F, "ntt_scale", 2, SCALE, [out, s], out=[out])
    return out


# -- bit reversal -------------------------------------------------------------------
_bitrev_cache: dict = {}


def bitrev_host(n: int) -> np.ndarray:
    """The bit-reversal permutation of range(n) (a power of two) as an int64 array (cached;
    do not write to it)."""
    key = (n, "host")
    r = _bitrev_cache.get(key)
    if r is None:
        k = n.bit_length() - 1
        i = np.arange(n, dtype=np.int64)
        r = np.zeros_like(i)
        for b in range(k):
            r |= ((i >> b) & 1) << (k - 1 - b)
        _bitrev_cache[key] = r
    return r


def bitrev_index(n: int, device) -> torch.Tensor:
    """The bit-reversal permutation of range(n) as an int64 tensor (cached)."""
    import torch
    key = (n, str(device))
    t = _bitrev_cache.get(key)
    if t is None:
        t = _bitrev_cache[key] = torch.from_numpy(bitrev_host(n).copy()).to(device)
    return t


def bitrev(data: torch.Tensor) -> torch.Tensor:
    """Limbs permuted by bit-reversing the index of their last dimension."""
    n = data.shape[-1]
    return data.index_select(data.dim() - 1, bitrev_index(n, data.device))


# -- tables --------------------------------------------------------------------------
def powers(F, base: int, count: int, device=None, scale: int = 1) -> torch.Tensor:
    """scale · base^j for j in [0, count) as (L, count) limbs: log2(count) doubling steps,
    each one elementwise multiplication of the powers so far by base^len."""
    import torch
    n_in, mul = OPS["mul"]
    out = F.full((1,), scale % F.p, device=device).data
    while out.shape[-1] < count:
        k = out.shape[-1]
        (step,) = run_program(F, "mul", n_in, mul, [out, F.full((), pow(base, k, F.p), device=device).data])
        out = torch.cat([out, step], dim=-1)
    return out[:, :count]


class Tables:
    """Twiddles and coset powers of one (field, N, device) as torch tensors, made on first
    use. `HostTables` is the same cache over numpy arrays: the two differ only in how the
    powers are made (`_powers`), joined (`_cat`) and permuted (`_bitrev`), and a constant
    is made (`_constant`)."""

    def __init__(self, F, n: int, device):
        self.F, self.n, self.device = F, n, device
        self._tw = {}
        self._coset = OrderedDict()
        self._const = {}
        self.lock = threading.Lock()

    def _powers(self, base: int, count: int, scale: int = 1):
        return powers(self.F, base, count, self.device, scale).contiguous()

    def _cat(self, parts):
        import torch
        return torch.cat(parts, dim=-1).contiguous() if parts else self.F.zeros((0,), self.device).data

    def _bitrev(self, t):
        return bitrev(t).contiguous()

    def _constant(self, value: int):
        return self.F.full((1,), value, device=self.device).data

    def constant(self, value: int):
        """value as (L, 1) limbs, made once (a transform's N^-1): no upload per call."""
        with self.lock:
            t = self._const.get(value)
            if t is None:
                t = self._const[value] = self._constant(value)
            return t

    def twiddles(self, inverse: bool):
        """Stage-major (L, N - 1): entry H - 1 + j is w_{2H}^j, H = 1, 2, ..., N/2."""
        with self.lock:
            t = self._tw.get(inverse)
            if t is None:
                F, n = self.F, self.n
                w = F.root_of_unity(n)
                if inverse:
                    w = pow(w, -1, F.p)
                half = self._powers(w, n // 2)                   # w_N^j, j < N/2
                t = self._tw[inverse] = self._cat([half[:, ::n // (2 * H)] for H in _halves(n)])
            return t

    def coset_powers(self, g: int, scale: int = 1, bitrev: bool = False):
        """scale · g^j for j in [0, N) as (L, N), in natural or bit-reversed order of j (the
        last few are kept: a transform on bit-reversed data permutes its table once, not
        every call)."""
        key = (g, scale, bitrev)
        with self.lock:
            t = self._coset.get(key)
            if t is None:
                other = self._coset.get((g, scale, not bitrev))   # the other order's, where kept
                if other is not None:                            # bit reversal is its own inverse
                    t = self._bitrev(other)
                else:
                    t = self._powers(g, self.n, scale)
                    t = self._bitrev(t) if bitrev else t
                self._coset[key] = t
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
    """The device tables of (F, N, device), made once."""
    import torch
    key = (F.name, n, str(torch.device(device) if device is not None else "cpu"))
    with _tables_lock:
        t = _tables.get(key)
        if t is None:
            t = _tables[key] = Tables(F, n, device)
        return t


# -- host tables (numpy, no torch) -------------------------------------------------
def host_powers(F, base: int, count: int, scale: int = 1) -> np.ndarray:
    """`powers` on the host: scale · base^j for j in [0, count) as an (L, count) int32 array,
    by the same log2(count) doubling steps, each the compiled multiplication of the powers
    so far by base^len (`run_host`), written into the next slice of one array."""
    P = getattr(F, "params", F)
    n_in, mul = OPS["mul"]
    L, p = P.limbs32, P.p
    out = np.empty((L, 1 << max(0, (count - 1).bit_length())), dtype=np.int32)
    out[:, :1] = mont_limbs(P, [scale % p])
    k = 1
    while k < count:
        step = np.empty((L, k), dtype=np.int32)
        step[:] = mont_limbs(P, [pow(base, k, p)])     # base^k in every column
        run_host(P, "mul", n_in, mul, [out[:, :k], step], out=[out[:, k:2 * k]])
        k *= 2
    return np.ascontiguousarray(out[:, :count])


class HostTables(Tables):
    """`Tables` as numpy arrays, for the CPU kernels (made with the compiled field
    multiplication on the host), with the kernels' own forms of them in `derived` (52-bit
    limbs, tiled: `ntt_cpu`)."""

    def __init__(self, F, n: int):
        super().__init__(getattr(F, "params", F), n, "cpu")
        self.derived = {}

    def _powers(self, base: int, count: int, scale: int = 1) -> np.ndarray:
        return host_powers(self.F, base, count, scale)

    def _cat(self, parts) -> np.ndarray:
        return np.concatenate(parts, axis=1) if parts else np.zeros((self.F.limbs32, 0), dtype=np.int32)

    def _bitrev(self, t: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(t[:, bitrev_host(self.n)])

    def _constant(self, value: int) -> np.ndarray:
        return np.ascontiguousarray(mont_limbs(self.F, [value % self.F.p]).reshape(-1, 1))


_host_tables: dict = {}


def host_tables(F, n: int) -> HostTables:
    """The host tables of (F, N), made once."""
    key = (F.name, n)
    with _tables_lock:
        t = _host_tables.get(key)
        if t is None:
            t = _host_tables[key] = HostTables(F, n)
        return t


def clear_tables():
    """Forget every cached twiddle table, device and host (tests, memory pressure)."""
    with _tables_lock:
        _tables.clear()
        _host_tables.clear()
    _bitrev_cache.clear()


__all__ = ["BF_DIF", "BF_DIT", "SCALE", "Plan", "scale_spec", "apply_scale", "bitrev_index", "bitrev",
           "bitrev_host", "powers", "Tables", "tables", "host_powers", "HostTables",
           "host_tables", "clear_tables"]
