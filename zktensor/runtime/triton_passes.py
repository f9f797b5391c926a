"""Compile limb kernels without Triton's coalescing pass.

Why: TritonGPUCoalesce walks, for every load and store, the whole def-use slice
of the kernel, repeatedly, so its time grows with the memory operations times
the square of the kernel's size. For the kernels limbs-to-triton generates (one
element per thread, a 32-bit load per limb) it decides nothing: the sm_90a SASS
of a four-multiplication BN254 chain, of the MSM tree kernel and of the BN254
G1 addition is instruction-for-instruction the same with and without it, while
compile time falls by a large factor, most for the largest kernels (MNT4-753
multiplication, complete point additions). The NTT pass kernel (2-D tiles, shared memory) keeps the pass:
there it changes the code and costs little.

Only compilations inside a `skip_coalesce()` block (our own elementwise and
point-kernel launches, and the AOT worker) are affected; every other Triton
kernel in the process compiles as usual. ZKTENSOR_TRITON_COALESCE=1 keeps the
pass everywhere (Triton's cache does not know about the difference: clear
~/.triton/cache when comparing; read at import).
"""
from __future__ import annotations

import contextlib
import os
import threading

_KEEP_PASS = os.environ.get("ZKTENSOR_TRITON_COALESCE") == "1"     # read once: launches are hot
_state = threading.local()
_lock = threading.Lock()
_installed = False


def _install() -> None:
    """Wrap triton's add_coalesce once so that it consults this thread's flag."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
        try:
            from triton._C.libtriton import passes
            original = passes.ttgpuir.add_coalesce
        except (ImportError, AttributeError):   # a Triton without this pass: compile as it does
            return

        def add_coalesce(pm, *args, **kwargs):
            if getattr(_state, "depth", 0):
                return None
            return original(pm, *args, **kwargs)

        passes.ttgpuir.add_coalesce = add_coalesce


@contextlib.contextmanager
def skip_coalesce():
    """Kernels compiled (JIT or AOT) in this block skip TritonGPUCoalesce."""
    if _KEEP_PASS:
        yield
        return
    _install()
    _state.depth = getattr(_state, "depth", 0) + 1
    try:
        yield
    finally:
        _state.depth -= 1
