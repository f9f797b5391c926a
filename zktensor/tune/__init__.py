"""Kernel autotuning with a persisted cache.

    zktensor autotune --ops mul,ntt,msm --fields bn254 --sizes 2^12,2^16 --budget 600

or from Python:

    from zktensor import tune
    results = tune.autotune(ops=["ntt"], fields=["bn254.fr"], sizes=[1 << 12], budget=60)
    tune.lookup("ntt", "bn254.fr", 4096)          # the winner the ops will now use

Every candidate configuration is checked against a trusted reference before it is
measured (`workloads`), winners are kept in the cache (`cache`: ~/.cache/zktensor/tune.json,
or $ZKTENSOR_TUNE_CACHE) keyed by device, field, op, size bucket and zktensor version,
and `zktensor.config` hands them to the ops (`zt.ntt`, `zt.msm`, `msm_prepare`, the
elementwise ops, the Groth16 prover) where the caller and `zt.config(...)` say nothing;
`costmodel` supplies defaults where the cache has no entry.

Ops: `mul` (elementwise multiplication: strategy, CPU lanes/IFMA, Triton launch),
`ntt`, `msm` (bases as given), `msm_prepared` (bases from `msm_prepare`, GZKP
checkpoints), and `groth16`, which stands for the prover's share of them: a batch of
3 coset NTTs (key `ntt.b4`) and prepared G1 MSMs of the circuit's sizes (`--zkey`
reads them from a proving key).
"""
import importlib

# name -> the module that defines it; the search (tuner, workloads, search) loads on first use,
# so that the ops, which read the cache (`cache`, `resolve`, `costmodel`), do not import it
_LAZY = {
    "autotune": "search", "plan": "search", "targets": "search", "lookup": "search", "groth16_tasks": "search",
    "OPS": "search", "DEFAULT_OPS": "search", "DEFAULT_FIELDS": "search", "DEFAULT_SIZES": "search",
    "Tuner": "tuner", "Result": "tuner",
    "Task": "workloads", "Workload": "workloads", "WORKLOADS": "workloads", "TrustedPathError": "workloads",
    "TuneCache": "cache", "TuneCacheWarning": "cache", "cache_path": "cache", "default_cache": "cache",
    "device_name": "cache", "bucket": "cache", "op_key": "cache",
}


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{mod}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = sorted(_LAZY)
