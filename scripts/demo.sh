#!/usr/bin/env bash
# Quickstart 1: set up, then prove and verify the bundled circuit (no network needed after setup, no node).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
exec .venv/bin/zktensor demo "$@"
