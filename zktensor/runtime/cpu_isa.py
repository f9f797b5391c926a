"""What the host CPU offers the CPU target: vector lanes and AVX-512 IFMA.

`ZKTENSOR_CPU_LANES` (1, 4 or 8) and `ZKTENSOR_CPU_IFMA` (0/1) override the
detection, e.g. to test the scalar and the FMA-split vector paths on an IFMA
machine; `zt.config(lanes=..., ifma=...)` and the tuning cache may lower them to
what the CPU has (see `zktensor.config`).
"""
from __future__ import annotations

import functools
import platform

from ..config import env, tuned_value, user


@functools.lru_cache(maxsize=1)
def _flags() -> frozenset:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


@functools.lru_cache(maxsize=1)
def _hardware() -> tuple[int, bool]:
    """(vector lanes, IFMA) of this CPU (platform.machine() alone costs microseconds, and
    this is asked at every launch)."""
    flags = _flags()
    if platform.machine() not in ("x86_64", "AMD64"):
        return 1, False
    if "avx512f" in flags:
        return 8, "avx512ifma" in flags
    if "avx2" in flags:
        return 4, False
    return 1, False


@functools.lru_cache(maxsize=1)
def host_signature() -> str:
    """What the host's compiled code may assume, for the cache keys of every CPU kernel
    (`cache.entry_key`): LLVM compiles for the host CPU (its features, not only what
    `cpu_options` asks), so a cache copied to another CPU must not hand it code for
    instructions it lacks. The machine, lanes and IFMA, and a hash of all the CPU's flags."""
    import hashlib
    lanes, ifma = _hardware()
    flags = hashlib.sha256(" ".join(sorted(_flags())).encode()).hexdigest()[:12]
    return f"{platform.machine()}-lanes{lanes}" + ("-ifma" if ifma else "") + f"-{flags}"


def cpu_options(strategy: str) -> dict:
    """{"lanes", "ifma"} for a kernel of `strategy`: the hardware, lowered by the environment,
    the tuning cache and zt.config (asked at every launch: the answer is memoised on
    those inputs)."""
    return dict(_options(strategy, env("ZKTENSOR_CPU_LANES"), env("ZKTENSOR_CPU_IFMA"),
                         tuned_value("lanes"), tuned_value("ifma"), user("lanes"), user("ifma")))


@functools.lru_cache(maxsize=256)
def _options(strategy, env_lanes, env_ifma, tuned_lanes, tuned_ifma, user_lanes, user_ifma) -> dict:
    lanes, ifma = hw_lanes, hw_ifma = _hardware()
    lanes = int(env_lanes if env_lanes is not None else lanes)
    ifma = bool(int(env_ifma if env_ifma is not None else int(ifma)))
    # zt.config(lanes=, ifma=) over the environment over the tuning cache; only what the CPU has
    for v in ((tuned_lanes,) if env_lanes is None else ()) + (user_lanes,):
        if v is not None and int(v) in (1, 4, 8) and int(v) <= hw_lanes:
            lanes = int(v)
    for v in ((tuned_ifma,) if env_ifma is None else ()) + (user_ifma,):
        if v is not None:
            ifma = bool(v) and hw_ifma
    ifma = ifma and lanes == 8
    if strategy != "fp64":
        # int64: no 64x64->128 vector multiply. int32: 8-lane u32 products were
        # no faster than IFMA here and took LLVM minutes on 753-bit kernels.
        lanes = 1
    return {"lanes": lanes, "ifma": ifma and strategy == "fp64"}
