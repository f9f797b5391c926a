"""The compile pass's partition (runtime/compile_shards.py): every kernel has one owner, and
a process skips (and zeroes the arguments of) exactly the launches it does not own. The
launches themselves need a GPU: tests/gpu/test_gpu_compile_pass.py runs a sharded pass there."""
import os
import subprocess
import sys
from collections import Counter

import pytest

from zktensor.runtime import compile_shards as cs


def test_parse():
    assert cs.parse("3/16") == (3, 16)
    for bad in ("16/16", "-1/4", "a/b", "3", "1/0"):
        with pytest.raises(ValueError, match="ZKTENSOR_COMPILE_SHARD"):
            cs.parse(bad)


def test_every_kernel_has_one_owner_and_the_shares_are_even():
    keys = [(f"zktensor_gen_{i % 7}_c:kernel_{i}", f"(('*i32', 'D'), {i})") for i in range(1600)]
    owners = [cs.owner(name, key, 16) for name, key in keys]
    assert all(0 <= o < 16 for o in owners)
    counts = Counter(owners)
    assert len(counts) == 16 and min(counts.values()) > 60 and max(counts.values()) < 140
    # the same answer in another process (no per-process hash salt)
    code = ("from zktensor.runtime import compile_shards as cs; import sys; "
            f"print([cs.owner(n, k, 16) for n, k in {keys[:50]!r}])")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONHASHSEED="123"), check=True).stdout
    assert other.strip() == str(owners[:50])


HOOK = r"""
import types, torch
from triton import knobs
from triton.runtime.jit import JITFunction
from zktensor.runtime import compile_shards as cs
import zktensor.runtime.triton_modules            # installs from the environment
assert cs.active() and cs._installed == (1, 4)
hook = knobs.runtime.jit_cache_hook
key = "(('*i32', 'D'),){}"
names = [f"kernel_{i}" for i in range(40)]
mine = [n for n in names if cs.owner(f"m:{n}", key, 4) == 1]
assert 0 < len(mine) < len(names)
for n in names:
    t, s = torch.arange(1, 9), torch.arange(1, 5)
    cs._local.args = (t, 3, s)
    skip = hook(key=key, repr=n, fn=types.SimpleNamespace(module="m", name=n), compile={},
                is_manual_warmup=False, already_compiled=False)
    assert skip == (n not in mine), n
    assert bool((t == 0).all()) == skip and bool((s == 0).all()) == skip
assert cs.compiled == mine and len(cs.skipped) == len(names) - len(mine)
assert JITFunction.run.__name__ == "run_remembering_args"
print("ok")
"""


def test_the_hook_skips_and_zeroes_what_another_shard_owns():
    out = subprocess.run([sys.executable, "-c", HOOK], capture_output=True, text=True,
                         env=dict(os.environ, ZKTENSOR_COMPILE_SHARD="1/4"))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"


def test_no_environment_no_hook():
    code = ("import zktensor.runtime.triton_modules; from zktensor.runtime import compile_shards as cs; "
            "from triton import knobs; print(cs.active(), knobs.runtime.jit_cache_hook)")
    env = {k: v for k, v in os.environ.items() if k != cs.ENV}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["False", "None"]


CLAIMING = r"""
import sys, types, torch
from triton import knobs
from zktensor.runtime import compile_shards as cs
import zktensor.runtime.triton_modules            # installs from the environment
hook = knobs.runtime.jit_cache_hook
key = "(('*i32', 'D'),){}"
skipped = []
for n in range(int(sys.argv[1])):
    t = torch.arange(1, 9)
    cs._local.args = (t, 3)
    skip = hook(key=key, repr=str(n), fn=types.SimpleNamespace(module="m", name=f"kernel_{n}"), compile={},
                is_manual_warmup=False, already_compiled=False)
    assert bool((t == 0).all()) == skip
    skipped.append(skip)
print("".join("s" if s else "c" for s in skipped))
"""


def test_with_a_claims_folder_the_first_process_to_reach_a_kernel_compiles_it(tmp_path):
    def shard(k, kernels):
        env = dict(os.environ, ZKTENSOR_COMPILE_SHARD=f"{k}/2", ZKTENSOR_COMPILE_CLAIMS=str(tmp_path))
        out = subprocess.run([sys.executable, "-c", CLAIMING, str(kernels)], capture_output=True, text=True, env=env)
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout.strip()
    # shard 1 reaches the first 20 kernels first (whatever their hash), shard 0 then finds them claimed
    assert shard(1, 20) == "c" * 20
    assert shard(0, 30) == "s" * 20 + "c" * 10
    assert len(list(tmp_path.iterdir())) == 30


def test_a_claims_folder_that_does_not_exist_is_refused(tmp_path):
    env = dict(os.environ, ZKTENSOR_COMPILE_SHARD="0/2", ZKTENSOR_COMPILE_CLAIMS=str(tmp_path / "none"))
    out = subprocess.run([sys.executable, "-c", "import zktensor.runtime.triton_modules"], capture_output=True,
                         text=True, env=env)
    assert out.returncode != 0 and "ZKTENSOR_COMPILE_CLAIMS" in out.stderr
