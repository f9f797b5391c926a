#!/usr/bin/env bash
# The GPU path on a machine with a CUDA GPU and without the MLIR bindings (a lent GPU machine).
#
#   scripts/gpu.sh --pack                here, before: pre-build the Triton source (the GPU tests'
#                                        and benchmarks' kernels, a proof of one fixture per curve)
#                                        and copy the test fixtures into .gpu-fixtures/ (ignored)
#   scripts/gpu.sh OUTDIR [STEP ...]     there. STEP: env warmup tests-pass tests tests-ops
#                                        tests-proofs compile compile-warmup msm profile accumulate
#                                        ntt groth16:K (2^K constraints); default: env compile-warmup
#                                        tests-pass tests msm profile ntt groth16:16 groth16:18
#
# Name .gpu-fixtures in the device tool's `carry`: it holds the fixtures, the pre-built source
# (prebuilt.tar.xz, unpacked there) and, once a call has brought it back, Triton's cache.
# A cold call is compile-bound (bench/results/gpu/h200_2026-11-26.md): a process compiles
# the kernels it launches one after another. So the warmup step (`zktensor warmup --device
# cuda`) and the msm and ntt steps first run a compile pass: the same work in GPU_SHARDS
# (the cores) processes at once, each compiling its share (runtime/compile_shards.py).
# And every call ends by packing Triton's cache into OUTDIR (triton-cache.tar.xz, in 15 MiB
# parts); copy those files into .gpu-fixtures/ here and the next call starts warm.
#
# A lent machine is given back 30 s after a call ends, and a later call starts a fresh one
# (cold caches, minutes of device time): put every step of a session into one call.
#
# Results and a log go to OUTDIR (gpu.log, one file per step), packed at the end into
# OUTDIR/gpu-results.tar.gz (the device tool returns 8 files); benchmark results also go to
# bench/results/gpu/, saved after every row. Each step runs under `timeout` (SIGINT, so
# pytest still reports), GPU_STEP_SECONDS (540) each. Other knobs: GPU_JOBS (the cores) pytest
# workers compile and run tests/gpu at once (Triton compiles a kernel on one core);
# GPU_TEST_SECONDS (300) bounds one test; GPU_TESTS_K is a pytest -k filter; GPU_STRATEGIES
# (int32,fp64) are the arithmetic strategies the msm and ntt steps time (msm_<strategy>.json);
# GPU_MSM_CURVES, GPU_MSM_SIZES, GPU_PROFILE_SIZES, GPU_NTT_SIZES; GPU_WEIGHTED (1) also times
# and profiles the device MSM on weighted tables (MSMConfig.weighted: no window combination),
# GPU_MIXED (1) each on affine bases (MSMConfig.mixed: mixed additions in the first
# accumulation round), GPU_LAYOUTS (word,point) each with the device program's point arrays
# word-major and point-major (MSMConfig.point_major); GPU_PROFILE_VARIANTS names the profiles
# instead (e.g. "plain plain-pm weighted-mixed-pm"); ZKTENSOR_STRATEGY picks the proofs' strategy (default fp64 on an
# H100/H200: runtime.target.gpu_default);
# GPU_ACC_CAPS (0,168,128) and GPU_ACC_BLOCKS (64) are the register caps and BLOCKs of the
# accumulate step (bench/gpu_accumulate.py; 0: the default cap);
# GPU_PACK_CACHE=0 leaves Triton's cache unpacked (a session's last call). No node there:
# bench.groth16 writes its circuits from Python (bench/pycircuits.py), makes their keys with
# zktensor's setup on the GPU and records why the snarkjs/rapidsnark rows are missing.
set -u -o pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
    if [ -x .venv/bin/python ] && .venv/bin/python -c "import torch" 2>/dev/null; then PY=.venv/bin/python; else PY=python3; fi
fi

