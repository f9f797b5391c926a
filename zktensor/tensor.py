"""FieldTensor: a torch tensor of limbs together with its field.

Storage is limb-major: an int32 tensor of shape (L32, *batch), word j of
every element in one contiguous row, values in Montgomery form
(x·R mod p with R = 2^(32·L32)), always fully reduced. All arithmetic runs
through the compiler (`kernels.field_programs`); this module only converts
at the edges (Python ints, bytes) and keeps shapes; its operators launch the field
programs of `kernels.field_programs` on the limb tensors.
"""
from __future__ import annotations

import numpy as np
import torch

from .algebra import Field, field as field_record
from .kernels.elementwise import broadcast_shapes
from .kernels.field_programs import OPS, from_mont, run_program, to_mont
from .runtime import compile_shards


class FieldSpace:
    """A field as a maker of tensors: `zt.field("bn254.fr")`."""

    def __init__(self, params: Field):
        self.params = params
        self._columns: dict = {}           # (value, device type, index) -> words on that device

    name = property(lambda self: self.params.name)
    p = property(lambda self: self.params.p)
    limbs = property(lambda self: self.params.limbs32)
    bytes = property(lambda self: self.params.bytes)

    def __getattr__(self, item):          # constants of the record: R, two_adicity, ...
        return getattr(self.params, item)

    def __repr__(self):
        return f"zt.field({self.name!r})"

    def __eq__(self, other):
        return isinstance(other, FieldSpace) and other.params.name == self.params.name

    def __hash__(self):
        return hash(self.params.name)

    # -- constructors ----------------------------------------------------------
    def tensor(self, values, device=None) -> "FieldTensor":
        """From (nested lists of) Python ints in [0, p)."""
        if isinstance(values, FieldTensor):
            raise TypeError("already a FieldTensor")
        shape, flat = _flatten(values)
        for x in flat:
            if not isinstance(x, (int, np.integer)) or isinstance(x, bool):
                raise TypeError(f"{self.name}: elements must be ints, got {type(x).__name__}")
            if not 0 <= x < self.p:
                raise ValueError(f"{self.name}: {x} is outside [0, p); reduce it mod p first")
        nbytes = 4 * self.limbs
        raw = b"".join(int(x).to_bytes(nbytes, "little") for x in flat)
        words = _words_from_bytes(raw, self.limbs, shape)
        return self._from_standard_words(words, device)

    def from_bytes(self, data: bytes, device=None) -> "FieldTensor":
        """From little-endian standard-form words of `self.bytes` bytes each (circom/snarkjs)."""
        data = bytes(data)
        if len(data) % self.bytes:
            raise ValueError(f"{self.name}: {len(data)} bytes is not a whole number of "
                             f"{self.bytes}-byte elements")
        n = len(data) // self.bytes
        words = _words_from_bytes(data, self.limbs, (n,))
        bad = ~_less_than_p(words, self.params)
        if bad.any():
            i = int(torch.nonzero(bad)[0])
            raise ValueError(f"{self.name}: element {i} is not below p")
        return self._from_standard_words(words, device)

    def _from_standard_words(self, words: torch.Tensor, device) -> "FieldTensor":
        t = words.to(device) if device is not None else words
        return FieldTensor(self, to_mont(self, t))

    def zeros(self, shape, device=None) -> "FieldTensor":
        shape = _shape(shape)
        return FieldTensor(self, torch.zeros((self.limbs,) + shape, dtype=torch.int32, device=device))

    def empty(self, shape, device=None) -> "FieldTensor":
        """Uninitialised limbs, for a kernel's `out=` to fill (as torch.empty)."""
        shape = _shape(shape)
        return FieldTensor(self, torch.empty((self.limbs,) + shape, dtype=torch.int32, device=device))

    def ones(self, shape, device=None) -> "FieldTensor":
        return self.full(shape, 1, device)

    def full(self, shape, value: int, device=None) -> "FieldTensor":
        shape = _shape(shape)
        if not 0 <= value < self.p:
            raise ValueError(f"{self.name}: {value} is outside [0, p)")
        col = self._column(value, device)
        return FieldTensor(self, col.reshape((self.limbs,) + (1,) * len(shape)).expand(
            (self.limbs,) + shape).clone(memory_format=torch.contiguous_format))

    def _column(self, value: int, device) -> torch.Tensor:
        """The Montgomery words of a constant on `device`, uploaded once: a copy from the host
        is a blocking transfer on a GPU, and ops such as the inverse NTT's 1/N scaling ask for
        the same constant on every call. Callers get copies (`full`), never this tensor."""
        dev = torch.device(device) if device is not None else torch.device("cpu")
        key = (value, dev.type, dev.index)
        col = self._columns.get(key)
        if col is None:
            limbs = self.params.limbs(self.params.to_mont(value), 32)
            col = torch.tensor(np.array(limbs, dtype=np.uint32).view(np.int32), device=dev)
            if len(self._columns) >= 256:
                self._columns.clear()
            self._columns[key] = col
        return col

    def random(self, shape, generator: torch.Generator | None = None, device=None) -> "FieldTensor":
        """Uniform in [0, p). A uniform value is uniform in Montgomery form too, so the
        words are drawn directly (rejection sampling below p)."""
        shape = _shape(shape)
        n = int(np.prod(shape)) if shape else 1
        out = torch.zeros((self.limbs, n), dtype=torch.int64)
        bits = self.params.bits
        todo = torch.arange(n)
        while len(todo):
            w = torch.randint(0, 1 << 32, (self.limbs, len(todo)), generator=generator, dtype=torch.int64)
            for j in range(self.limbs):
                keep = min(32, max(0, bits - 32 * j))
                w[j] &= (1 << keep) - 1
            out[:, todo] = w
            ok = _less_than_p(out[:, todo].to(torch.int32), self.params)
            todo = todo[~ok]
        data = out.to(torch.int32).reshape((self.limbs,) + shape)
        return FieldTensor(self, data.to(device) if device is not None else data)


