"""Synthetic results for the report/writer tests (no peers, no GPU)."""

import functools

from bench.common import make_row as _make_row

#: Every synthetic row says it was measured undisturbed, as time_runs and the peers write it.
CLEAN = "clean 5/5 runs"
make_row = functools.partial(_make_row, extra=CLEAN)

CPU_MACHINE = {
    "date": "2026-11-21T10:00:00+00:00",
    "hostname": "testbox",
    "cpu_model": "Test CPU",
    "cpu_cores": 2,
    "cpu_flags": ["avx2", "avx512ifma"],
    "memory_bytes": 8 * 2**30,
    "git_commit": "0123456789abcdef",
    "git_dirty": False,
    "gpu": None,
}

GPU_MACHINE = dict(CPU_MACHINE, hostname="gpubox", cpu_cores=16,
                   gpu={"name": "Test GPU", "capability": "9.0", "memory_bytes": 80 * 2**30})


def peer_rows():
    rows = []
    for sysname, ver, scale in (("gnark-crypto", "v0.22.0", 1.0), ("arkworks", "0.6", 1.6)):
        rows.append(make_row(sysname, "fr_mul_chain", "bn254", 20_000_000, 1, 0.34 * scale, 0.335 * scale, version=ver))
        rows.append(make_row(sysname, "fr_mul_array", "bn254", 20_480_000, 1, 0.30 * scale, 0.29 * scale, version=ver))
        for lg in (12, 16, 18, 20):
            n = 1 << lg
            rows.append(make_row(sysname, "g1_msm", "bn254", n, 2, 2.4e-6 * n * scale, 2.3e-6 * n * scale, version=ver))
        rows.append(make_row(sysname, "g1_msm", "bn254", 1 << 16, 1, 0.30 * scale, 0.29 * scale, version=ver))
        rows.append(make_row(sysname, "g1_msm", "bls12-381", 1 << 16, 2, 0.24 * scale, 0.23 * scale, version=ver))
    rows.append(make_row("gnark-crypto", "fr_mul_vector", "bn254", 20_480_000, 1, 0.168, 0.167, version="v0.22.0"))
    for lg in (16, 20):
        n = 1 << lg
        rows.append(make_row("gnark-crypto", "fr_fft_dif", "bn254", n, 2, 4e-8 * n, 3.9e-8 * n, version="v0.22.0"))
        rows.append(make_row("gnark-crypto", "fr_fft_dif_bitrev", "bn254", n, 2, 9e-8 * n, 8.9e-8 * n, version="v0.22.0"))
        rows.append(make_row("arkworks", "fr_fft_in_place", "bn254", n, 2, 2.8e-7 * n, 2.7e-7 * n, version="0.6"))
    return rows


def zk_cpu_rows():
    rows = [make_row("zktensor", "fr_mul_array", "bn254", 1 << 20, 1, 0.02, 0.019, strategy="ifma52")]
    for lg in (16, 18, 20):
        n = 1 << lg
        rows.append(make_row("zktensor", "g1_msm", "bn254", n, 2, 3.0e-6 * n, 2.9e-6 * n, strategy="pippenger"))
        rows.append(make_row("zktensor", "fr_fft", "bn254", n, 2, 1.2e-7 * n, 1.1e-7 * n, strategy="radix4"))
    return rows


def zk_gpu_rows():
    return [
        make_row("zktensor", "g1_msm", "bn254", 1 << lg, 1, 1e-7 * (1 << lg), 1e-7 * (1 << lg),
                 strategy="triton", target="cuda")
        for lg in (16, 20)
    ]
