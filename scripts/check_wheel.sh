#!/usr/bin/env bash
# Build zktensor's wheel, install it (not editable) into a fresh virtual environment,
# import every module from the install and run `zktensor demo` there, outside the
# checkout, so that a module or a data file missing from the wheel fails here and not
# on a user's machine. Run by scripts/test.sh after setup_env.sh.
#
# The fresh environment takes its dependencies from the project's .venv instead of
# PyPI (pip install --no-deps; .venv's site-packages appended to its path): torch and
# its CUDA libraries are ~10 GB, and what is checked here is our package.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="$ROOT/.venv/bin/python"
[ -x "$PY" ] || { echo "[wheel] no $PY: run scripts/setup_env.sh first" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/zktensor-wheel.XXXXXX")"
trap 'rm -rf "$work"' EXIT
log() { printf '[wheel %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

log "building the wheel"
# From a copy of the source files (git's view: tracked, or new and not ignored): setuptools
# builds in the source directory, and a module deleted since an earlier build would
# still be in its build/ and so in the wheel.
mkdir "$work/src"
if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard \
        | xargs -0 -I{} sh -c 'test ! -e "$1" || echo "$1"' _ {} | tar -cf - -T -) | tar -xf - -C "$work/src"
else
    (cd "$ROOT" && tar -cf - --exclude=./.venv --exclude=./build --exclude='*.egg-info' .) | tar -xf - -C "$work/src"
fi
# --no-build-isolation: build with .venv's setuptools rather than a downloaded one
"$PY" -m pip wheel --quiet --no-deps --no-build-isolation --wheel-dir "$work/dist" "$work/src"
wheel=("$work"/dist/zktensor-*.whl)

log "installing $(basename "${wheel[0]}") into a fresh environment"
# --without-pip: .venv's pip installs into it (pip --python), which saves making a pip here
"$PY" -m venv --system-site-packages --without-pip "$work/env"
env_py="$work/env/bin/python"
# .venv's packages after the fresh environment's own, so that the wheel's zktensor wins
# over .venv's editable one (a path line in a .pth file is added as it is; the .pth
# files inside .venv's site-packages, the editable hook among them, are not run)
own_site="$("$env_py" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
"$PY" -c 'import sysconfig; print(sysconfig.get_path("purelib"))' > "$own_site/zktensor-deps.pth"
"$PY" -m pip --python "$env_py" install --quiet --no-deps --no-index "${wheel[0]}"

# Every module of the source tree, by name: each must come from the install.
modules="$(cd "$ROOT" && find zktensor -name '*.py' ! -path '*/__pycache__/*' | sort \
           | sed -e 's|/__init__\.py$||' -e 's|\.py$||' -e 's|/|.|g')"
cd "$work"            # not the checkout: its zktensor/ must not shadow the install
log "importing $(wc -l <<<"$modules") modules from the install"
ZKT_MODULES="$modules" ZKT_ENV="$work/env" "$env_py" - <<'EOF'
import importlib
import os
import sys

env = os.path.realpath(os.environ["ZKT_ENV"])
bad = []
for name in os.environ["ZKT_MODULES"].split():
    try:
        mod = importlib.import_module(name)
    except Exception as e:  # noqa: BLE001 - report every failure, then fail
        bad.append(f"{name}: {type(e).__name__}: {e}")
        continue
    where = os.path.realpath(getattr(mod, "__file__", "") or "")
    if not where.startswith(env + os.sep):
        bad.append(f"{name}: imported from {where or '?'}, not from the installed wheel")
if bad:
    sys.exit("[wheel] modules that do not import from the wheel:\n  " + "\n  ".join(bad))
EOF

log "zktensor demo from the install"
"$work/env/bin/zktensor" demo --out "$work/demo"
# the native client's source is package data: built from the install where a compiler is
if "$env_py" -c 'import sys; from zktensor.serve.native import compiler; sys.exit(compiler() is None)'; then
    log "the native client from the install"
    "$env_py" -m zktensor.serve.native install
    "$work/env/bin/zktensor" demo --out "$work/demo"       # handed to the Python command
fi
log "ok"