if [ "${1:-}" = "--pack" ]; then
    set -e
    src="${ZKT_FIXTURES_BUILD:-tests/fixtures/build}"
    # a proof's own programs (QAP, witness check, the device graph's blinding and sums, the
    # chunked uploads) depend on the curve, not the circuit: one fixture per curve
    proofs=""
    for f in multiplier multiplier_bls; do
        [ -f "$src/$f/circuit_final.zkey" ] && proofs="$proofs${proofs:+,}$src/$f"
    done
    [ -n "$proofs" ] || echo "gpu.sh: no fixture built (scripts/fixtures.sh): the proofs' own kernels are not pre-built"
    "$PY" -m zktensor.prebuild ${proofs:+--proofs "$proofs"} --setup --warmup
    # the pack must hold every Triton entry tests/gpu launches (too slow for CI with cold
    # caches: it builds a pack of its own)
    ZKTENSOR_CHECK_PACK=1 "$PY" -m pytest -q -p no:cacheprovider \
        tests/field/test_prebuild.py::test_pack_covers_the_gpu_tests
    # (a Triton cache brought back from a device call stays: triton-cache.tar.xz*)
    mkdir -p .gpu-fixtures
    find .gpu-fixtures -mindepth 1 -maxdepth 1 ! -name 'triton-cache.tar.xz*' -exec rm -rf {} +
    while read -r name source prime; do
        case "$name" in ''|'#'*) continue ;; esac
        [ -f "$src/$name/circuit_final.zkey" ] || { echo "gpu.sh: fixture $name not built (scripts/fixtures.sh)"; continue; }
        mkdir -p ".gpu-fixtures/$name"
        cp "$src/$name/circuit_final.zkey" "$src/$name/witness.wtns" "$src/$name/$source.r1cs" \
           "$src/$name/public.json" "$src/$name/verification_key.json" ".gpu-fixtures/$name/"
    done < tests/circuits/fixtures.txt
    # the generated source is ~100 MB of Python, past the 64 MiB a device call carries: it
    # travels compressed (xz: ~6 MB) inside .gpu-fixtures and is unpacked there
    "$PY" - <<'PYEOF'
import tarfile
with tarfile.open(".gpu-fixtures/prebuilt.tar.xz", "w:xz") as t:
    t.add(".zktensor-prebuilt")
PYEOF
    du -sh .zktensor-prebuilt .gpu-fixtures .gpu-fixtures/prebuilt.tar.xz
    exit 0
fi

OUT="${1:?usage: scripts/gpu.sh OUTDIR [env|warmup|tests-ops|tests-proofs|compile|msm|profile|accumulate|ntt|groth16:K ...] | scripts/gpu.sh --pack}"
shift
STEPS="${*:-env compile-warmup tests-pass tests msm profile ntt groth16:16 groth16:18}"
LIMIT="${GPU_STEP_SECONDS:-540}"
# GPU_TOTAL_SECONDS: the whole call's budget (a device call is cut at 10 minutes): every step's
# limit shrinks to what is left of it less a reserve for packing the results, and a step
# with under a minute left is skipped
TOTAL="${GPU_TOTAL_SECONDS:-0}"
RESERVE=45
mkdir -p "$OUT"
LOG="$OUT/gpu.log"
export PYTHONUNBUFFERED=1
export ZKTENSOR_NO_COMPILER=1                 # never reach for MLIR: a missing kernel is an error that says so
[ -d .gpu-fixtures ] && export ZKT_FIXTURES_BUILD="$ROOT/.gpu-fixtures"
export ZKTENSOR_CACHE_DIR="${ZKTENSOR_CACHE_DIR:-/tmp/zktensor-gpu-cache}"
# Triton's compiled kernels, packed into $OUT at the end (the header says why); its entries
# are keyed by source, Triton and GPU, so a carried cache never serves a stale kernel
export TRITON_CACHE_DIR="${TRITON_CACHE_DIR:-/tmp/zktensor-gpu-triton}"
mkdir -p "$TRITON_CACHE_DIR"

GPU_STRATEGIES="${GPU_STRATEGIES:-int32,fp64}"
XDIST=(-n "${GPU_JOBS:-$(nproc)}" --dist worksteal)
"$PY" -c "import xdist" 2>/dev/null || XDIST=()
TEST_TIMEOUT=(--timeout "${GPU_TEST_SECONDS:-300}")
"$PY" -c "import pytest_timeout" 2>/dev/null || TEST_TIMEOUT=()
GPU_PYTEST=("$PY" -m pytest -v --tb=short -rfEs --durations=0 -p no:cacheprovider -m gpu "${XDIST[@]}" "${TEST_TIMEOUT[@]}")

say() { echo "[gpu.sh $(date +%H:%M:%S)] $*" | tee -a "$LOG"; }
cubins() { find "$TRITON_CACHE_DIR" -name '*.cubin' | wc -l; }

