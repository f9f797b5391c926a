"""Importing generated Triton source, compiled for a GPU or under Triton's CPU interpreter.

Triton reads TRITON_INTERPRET when a kernel is decorated and when it runs, so both happen
inside `triton_mode`, one thread at a time.
"""
from __future__ import annotations

import contextlib
import importlib.util
import os
import threading
from pathlib import Path

_import_lock = threading.RLock()


@contextlib.contextmanager
def triton_mode(interpret: bool):
    """TRITON_INTERPRET as Triton reads it while decorating and running kernels."""
    with _import_lock:
        old = os.environ.get("TRITON_INTERPRET")
        os.environ["TRITON_INTERPRET"] = "1" if interpret else "0"
        try:
            yield
        finally:
            if old is None:
                del os.environ["TRITON_INTERPRET"]
            else:
                os.environ["TRITON_INTERPRET"] = old


def load_triton_module(path: str, interpret: bool):
    """Import generated Triton source; `interpret` picks the CPU interpreter."""
    with triton_mode(interpret):
        name = f"zktensor_gen_{Path(path).parent.name}_{'i' if interpret else 'c'}"
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    return mod
