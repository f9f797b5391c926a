#!/usr/bin/env bash
# Quickstart 2: set up, then run the whole test suite (installs circom2/snarkjs from npm for the interop tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
bash scripts/fixtures.sh
exec .venv/bin/python -m pytest -q -p no:cacheprovider -n auto --dist worksteal --durations=25 "$@"
