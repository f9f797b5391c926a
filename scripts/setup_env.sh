#!/usr/bin/env bash
# Create (once) the project's virtual environment in .venv and install zktensor into it.
# Needs only python3 (3.10+); everything else comes from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv" >&2
  python3 -m venv .venv
fi
stamp=.venv/.zktensor-installed
if [ ! -f "$stamp" ] || [ setup.py -nt "$stamp" ]; then
  echo "[setup] installing zktensor and its dependencies (torch, triton, torch-mlir, ...): first run takes minutes" >&2
  # --no-cache-dir: torch's CUDA libraries are ~4 GB of wheels; a cached copy of them would double
  # what the install leaves on disk.
  pip_install() { .venv/bin/python -m pip install --quiet --no-cache-dir "$@"; }
  # editable_mode=compat puts the checkout on sys.path by a plain .pth line, as a regular install
  # does for site-packages; the default mode's import finder is imported by every Python start-up
  # (`zktensor prove`'s thin client included). The checkout's other top-level folders
  # (bench, tests) become importable in the venv too, as they are from the checkout's root.
  # setuptools calls compat transitional: where it is refused, the default mode.
  editable() {
    pip_install -e ".[test,bench]" --config-settings editable_mode=compat 2>/dev/null ||
      pip_install -e ".[test,bench]"
  }
  if ! { pip_install --upgrade pip && editable; }; then
    free=$(df -Pk . | awk 'NR==2 {printf "%.1f", $4 / 1048576}')
    echo "[setup] pip install failed; ${free} GB are free here, and the install needs about 10 GB" >&2
    exit 1
  fi
  touch "$stamp"
fi
# Byte-compile the package (editable: its sources are here) so that no start-up compiles them.
# Python writes the .pyc files itself on first import, except where PYTHONDONTWRITEBYTECODE is
# set or the tree is read-only; there every `zktensor prove` compiled its modules again.
# Up-to-date files are skipped, so this is quick after the first run.
.venv/bin/python -m compileall -q -j 0 zktensor >/dev/null || echo "[setup] byte-compiling zktensor failed" >&2
# `zktensor prove` through a running service without Python's start-up: the native client
# (zktensor/serve/native_client.c), built with this machine's C compiler; without one,
# `zktensor` stays pip's Python command, which does the same work after Python has started.
.venv/bin/python -m zktensor.serve.native install 2>&1 | sed 's/^/[setup] /' >&2 ||
  echo "[setup] the native client was not installed: zktensor prove uses the Python client" >&2
# the kernels a Groth16 proof needs, compiled once (a stamp in the kernel cache makes later runs instant)
if [ "${ZKTENSOR_SKIP_WARMUP:-0}" != 1 ]; then
  .venv/bin/python -m zktensor.cli warmup || echo "[setup] zktensor warmup failed: kernels compile on first use instead" >&2
fi
