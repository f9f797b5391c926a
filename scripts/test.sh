#!/usr/bin/env bash
# Quickstart 2: set up, then check and test everything: ruff (pyflakes rules, ruff.toml),
# the wheel (scripts/check_wheel.sh: installs, imports, runs the demo), then the whole
# test suite (installs circom2/snarkjs from npm for the interop tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
bash scripts/fixtures.sh
.venv/bin/python -m ruff check .
bash scripts/check_wheel.sh
exec .venv/bin/python -m pytest -q -p no:cacheprovider -n auto --dist worksteal --durations=25 "$@"
