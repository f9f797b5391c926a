"""The device MSM with its host program run and its kernels' sums written by the Python-int
oracle (tests/oracles/ec.py): for tests of what surrounds the device MSM (a proof's graph,
chunked keys, prepared bases and batches) inside the sync guard, where an interpreted
full-width MSM would cost minutes. Nothing computes the sums but the oracle: the kernels'
launches are dropped, and `tests/ec/test_msm_device.py` checks the kernels themselves.

    calls = install(monkeypatch)      # then every device_msm: [(group, n, rows), ...]
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import torch

from tests.guard import _state
from tests.oracles import ec as O
from zktensor.algebra.curves import group as group_record
from zktensor.ops.msm import device


@contextmanager
def _unguarded():
    """The oracle's host work: exempt from the guard as the interpreter's own launches are."""
    _state.triton = getattr(_state, "triton", 0) + 1
    try:
        yield
    finally:
        _state.triton -= 1


def _scalar_rows(GS, scalars) -> list[list[int]]:
    """Python ints of device_msm's scalars: standard-form words (Lr, B, n) or a FieldTensor
    (Montgomery words, read without a kernel)."""
    if isinstance(scalars, torch.Tensor):
        w, rinv = scalars, 1
    else:
        w, rinv = scalars.data, pow(2, -32 * GS.Fr.limbs, GS.r)
        w = w.reshape(w.shape[0], 1, -1) if w.dim() == 2 else w
    words = w.numpy().astype(np.uint32).transpose(1, 2, 0)
    return [[int.from_bytes(v.tobytes(), "little") * rinv % GS.r for v in row] for row in words]


def _components(GS, data: torch.Tensor) -> list[list[int]]:
    """Standard-form Python ints of point data (L, K, m) (affine: (L, 2·degree, m)): per
    point its components."""
    q, L = GS.params.p, GS.L
    rinv = pow(2, -32 * L, q)
    words = data.reshape(L, data.shape[1], -1).numpy().astype(np.uint32).transpose(2, 1, 0)
    return [[int.from_bytes(c.tobytes(), "little") * rinv % q for c in pt] for pt in words]


def _affine(GS, points) -> list:
    """The device program's bases as affine points of the oracle: XYZZ data (L, K, m) (x =
    X/ZZ, y = Y/ZZZ), or `device.AffinePoints` (all-zero words: the identity)."""
    g, d = group_record(GS.name), GS.degree
    out = []
    if isinstance(points, device.AffinePoints):
        for c in _components(GS, points.data):
            x, y = (c[0], c[1]) if d == 1 else (tuple(c[:2]), tuple(c[2:]))
            out.append(None if not any(c) else (x, y))
        return out
    for c in _components(GS, points.data):
        parts = [c[j * d:(j + 1) * d] for j in range(4)]
        X, Y, ZZ, ZZZ = (part[0] if d == 1 else tuple(part) for part in parts)
        zero = O._zero(g)
        out.append(None if ZZ == zero else (O._mul(g, X, O._inv(g, ZZ)), O._mul(g, Y, O._inv(g, ZZZ))))
    return out


def _xyzz(GS, points) -> torch.Tensor:
    """Affine oracle points (None the identity) as XYZZ data (L, K, m), Montgomery words."""
    q, L, d = GS.params.p, GS.L, GS.degree
    R = pow(2, 32 * L, q)
    comps = []
    for P in points:
        flat = ([1] + [0] * (d - 1)) * 2 + [0] * (2 * d) if P is None else \
            ([P[0], P[1]] if d == 1 else [*P[0], *P[1]]) + ([1] + [0] * (d - 1)) * 2
        comps.append([v * R % q for v in flat])
    raw = b"".join(v.to_bytes(4 * L, "little") for pt in comps for v in pt)
    w = np.frombuffer(raw, dtype="<u4").reshape(len(points), GS.K, L).transpose(2, 1, 0)
    return torch.from_numpy(np.ascontiguousarray(w).view(np.int32))


def install(monkeypatch) -> list:
    """device_msm with its host program run (digits, sort, launches' arguments) and its kernels
    replaced by the Python-int oracle's sums (no kernel of any target computes them); returns
    the list of (group, n, rows) it did. `device.point_sums` likewise (its launch dropped, the
oracle's sums written), not listed."""
    calls = []
    real = device.device_msm
    monkeypatch.setattr(device, "_launch", lambda *a, **k: None)

    def msm(GS, scalars, points, cfg, stats=None, bits=None, weighted=None, glv=None):
        out = real(GS, scalars, points, cfg, stats, bits=bits, weighted=weighted, glv=glv)
        with _unguarded():
            rows = _scalar_rows(GS, scalars)
            pts = _affine(GS, points)
            g = group_record(GS.name)
            out.data.copy_(_xyzz(GS, [O.msm(g, pts, row) for row in rows]))
        calls.append((GS.name, points.shape[0], len(rows)))
        return out
    monkeypatch.setattr(device, "device_msm", msm)
    real_sums = device.point_sums

    def point_sums(GS, points, M, strategy=None):       # its one launch dropped too: the oracle's sums
        out = real_sums(GS, points, M, strategy)
        with _unguarded():
            g, pts = group_record(GS.name), _affine(GS, points)
            sums = []
            for i in range(0, len(pts), M):
                acc = None
                for P in pts[i:i + M]:
                    acc = O.add(g, acc, P)
                sums.append(acc)
            out.data.copy_(_xyzz(GS, sums))
        return out
    monkeypatch.setattr(device, "point_sums", point_sums)
    return calls
