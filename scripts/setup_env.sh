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
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e ".[test,bench]"
  touch "$stamp"
fi