class FieldTensor:
    """Field elements of one field in a limb tensor; arithmetic is compiled."""

    __array_priority__ = 1000
    __slots__ = ("F", "data")

    def __init__(self, F: FieldSpace, data: torch.Tensor):
        if data.dtype != torch.int32 or data.dim() < 1 or data.shape[0] != F.limbs:
            raise ValueError(f"{F.name}: data must be int32 of shape ({F.limbs}, ...)")
        self.F, self.data = F, data

    # -- shape ---------------------------------------------------------------
    @property
    def shape(self) -> torch.Size:
        return self.data.shape[1:]

    @property
    def device(self) -> torch.device:
        return self.data.device

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d FieldTensor")
        return self.shape[0]

    def numel(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 1

    def __getitem__(self, idx) -> "FieldTensor":
        idx = idx if isinstance(idx, tuple) else (idx,)
        if any(i is Ellipsis for i in idx):
            raise IndexError("Ellipsis indexing is not supported on FieldTensor")
        return FieldTensor(self.F, self.data[(slice(None),) + idx])

    def __setitem__(self, idx, value):
        value = self._coerce(value)
        idx = idx if isinstance(idx, tuple) else (idx,)
        target = self.data[(slice(None),) + idx]
        target.copy_(align(value.data, target.shape[1:]))

    def reshape(self, *shape) -> "FieldTensor":
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return FieldTensor(self.F, self.data.reshape((self.F.limbs,) + tuple(shape)))

    def contiguous(self) -> "FieldTensor":
        return FieldTensor(self.F, self.data.contiguous())

    def clone(self) -> "FieldTensor":
        return FieldTensor(self.F, self.data.clone())

    def to(self, device) -> "FieldTensor":
        return FieldTensor(self.F, self.data.to(device))

    def __repr__(self):
        n = self.numel()
        body = self.to_ints() if n <= 8 else f"<{n} elements>"
        return f"FieldTensor({self.F.name}, shape={tuple(self.shape)}, {body})"

    # -- conversion out --------------------------------------------------------
    def to_ints(self):
        """Standard-form values as (nested lists of) Python ints."""
        raw = self.to_words_bytes()
        nb = 4 * self.F.limbs
        flat = [int.from_bytes(raw[i:i + nb], "little") for i in range(0, len(raw), nb)]
        return _unflatten(flat, tuple(self.shape))

    def to_bytes(self) -> bytes:
        """Little-endian standard-form words of F.bytes bytes each, in row-major element order."""
        return self.to_words_bytes()

    def to_words_bytes(self) -> bytes:
        words = from_mont(self.F, self.data).cpu().reshape(self.F.limbs, -1).T.contiguous()
        return words.numpy().view(np.uint8).tobytes()

    # -- arithmetic --------------------------------------------------------------
    def _coerce(self, other) -> "FieldTensor":
        if isinstance(other, FieldTensor):
            if other.F != self.F:
                raise TypeError(f"cannot mix {self.F.name} and {other.F.name} tensors")
            return other
        if isinstance(other, (int, np.integer)) and not isinstance(other, bool):
            return self.F.full((), int(other) % self.F.p, device=self.device)
        raise TypeError(f"unsupported operand type for {self.F.name} tensor: {type(other).__name__}")

    def _run(self, name, *xs: "FieldTensor") -> "FieldTensor":
        n, fn = OPS[name]
        (res,) = run_program(self.F, name, n, fn, [x.data for x in xs])
        return FieldTensor(self.F, res)

    def _binary(self, name, other, swap=False):
        other = self._coerce(other)
        a, b = (other, self) if swap else (self, other)
        return self._run(name, a, b)

    def __add__(self, o): return self._binary("add", o)
    def __radd__(self, o): return self._binary("add", o, swap=True)
    def __sub__(self, o): return self._binary("sub", o)
    def __rsub__(self, o): return self._binary("sub", o, swap=True)
    def __mul__(self, o): return self._binary("mul", o)
    def __rmul__(self, o): return self._binary("mul", o, swap=True)

    def __neg__(self):
        return self._run("neg", self)

    def square(self):
        return self._run("square", self)

    def __pow__(self, e: int):
        if not isinstance(e, int) or isinstance(e, bool):
            raise TypeError("exponent must be an int")
        if e < 0:
            return self.inverse() ** -e
        (res,) = run_program(self.F, ("pow", e), 1, lambda a: a ** e, [self.data])
        return FieldTensor(self.F, res)

    def pow(self, e: int):
        return self ** e

    def inverse(self):
        """1/x elementwise (Fermat: x^(p-2)); raises ZeroDivisionError on a zero."""
        check_nonzero(self)
        return self ** (self.F.p - 2)

    def __eq__(self, other):
        other = self._coerce(other)
        batch = broadcast_shapes(self.shape, other.shape)
        return torch.all(align(self.data, batch) == align(other.data, batch), dim=0)

    def __ne__(self, other):
        return ~(self == other)

    def is_zero(self):
        return torch.all(self.data == 0, dim=0)

    __hash__ = None


def field(name: str) -> FieldSpace:
    return _spaces.setdefault(name, FieldSpace(field_record(name)))


_spaces: dict[str, FieldSpace] = {}


def cat(tensors, dim: int = 0) -> FieldTensor:
    """Concatenate FieldTensors of one field along a batch dimension."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("cat() needs at least one tensor")
    F = tensors[0].F
    for t in tensors:
        if not isinstance(t, FieldTensor) or t.F != F:
            raise TypeError("cat() needs FieldTensors of one field")
    nd = len(tensors[0].shape)
    if not -nd <= dim < nd:
        raise IndexError(f"dim {dim} out of range for {nd}-d tensors")
    dim = dim % nd
    return FieldTensor(F, torch.cat([t.data for t in tensors], dim=dim + 1))


def stack(tensors, dim: int = 0) -> FieldTensor:
    tensors = list(tensors)
    if not tensors:
        raise ValueError("stack() needs at least one tensor")
    F = tensors[0].F
    for t in tensors:
        if not isinstance(t, FieldTensor) or t.F != F:
            raise TypeError("stack() needs FieldTensors of one field")
    return FieldTensor(F, torch.stack([t.data for t in tensors], dim=dim + 1 if dim >= 0 else dim))


# -- helpers -------------------------------------------------------------------
def align(data: torch.Tensor, batch) -> torch.Tensor:
    """Limb data viewed over a broadcast batch shape (batch dims align from the right)."""
    extra = len(batch) - (data.dim() - 1)
    data = data.reshape((data.shape[0],) + (1,) * extra + tuple(data.shape[1:]))
    return data.expand((data.shape[0],) + tuple(batch))


def _shape(shape) -> tuple[int, ...]:
    if isinstance(shape, int):
        return (shape,)
    return tuple(int(s) for s in shape)


def _flatten(values):
    if isinstance(values, (list, tuple)):
        if not values:
            return (0,), []
        parts = [_flatten(v) for v in values]
        inner = parts[0][0]
        if any(s != inner for s, _ in parts):
            raise ValueError("ragged nested lists: every row must have the same shape")
        return (len(values),) + inner, [x for _, f in parts for x in f]
    return (), [values]


def _unflatten(flat, shape):
    if not shape:
        return flat[0]
    if len(shape) == 1:
        return flat
    step = len(flat) // shape[0] if shape[0] else 0
    return [_unflatten(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def _words_from_bytes(raw: bytes, limbs: int, shape) -> torch.Tensor:
    arr = np.frombuffer(raw, dtype="<u4").reshape(-1, limbs).T.copy()
    return torch.from_numpy(arr.view(np.int32)).reshape((limbs,) + tuple(shape))


def _less_than_p(words: torch.Tensor, F: Field) -> torch.Tensor:
    """Elementwise words < p, comparing limbs from the most significant down."""
    w = words.reshape(words.shape[0], -1).to(torch.int64) & 0xFFFFFFFF
    less = torch.zeros(w.shape[1], dtype=torch.bool)
    equal = torch.ones(w.shape[1], dtype=torch.bool)
    for j, pj in reversed(list(enumerate(F.limbs(F.p, 32)))):
        less |= equal & (w[j] < pj)
        equal &= w[j] == pj
    return less


def check_nonzero(x: FieldTensor) -> None:
    """Raise ZeroDivisionError naming the first zero element of x (except in a compile pass,
    runtime/compile_shards.py, whose values are meaningless: there the inversion's kernels
    would go uncompiled behind the error)."""
    zero = x.is_zero()
    if bool(zero.any()) and not compile_shards.active():
        idx = tuple(int(i) for i in torch.nonzero(zero.reshape(zero.shape) if zero.dim() else
                                                      zero.reshape(1))[0])
        raise ZeroDivisionError(f"{x.F.name}: inverse of zero (at index {idx})")