compile_pass() {   # name, command...: the command in GPU_SHARDS processes at once, each compiling
    # its share of the kernels into Triton's cache (runtime/compile_shards.py), so that the
    # measured run that follows compiles nothing; what they print is meaningless and kept apart
    local name="$1"; shift
    local n="${GPU_SHARDS:-$(nproc)}" t0=$SECONDS before k lim
    lim=$(limit)
    [ "$n" -gt 1 ] && [ "$lim" != 0 ] || return 0
    before=$(cubins)
    claims=$(mktemp -d)       # first come, first compiled: a process busy compiling claims nothing more
    say "compile pass $name: $n processes: $*"
    for k in $(seq 0 $((n - 1))); do
        ZKTENSOR_COMPILE_SHARD="$k/$n" ZKTENSOR_COMPILE_CLAIMS="$claims" \
            timeout -s INT -k 20 "$lim" "$@" > "$OUT/pass-$name-$k.txt" 2>&1 &
    done
    wait
    rm -rf "$claims"
    say "compile pass $name: $(( $(cubins) - before )) kernels compiled in $((SECONDS - t0)) s"
}

limit() {      # this step's seconds: LIMIT, or what GPU_TOTAL_SECONDS leaves (0: skip it)
    local left=$(( TOTAL - SECONDS - RESERVE ))
    if [ "$TOTAL" -le 0 ]; then echo "$LIMIT"
    elif [ "$left" -lt 60 ]; then echo 0
    elif [ "$left" -lt "$LIMIT" ]; then echo "$left"
    else echo "$LIMIT"; fi
}

