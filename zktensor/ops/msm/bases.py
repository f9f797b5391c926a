"""Prepared bases (`msm_prepare`, GZKP): the affine table of weighted bases 2^(j·M·c)·P_i,
their negations and the bucket offsets, built once for repeated MSMs; plain MSMs build the
same table with one checkpoint."""
from __future__ import annotations

from dataclasses import replace

import torch

from ...config import config as zt_config
from .model import msm_config
from ...kernels.point_formulas import double_n
from ...points import GroupSpace, PointTensor
from ...tensor import FieldTensor

from .model import MSMConfig, auto_strategy, choose_chunks, choose_window, check_window, n_windows
from .offsets import bucket_offsets
from .device import AffinePoints, glv_endomorphism, glv_points, point_major


class MSMBases:
    """Bases prepared for repeated MSMs (GZKP): 2^(j·M·c)·P_i for every checkpoint j (and the
    same for the generator, which cancels the bucket offsets), their negations and the
    bucket offsets, as one affine table: point-major (`rows`, `table` None) on the CPU
    where `cpu_gather` compiles, else limb-major (`table`) below rows of
    `msm_tree.PREPARED_POINT_MAJOR_FROM` bytes for weighted tables and of `POINT_MAJOR_FROM`
    for plain ones; the copy is made once here instead of in every MSM
    (`msm_tree.point_major`).

    On the Triton target (`resident`) the bases stay on the device (`device_points`: XYZZ as
    given, or `device.AffinePoints` with MSMConfig.mixed; followed by phi(P) with the GLV
    split), and every MSM against them is the device program (`device`)."""

    device_points = None
    affine = False              # device_points in affine coordinates (`device.AffinePoints`)
    glv = False                 # device_points are (P, phi(P)), 2n points (`resident`)
    _weighted = None            # (C, the device bases' weighted table for windows of C bits)

    def __init__(self, GS: GroupSpace, xy: torch.Tensor, inf: torch.Tensor, window: int,
                 checkpoint: int, chunks: int, config: MSMConfig):
        self.G, self.window, self.config = GS, window, config
        self.n = xy.shape[2]
        bits = GS.r.bit_length()
        self.W = n_windows(bits, window)
        self.M = min(checkpoint, self.W)
        self.J = -(-self.W // self.M)
        self.chunks = chunks
        self.base_inf = inf
        from ...kernels import cpu_gather, msm_tree
        self.device = xy.device
        cols = table_columns(self.n, self.J, window)
        # the compiled gather reads a point-major table faster at every size, weighted or
        # plain; numpy's two-pass gather pays only from large rows, of weighted tables sooner
        pm = self.device.type == "cpu" and (cpu_gather.available() or cols * 4 >= (
            msm_tree.PREPARED_POINT_MAJOR_FROM if self.J > 1 else msm_tree.POINT_MAJOR_FROM))
        table, self.tinf, self.offset_total = _weighted_table(GS, xy, inf, window, self.M, self.J, chunks,
                                                              point_major=pm)
        self.table, self.rows = (None, table) if pm else (table, None)

    @classmethod
    def resident(cls, GS: GroupSpace, points: PointTensor, window: int, config: MSMConfig) -> "MSMBases":
        """Bases for the device program: the points' own data, no table (nothing is read
        back to build one); with config.mixed their affine form (a batch inversion, here
        rather than in every MSM). With the GLV split (config.glv, a group with an
        endomorphism, no weighted table) the bases are kept as (P, phi(P)) (`device.glv_points`),
        2n points, P first, so that no MSM makes them again."""
        self = cls.__new__(cls)
        self.G, self.window, self.config = GS, window, config
        self.n = points.shape[0]
        self.W = self.M = n_windows(GS.r.bit_length(), window)
        self.J, self.chunks = 1, config.chunks or 1
        self.base_inf = self.tinf = self.table = self.rows = None
        self.offset_total = 0
        self.device = points.device
        self.affine = config.mixed
        pm = config.point_major
        pts = AffinePoints.of(points, pm) if self.affine else (
            point_major(points) if pm else PointTensor(GS, points.data.contiguous()))
        endo = _resident_split(GS, self.n, config)
        self.glv = endo is not None
        self.device_points = (glv_points(GS, endo, pts, pm) if self.glv else pts).data
        return self

    def __len__(self):
        return self.n

    def device_bases(self, lo: int = 0, hi: int | None = None):
        """Bases lo..hi-1 as the device program takes them: a PointTensor (XYZZ) or, with
        config.mixed, `device.AffinePoints`."""
        return self._wrap(self.device_points[:, :, lo:self.n if hi is None else hi])

    def device_glv(self):
        """The device bases (P, phi(P)) as `device.device_msm`'s `glv` takes them, or None
        where they are not kept (`resident`)."""
        return self._wrap(self.device_points) if self.glv else None

    def _wrap(self, data):
        return AffinePoints(self.G, data) if self.affine else PointTensor(self.G, data)

    def device_weighted(self, C: int):
        """The device bases' weighted table for windows of C bits (`device.weighted_points`;
        affine with config.mixed, one batch inversion more), made at the first call for C
        and kept; one C at a time (each is W copies of the bases)."""
        from .device import weighted_points
        if self._weighted is None or self._weighted[0] != C:
            self._weighted = None               # the old table goes before the new one is made
            W = n_windows(self.G.r.bit_length(), C)
            pm = self.config.point_major
            if self.affine:
                table = weighted_points(self.G, self.device_bases().points(), C, W)
                self._weighted = (C, AffinePoints.of(table, pm))
            else:
                self._weighted = (C, weighted_points(self.G, self.device_bases(), C, W, point_major=pm))
        return self._weighted[1]

    def memory_bytes(self) -> int:
        t = self.device_points if self.device_points is not None else \
            self.table if self.table is not None else self.rows
        extra = self._weighted[1].data.numel() if self._weighted is not None else 0
        return (t.numel() + extra) * 4


def resident_bytes(GS: GroupSpace, n: int, config: MSMConfig) -> int:
    """Bytes `MSMBases.resident` keeps on the device for n bases with `config` (its weighted
    table, made at an MSM's first call for it, apart): XYZZ or, with config.mixed, affine
    words, twice over where it keeps (P, phi(P))."""
    words = 2 * GS.degree if config.mixed else GS.K
    return words * GS.L * 4 * n * (1 if _resident_split(GS, n, config) is None else 2)


def _resident_split(GS: GroupSpace, n: int, config: MSMConfig):
    """The endomorphism whose (P, phi(P)) resident bases keep, or None: the split of
    full-width scalars, which a weighted table never runs (`device.glv_endomorphism`)."""
    return glv_endomorphism(GS, config, n, GS.r.bit_length(), config.weighted)


def table_columns(n: int, J: int, c: int) -> int:
    """Columns (points) of the table for n bases, J checkpoints and window c: every
    checkpoint's bases and generator, their negations, and the 2^(c-1) bucket offsets."""
    return 2 * J * (n + 1) + (1 << (c - 1))


def _weighted_table(GS, xy, inf, c, M, J, chunks, point_major: bool = False):
    """Limb-major affine table (2d·L, 2·J·(n+1) + N) and identity flags:
    [Q_0 | ... | Q_{J-1} | -Q_0 | ... | -Q_{J-1} | U_1..U_N], Q_j = 2^(j·M·c)·[P_0..P_{n-1}, g];
    with point_major, the same table as (columns, 2d·L) (see `msm_tree.point_major`). Each
    part is written into place as it is made (a 2^16 BN254 G1 table at M = 1 is 130 MiB:
    concatenating and transposing it took ~40% of msm_prepare)."""
    L, C2, n = xy.shape
    d = GS.degree
    dev = xy.device
    n1 = n + 1
    uxy, total = bucket_offsets(GS, c, chunks, dev)
    T = table_columns(n, J, c)
    table = torch.empty((T, C2 * L) if point_major else (C2 * L, T), dtype=torch.int32, device=dev)
    tinf = torch.zeros(T, dtype=torch.bool, device=dev)

    def put(col, x, y):                 # x, y: (L, d, m) coordinates of columns col..col+m
        m = x.shape[2]
        if point_major:
            v = table[col:col + m].view(m, C2, L)
            v[:, :d].copy_(x.permute(2, 1, 0))
            v[:, d:].copy_(y.permute(2, 1, 0))
        else:
            v = table[:, col:col + m].view(C2, L, m)
            v[:d].copy_(x.permute(1, 0, 2))
            v[d:].copy_(y.permute(1, 0, 2))

    gxy, ginf = GS.generator((1,), device=dev).affine()
    cxy, cinf = torch.cat([xy, gxy], dim=2), torch.cat([inf, ginf])
    cur = None              # XYZZ form, made only where there are weighted copies to double into
    for j in range(J):
        if j:
            cur = cur if cur is not None else GS.from_affine(cxy, cinf, check=False)
            cur = PointTensor(GS, double_n_many(GS, cur.data, M * c))
            cxy, cinf = cur.affine()
        negy = (-FieldTensor(GS.F, cxy[:, d:].reshape(L, -1).contiguous())).data.reshape(L, d, n1)
        put(j * n1, cxy[:, :d], cxy[:, d:])
        put((J + j) * n1, cxy[:, :d], negy)
        tinf[j * n1:(j + 1) * n1] = cinf
        tinf[(J + j) * n1:(J + j + 1) * n1] = cinf
    put(2 * J * n1, uxy[:, :d], uxy[:, d:])
    return table, tinf, total


def prepared_bytes(GS: GroupSpace, n: int, checkpoint: int, n_hint: int | None = None) -> int:
    """Bytes of `msm_prepare`'s table for n bases at checkpoint interval M, the window chosen
    by the cost model for MSMs of n_hint (default n) scalars."""
    bits = GS.r.bit_length()
    c = choose_window(n_hint or n, bits, checkpoint=checkpoint)
    W = n_windows(bits, c)
    J = -(-W // min(checkpoint, W))
    return table_columns(n, J, c) * 2 * GS.degree * GS.L * 4


def double_n_many(GS, data, n):
    return double_n(GS, data, n)


def msm_prepare(points, window: int | None = None, checkpoint: int | None = None,
                config: MSMConfig | None = None, n_hint: int | None = None) -> MSMBases:
    """Precompute GZKP's weighted bases for `points` (a 1-D PointTensor). Without `config`:
    zt.config(msm=...), else the tuning cache (op `msm_prepared`), else the cost model."""
    if not isinstance(points, PointTensor):
        raise TypeError("msm_prepare takes a PointTensor of bases")
    GS = points.G
    if len(points.shape) != 1:
        raise ValueError("bases must be a 1-D PointTensor")
    n = points.shape[0]
    cfg = config or msm_config(GS, n_hint or n, points.device, prepared=True)
    bits = GS.r.bit_length()
    from . import device
    if device.on_device(points.device):
        c = window or cfg.window or device.device_window(n_hint or n, bits)
        return MSMBases.resident(GS, points, c, replace(cfg, window=c, checkpoint=n_windows(bits, c)))
    M = checkpoint or cfg.checkpoint
    c = window or cfg.window or choose_window(n_hint or n, bits, checkpoint=M or 1, cfg=cfg)
    check_window(c)
    W = n_windows(bits, c)
    M = min(M or 1, W)
    N = 1 << (c - 1)
    K = min(cfg.chunks or choose_chunks(N), N)
    strategy = cfg.strategy or auto_strategy(GS, points.device)
    with zt_config(strategy=strategy):
        xy, inf = points.affine()
        return MSMBases(GS, xy, inf, c, M, K, replace(cfg, window=c, checkpoint=M, chunks=K))
