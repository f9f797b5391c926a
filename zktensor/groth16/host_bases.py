"""MSM bases kept in host memory for a device they do not fit: uploaded in chunks, per MSM.

    hb = HostBases.decode(G, [(raw, 0)], device="cuda", chunk=1 << 20)   # checked on the device
    Q = hb.msm(words)            # (B,) points on the device: sum_i words[:, b, i]·P_i
    hb.many(jobs)                # as `ops.msm.msm_many`, jobs of (scalars, offset)

A proving key whose bases exceed the device's table budget (`key.device_table_budget`) keeps
them as XYZZ point data in host memory (pinned on a GPU), chunk by chunk. An MSM runs the
device program (`ops.msm.device.device_msm`) over one chunk at a time: chunk i + 1 is
uploaded on a copy stream while chunk i's MSM runs on the caller's stream, into two device
buffers in turn; the copy into a buffer waits, on the device, for the MSM that last read it
(events, never the host), so the device holds two chunks and the host queues everything
without waiting. The chunks' partial sums are added on the device in one launch
(`device.point_sums`: complete additions, so exceptional sums need nothing more).
On CPU tensors (the Triton target under the interpreter) the chunks are used where they
lie: the same MSMs and sums, no copies.
"""
from __future__ import annotations

import torch

from ..kernels.field_programs import from_mont
from ..ops.msm import MSMConfig
from ..ops.msm import device as msm_device
from ..points import PointTensor
from ..tensor import FieldTensor


class HostBases:
    """Bases as XYZZ chunks in host memory: ``chunks`` is a list of (offset, data (L, K, m))."""

    def __init__(self, G, chunks: list, device, config: MSMConfig | None = None):
        self.G, self.device = G, torch.device(device)
        self.chunks = chunks
        self.n = sum(c.shape[2] for _, c in chunks)
        self.chunk = max((c.shape[2] for _, c in chunks), default=0)
        self.config = config or MSMConfig()
        self._copy = None

    @classmethod
    def decode(cls, G, sections, device, chunk: int, config: MSMConfig | None = None) -> "HostBases":
        """From snarkjs point bytes: sections is a list of (raw bytes, leading identities); each
        piece of at most `chunk` points is decoded and checked on the curve on `device`, then
        kept in host memory (so the device never holds more than a chunk of them)."""
        dev = torch.device(device)
        size = 2 * G.degree * G.F.bytes
        chunks, off = [], 0
        for raw, ids in sections:
            for a in range(0, ids, chunk):
                m = min(chunk, ids - a)
                chunks.append((off, _keep(G.identity((m,)).data, dev)))
                off += m
            n = len(raw) // size
            for a in range(0, n, chunk):
                m = min(chunk, n - a)
                P = G.from_bytes(raw[a * size:(a + m) * size], device=dev, check=True)
                chunks.append((off, _keep(P.data, dev)))
                off += m
        return cls(G, chunks, dev, config)

    def __len__(self):
        return self.n

    def memory_bytes(self) -> int:
        """Host bytes of the chunks (the device holds two chunks at a time while an MSM runs)."""
        return sum(c.numel() * 4 for _, c in self.chunks)

    def words(self, scalars) -> torch.Tensor:
        """(Lr, B, n) standard-form words on the device of a FieldTensor (n,) or (B, n)."""
        if not isinstance(scalars, FieldTensor) or scalars.F != self.G.Fr:
            raise TypeError(f"{self.G.name}: host bases take {self.G.Fr.name} FieldTensor scalars")
        data = scalars.data if scalars.data.dim() == 3 else scalars.data.reshape(scalars.data.shape[0], 1, -1)
        if data.shape[2] != self.n:
            raise ValueError(f"{data.shape[2]} scalars but {self.n} bases")
        return from_mont(self.G.Fr, data)

    def many(self, jobs) -> PointTensor:
        """`ops.msm.msm_many` against these bases: jobs of (FieldTensor (k,), offset), one row of
        scalar words each, zero outside its slice; a (len(jobs),) PointTensor."""
        Fr = self.G.Fr
        words = torch.zeros((Fr.limbs, len(jobs), self.n), dtype=torch.int32, device=self.device)
        for j, (s, off) in enumerate(jobs):
            k = s.shape[0]
            if not 0 <= off <= self.n - k:
                raise ValueError(f"job {j}: {k} scalars from base {off} pass the {self.n} bases")
            if k:
                words[:, j, off:off + k] = from_mont(Fr, s.data)
        return self.msm(words)

    def msm(self, words: torch.Tensor, config: MSMConfig | None = None, bits: int | None = None) -> PointTensor:
        """sum_i words[:, b, i]·P_i for every row b: words (Lr, B, n) standard form on the
        device (scalars below 2^bits; default r's bits); a (B,) PointTensor on the device."""
        if words.shape[2] != self.n:
            raise ValueError(f"{words.shape[2]} scalars but {self.n} bases")
        cfg = config or self.config
        G, dev = self.G, self.device
        if not self.chunks:
            return G.identity((words.shape[1],), device=dev)
        if dev.type != "cuda":
            parts = [msm_device.device_msm(G, words[:, :, a:a + c.shape[2]], PointTensor(G, c.to(dev)), cfg,
                                           bits=bits) for a, c in self.chunks]
            return row_sums(G, parts)
        compute = torch.cuda.current_stream(dev)
        if self._copy is None:
            self._copy = torch.cuda.Stream(dev)
        copy = self._copy
        copy.wait_stream(compute)    # the buffers' memory may be the last use's on this stream
        size = G.L * G.K * self.chunk
        bufs = [torch.empty(size, dtype=torch.int32, device=dev) for _ in range(2)]
        read = [None, None]          # the event after the MSM that last read each buffer
        parts = []
        for i, (a, c) in enumerate(self.chunks):
            j, m = i % 2, c.shape[2]
            dst = bufs[j][:G.L * G.K * m].view(G.L, G.K, m)          # contiguous, as the chunk
            with torch.cuda.stream(copy):
                if read[j] is not None:
                    copy.wait_event(read[j])
                dst.copy_(c, non_blocking=True)
                ready = torch.cuda.Event()
                ready.record(copy)
            compute.wait_event(ready)
            parts.append(msm_device.device_msm(G, words[:, :, a:a + m], PointTensor(G, dst), cfg, bits=bits))
            read[j] = torch.cuda.Event()
            read[j].record(compute)
        for b in bufs:                # the copy stream wrote them: not reused before its copies end
            b.record_stream(copy)
        return row_sums(G, parts)


def row_sums(G, parts: list) -> PointTensor:
    """sum_c parts[c][b] for every b, on the device with no host read: one launch
    (`device.point_sums` over the partial sums laid out row by row)."""
    if len(parts) == 1:
        return parts[0]
    data = torch.stack([p.data for p in parts], dim=3)                  # (L, K, B, chunks)
    return msm_device.point_sums(G, PointTensor(G, data.reshape(data.shape[0], data.shape[1], -1)), len(parts))


def _keep(data: torch.Tensor, device) -> torch.Tensor:
    """Point data to host memory, pinned when the device is a GPU (asynchronous uploads)."""
    host = data.to("cpu").contiguous()
    return host.pin_memory() if device.type == "cuda" else host


__all__ = ["HostBases", "row_sums"]
