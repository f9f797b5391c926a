"""Keep freed host memory for reuse instead of returning it to the kernel.

glibc's malloc serves every block above M_MMAP_THRESHOLD (128 KiB, adapting
up to 32 MiB) by a fresh mmap and unmaps it on free. The CPU target's
tensor programs allocate large temporaries at every step (an MSM tree level's
gathered operands, its next table, the inversion's prefix products: tens of
MiB each at 2^16 points), so each step paid a page fault per 4 KiB page and the
kernel's zeroing of it: the batch-affine addition kernels of a 2^16-point
BN254 MSM spent 155 ms where the same launches on warm memory take 46 ms
(2 threads, measured 2026-11-21). Raising the mmap threshold and the trim
threshold lets freed blocks stay in the heap and be handed out again warm.

The cost is that a process keeps its peak heap after a large computation
(which a prover, run again and again, wants anyway). `ZKTENSOR_MALLOC=system`
leaves malloc as it is; the setting is applied once, before the first CPU
kernel launch, and only where the C library is glibc.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
KEEP = 2**31 - 1        # bytes (mallopt takes an int): blocks below this come from the heap,
                        # and a freed top of the heap below this stays
_done = False
_applied = False
_lock = threading.Lock()


def keep_freed_memory() -> bool:
    """Apply the setting (once per process); True where malloc took it."""
    global _done, _applied
    if _done:
        return _applied
    with _lock:
        if _done:
            return _applied
        _applied = False
        if os.environ.get("ZKTENSOR_MALLOC", "keep") != "system":
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                mallopt = libc.mallopt
            except (OSError, AttributeError):     # not glibc (musl, macOS): leave it
                mallopt = None
            if mallopt is not None:
                mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
                # both return 1 on success
                _applied = bool(mallopt(M_MMAP_THRESHOLD, KEEP)) and bool(mallopt(M_TRIM_THRESHOLD, KEEP))
        _done = True
    return _applied
