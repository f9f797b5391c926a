"""Keep freed host memory for reuse instead of returning it to the kernel.

glibc's malloc serves every block above M_MMAP_THRESHOLD (128 KiB, adapting
up to 32 MiB) by a fresh mmap and unmaps it on free. The CPU target's
tensor programs allocate large temporaries at every step (an MSM tree level's
gathered operands, its next table, the inversion's prefix products: tens of
MiB each at 2^16 points), so each step paid a page fault per 4 KiB page and the
kernel's zeroing of it, which cost the MSM's addition kernels several times their
time on warm memory. Raising the mmap threshold and the trim threshold lets freed
blocks stay in the heap and be handed out again warm.

Threads other than the main one get arenas of their own, whose heaps are at most
64 MiB: a larger block cannot come from them and is mmapped, whatever the
threshold, and unmapped on free. The Groth16 graph runs its nodes on worker
threads, and at 2^18 constraints an MSM's temporaries are hundreds of MiB, so
every proof faulted in hundreds of MiB of fresh pages. One arena for all threads
(M_ARENA_MAX = 1) lets them reuse the main heap's warm blocks, and the faults of a
proof fall from hundreds of thousands to hundreds. The arenas' lock is taken per
malloc, and our allocations are few and large.

The cost is that a process keeps its peak heap after a large computation
(which a prover, run again and again, wants anyway). `ZKTENSOR_MALLOC=system`
leaves malloc as it is; the setting is applied once per process, and only where
the C library is glibc. Threads made after it share the one arena; one that had
an arena before keeps it.

When: `zktensor`'s import calls `keep_freed_memory_before_heavy_imports`, which
applies it at once where numpy or torch is loaded already and otherwise just
before the first import of either (a finder on `sys.meta_path` that finds
nothing). Everything that allocates at scale (the kernels, the tensors, the
graph's worker threads, OpenBLAS's and torch's thread pools) comes after one
of those imports, and a process that never makes one, the service's thin
client, does not load ctypes at all.
"""
from __future__ import annotations

import _thread     # not threading: this runs in every start-up, the thin client's too
import os
import sys

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
KEEP = 2**31 - 1        # bytes (mallopt takes an int): blocks below this come from the heap,
                        # and a freed top of the heap below this stays
_done = False
_applied = False
_lock = _thread.allocate_lock()
HEAVY = ("numpy", "torch")      # imported before any large allocation or thread pool of ours


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
            import ctypes
            try:
                try:
                    libc = ctypes.CDLL("libc.so.6")      # find_library spawns ldconfig
                except OSError:
                    from ctypes.util import find_library   # only here: it costs more start-up
                    libc = ctypes.CDLL(find_library("c") or "libc.so.6")   # than the rest of the package
                mallopt = libc.mallopt
            except (OSError, AttributeError):     # not glibc (musl, macOS): leave it
                mallopt = None
            if mallopt is not None:
                mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
                # each returns 1 on success
                _applied = all([mallopt(M_MMAP_THRESHOLD, KEEP), mallopt(M_TRIM_THRESHOLD, KEEP),
                                mallopt(M_ARENA_MAX, 1)])
        _done = True
    return _applied


class _BeforeHeavyImports:
    """A `sys.meta_path` finder that finds nothing: it applies the setting when one of
    `HEAVY` is first imported, then leaves the path."""

    def find_spec(self, name, path=None, target=None):
        if name in HEAVY:
            try:
                sys.meta_path.remove(self)
            except ValueError:          # another thread's import got here first
                pass
            keep_freed_memory()
        return None


def keep_freed_memory_before_heavy_imports() -> None:
    """`keep_freed_memory` now if numpy or torch is loaded, else just before either is."""
    if _done:
        return
    if any(name in sys.modules for name in HEAVY):
        keep_freed_memory()
    elif not any(isinstance(f, _BeforeHeavyImports) for f in sys.meta_path):
        sys.meta_path.insert(0, _BeforeHeavyImports())