run_step() {   # name, command...
    local name="$1"; shift
    local lim; lim=$(limit)
    if [ "$lim" = 0 ]; then say "step $name: skipped (GPU_TOTAL_SECONDS=$TOTAL spent)"; return 0; fi
    say "step $name: $*"
    local t0=$SECONDS
    # SIGINT first: pytest then prints its summary and writes its junit file
    timeout -s INT -k 20 "$lim" "$@" 2>&1 | tee "$OUT/$name.txt" >> "$LOG"
    local rc=${PIPESTATUS[0]}
    say "step $name: exit $rc after $((SECONDS - t0)) s$([ "$rc" = 124 ] && echo " (stopped at ${lim} s)")"
    mkdir -p "$OUT/results"
    cp bench/results/gpu/*.json "$OUT/results/" 2>/dev/null || true
    return 0
}

if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    say "no CUDA GPU here: nothing to run"
    exit 1
fi
if [ ! -f .zktensor-prebuilt/manifest.json ] && [ -f .gpu-fixtures/prebuilt.tar.xz ]; then
    say "unpacking .gpu-fixtures/prebuilt.tar.xz"
    "$PY" - <<'PYEOF'
import tarfile
with tarfile.open(".gpu-fixtures/prebuilt.tar.xz") as t:
    t.extractall(".", **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
PYEOF
fi
if [ -z "$(ls -A "$TRITON_CACHE_DIR")" ] && ls .gpu-fixtures/triton-cache.tar.xz* >/dev/null 2>&1; then
    say "unpacking .gpu-fixtures/triton-cache.tar.xz* into $TRITON_CACHE_DIR"
    cat .gpu-fixtures/triton-cache.tar.xz* | tar -xJ -C "$TRITON_CACHE_DIR" || say "warning: the Triton cache did not unpack"
fi
[ -f .zktensor-prebuilt/manifest.json ] || say "warning: no .zktensor-prebuilt/ (run scripts/gpu.sh --pack here first and carry .gpu-fixtures)"

for step in $STEPS; do
    case "$step" in
    env)
        run_step env bash -c "nvidia-smi; $PY -c 'import sys, torch, triton; print(sys.version); print(\"torch\", torch.__version__, \"triton\", triton.__version__, torch.cuda.get_device_name(0))'; $PY -c 'import torch_mlir' 2>&1 | tail -1; cat .zktensor-prebuilt/manifest.json 2>/dev/null | head -c 600" ;;
    warmup)
        # every kernel of a GPU proof compiled by Triton once, with progress (kept for the later steps)
        run_step warmup "$PY" -m zktensor.cli warmup --device cuda --curves "${GPU_WARMUP_CURVES:-bn254,bls12_381}" --force ;;
    tests)          # all of tests/gpu, GPU_JOBS workers compiling at once
        run_step tests "${GPU_PYTEST[@]}" ${GPU_TESTS_K:+-k "$GPU_TESTS_K"} --junitxml="$OUT/gpu-tests.xml" tests/gpu ;;
    tests-pass)     # the compile pass for tests/gpu: every test in each of GPU_SHARDS processes
        # (their verdicts mean nothing there), so that the tests steps after it compile nothing
        compile_pass tests "$PY" -m pytest -q -p no:cacheprovider -m gpu ${GPU_TESTS_K:+-k "$GPU_TESTS_K"} tests/gpu ;;
    tests-ops)      # field, NTT and MSM against Python-int oracles
        run_step tests-ops "${GPU_PYTEST[@]}" -k "not groth16${GPU_TESTS_K:+ and ($GPU_TESTS_K)}" --junitxml="$OUT/gpu-tests-ops.xml" tests/gpu ;;
    tests-proofs)   # whole proofs: verified, no host read inside the graph, keys past the device in chunks
        run_step tests-proofs "${GPU_PYTEST[@]}" -k "groth16${GPU_TESTS_K:+ and ($GPU_TESTS_K)}" --junitxml="$OUT/gpu-tests-proofs.xml" tests/gpu ;;
    compile)
        # a user's first BN254 proof with Triton's cache cold: the wait for its kernels
        run_step compile env TRITON_CACHE_DIR="$(mktemp -d)" "$PY" -m bench.gpu_first_proof --json "$OUT/first_proof.json" ;;
    compile-warmup)
        # the same with `zktensor warmup --device cuda` first: its compile pass on every core.
        # First in a call, Triton's cache is still cold, and what it compiles serves the later steps
        cold="$TRITON_CACHE_DIR"; [ -z "$(ls -A "$cold")" ] || cold="$(mktemp -d)"
        run_step compile-warmup env TRITON_CACHE_DIR="$cold" "$PY" -m bench.gpu_first_proof --warmup \
            --json "$OUT/first_proof_warmup.json" ;;
    msm)
        for s in ${GPU_STRATEGIES//,/ }; do
            msm=(env ZKTENSOR_STRATEGY="$s" "$PY" -m bench.msm --device cuda --keep-going
                 --curves "${GPU_MSM_CURVES:-bn254.g1,bn254.g2,bls12_381.g1,bls12_381.g2}"
                 --log-sizes "${GPU_MSM_SIZES:-16,18,20,22}" --kinds dense
                 $([ "${GPU_WEIGHTED:-1}" = 1 ] && echo --weighted) $([ "${GPU_MIXED:-1}" = 1 ] && echo --mixed)
                 --layouts "${GPU_LAYOUTS:-word,point}")
            # (the pass at the first size only: the sizes launch nearly the same specializations,
            # bench/results/gpu/h200_2026-11-26b.md, and a pass costs about what the run does;
            # GPU_PASS_SIZES overrides; a kernel it misses is compiled by the run, outside its
            # timed runs)
            sizes="${GPU_MSM_SIZES:-16,18,20,22}"
            compile_pass "msm-$s" "${msm[@]}" --log-sizes "${GPU_PASS_SIZES:-${sizes%%,*}}" \
                --runs 1 --no-save
            run_step "msm-$s" "${msm[@]}" --runs 5 --save "msm_$s"
        done ;;
    profile)        # which kernels make up a device MSM's time (bench/gpu_profile.py)
        for s in ${GPU_STRATEGIES//,/ }; do
            base="plain $([ "${GPU_WEIGHTED:-1}" = 1 ] && echo weighted)"
            [ "${GPU_MIXED:-1}" = 1 ] && base="$base $(for v in $base; do echo "$v-mixed"; done)"
            vs=""               # each in every layout of GPU_LAYOUTS (point-major: "-pm")
            for lay in $(echo "${GPU_LAYOUTS:-word,point}" | tr , ' '); do
                for v in $base; do vs="$vs $v$([ "$lay" = point ] && echo -pm)"; done
            done
            vs="${GPU_PROFILE_VARIANTS:-$vs}"
            for v in $vs; do
                run_step "profile-$s-$v" env ZKTENSOR_STRATEGY="$s" "$PY" -m bench.gpu_profile --device cuda \
                    --group bn254.g1 --log-sizes "${GPU_PROFILE_SIZES:-16,20}" --json "$OUT/profile_${s}_$v.json" \
                    $(case "$v" in weighted*) echo --weighted ;; esac) $(case "$v" in *mixed*) echo --mixed ;; esac) \
                    $(case "$v" in *-pm) echo --point-major ;; esac)
            done
        done ;;
    accumulate)     # the accumulation kernel alone on synthetic rounds, by access pattern, cap and
                    # BLOCK (bench/gpu_accumulate.py): gathers, latency or arithmetic
        for s in ${GPU_STRATEGIES//,/ }; do
            for m in "" $([ "${GPU_MIXED:-1}" = 1 ] && echo --mixed); do
                run_step "accumulate-$s${m:+-mixed}" env ZKTENSOR_STRATEGY="$s" "$PY" -m bench.gpu_accumulate \
                    --group bn254.g1 --caps "${GPU_ACC_CAPS:-0,168,128}" --blocks "${GPU_ACC_BLOCKS:-64}" \
                    --json "$OUT/accumulate_${s}${m:+_mixed}.json" $m
            done
        done ;;
    ntt)
        for s in ${GPU_STRATEGIES//,/ }; do
            ntt=(env ZKTENSOR_STRATEGY="$s" "$PY" -m bench.ntt --device cuda
                 --log-sizes "${GPU_NTT_SIZES:-16,18,20,22,24}" --no-peers --quiet-wait 0)
            sizes="${GPU_NTT_SIZES:-16,18,20,22,24}"
            compile_pass "ntt-$s" "${ntt[@]}" --log-sizes "${GPU_PASS_SIZES:-${sizes%%,*}}" \
                --runs 1 --no-save
            run_step "ntt-$s" "${ntt[@]}" --save "ntt_$s"
        done ;;
    groth16:*)
        # one size a step: the circuit from Python, its key from zktensor's setup on the GPU
        # (cached in bench/build/groth16/ for a later call), the resident prover timed
        run_step "groth16-${step#groth16:}" "$PY" -m bench.groth16 --device cuda --cli-runs 0 --circuits bench \
            --sizes "${step#groth16:}" --quiet-wait 2 ;;
    *)
        say "unknown step $step (env warmup tests-pass tests tests-ops tests-proofs compile compile-warmup msm profile ntt groth16:K)" ;;
    esac
done
mkdir -p "$OUT/results"
cp bench/results/gpu/*.json "$OUT/results/" 2>/dev/null || true
# what each compile-pass process of `zktensor warmup --device cuda` printed: the calls it
# stopped early, which point at the kernels the pass missed
[ -d "$ZKTENSOR_CACHE_DIR/warmup-logs" ] && cp -r "$ZKTENSOR_CACHE_DIR/warmup-logs" "$OUT/"
# the device tool brings back at most 8 files of 16 MiB (64 MiB in all): everything but
# Triton's cache goes into one archive, and the cache comes only in parts that fit beside it
say "done: $STEPS"
rm -f "$OUT"/triton-cache.tar.xz*
pack_cache() {
    tar -C "$TRITON_CACHE_DIR" -cf - . | xz -T0 -6 > "$OUT/triton-cache.tar.xz"
    split -b 15M -d "$OUT/triton-cache.tar.xz" "$OUT/triton-cache.tar.xz." && rm "$OUT/triton-cache.tar.xz"
    local parts; parts=$(ls "$OUT"/triton-cache.tar.xz.* | wc -l)
    if [ "$parts" -gt 3 ]; then
        say "Triton cache: $(ls "$TRITON_CACHE_DIR" | wc -l) entries, $(du -sh "$TRITON_CACHE_DIR" | cut -f1): $parts parts of 15 MiB, more than come back; not packed"
        rm -f "$OUT"/triton-cache.tar.xz.*
    else
        say "Triton cache: $(ls "$TRITON_CACHE_DIR" | wc -l) entries in $parts file(s) (copy them into .gpu-fixtures/ for the next call)"
    fi
}
if [ "${GPU_PACK_CACHE:-1}" = 0 ]; then      # (the session's last call: no later call to carry it to)
    say "Triton cache: $(ls "$TRITON_CACHE_DIR" | wc -l) entries, not packed (GPU_PACK_CACHE=0)"
else
    pack_cache
fi
tar -C "$OUT" -czf "$OUT/../gpu-results.tar.gz" --exclude 'triton-cache.tar.xz*' . \
    && find "$OUT" -mindepth 1 ! -name 'triton-cache.tar.xz*' -delete && mv "$OUT/../gpu-results.tar.gz" "$OUT/"
