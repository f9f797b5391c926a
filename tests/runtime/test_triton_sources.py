"""`runtime.triton_modules.source_blocks`: the source Triton's `@jit` reads for each function
of a generated module, without tokenizing it, equal to `inspect.getsourcelines` for every
function of every kind of module the generators write (elementwise field and point
programs, the point tile kernels, the NTT, the sparse products, the device MSM)."""
import inspect

import pytest

import zktensor as zt
from zktensor.ir.program import trace
from zktensor.kernels import msm_device, msm_ec, msm_triton, ntt_triton, sparse_device
from zktensor.kernels import point_formulas as pts_mod
from zktensor.kernels.elementwise import get_program
from zktensor.runtime import triton_modules


def _modules(strategy):
    F = zt.field("bn254.fr")
    prog = get_program(trace(lambda a, b: a * b - a.square(), F.params, 2), strategy, "triton")
    G = zt.group("bn254.g1")
    point = get_program(msm_ec.program(G.params, "neg", ("xyzz",), pts_mod.f_neg), strategy, "triton")
    return {"elementwise": prog.triton_module(False), "point tile": msm_triton.module(point, False),
            "ntt": ntt_triton.module(F.params, strategy, False), "sparse": sparse_device.module(F.params, strategy, False),
            "device msm": msm_device.module(G, strategy, "cuda", interpret=False)}


@pytest.mark.parametrize("strategy", ["int32", "fp64"])
def test_blocks_are_inspects(strategy):
    real = inspect.getsourcelines
    checked = 0
    for kind, mod in _modules(strategy).items():
        assert inspect.getsourcelines is real, f"{kind}: inspect left patched"
        fns = [f.fn for f in vars(mod).values() if hasattr(f, "fn") and hasattr(f.fn, "__code__")]
        assert fns, kind
        blocks = triton_modules.source_blocks(fns[0].__code__.co_filename)
        with open(fns[0].__code__.co_filename, "rb") as f:      # as the import reads it
            assert triton_modules.source_blocks("", f.read().decode()) == blocks, kind
        for fn in fns:
            assert blocks[fn.__code__.co_firstlineno] == inspect.getsourcelines(fn), (kind, fn.__name__)
            checked += 1
    assert checked >= 20


def test_other_objects_go_to_inspect(tmp_path):
    """Inside the patch, a function of another file is inspect's own answer."""
    path = tmp_path / "kernels.py"
    path.write_text("import math\n\n\n@staticmethod\ndef f(x):\n    # a comment\n\n    return x\n# after\n\n\ndef g():\n    pass\n")
    blocks = triton_modules.source_blocks(str(path))
    assert blocks == {4: (["@staticmethod\n", "def f(x):\n", "    # a comment\n", "\n", "    return x\n"], 4),
                      12: (["def g():\n", "    pass\n"], 12)}
    with triton_modules._sources_from(str(path)):
        assert inspect.getsourcelines(test_other_objects_go_to_inspect)[1] > 1


def _jit_functions(mod):
    """Each @jit function of a module once (HEADER's fma_rd_2p104 also has an alias)."""
    fns = {id(f): f for f in vars(mod).values() if hasattr(f, "fn") and hasattr(f, "hash")
           and getattr(f.fn, "__code__", None) is not None}
    return list(fns.values())


@pytest.mark.parametrize("strategy", ["int32", "fp64"])
def test_triton_walk_accepts_every_kind(strategy):
    """What `preset_cache_keys` skips, Triton's dependency walk, still accepts every function
    of every kind of generated module (it refuses a call to a plain Python function: so a
    compiled fp64 kernel's fma_rd_2p104 is the device function), and finds no global value
    that a kernel reads: the file's text is all that the key needs."""
    for kind, mod in _modules(strategy).items():
        fns = _jit_functions(mod)
        assert fns, kind
        preset = {f: f.hash for f in fns}
        try:
            for f in fns:
                f.hash = None
            for f in fns:
                assert len(f.cache_key) == 64, (kind, f.fn.__name__)
                assert not f.used_global_vals, (kind, f.fn.__name__, list(f.used_global_vals))
        finally:
            for f, h in preset.items():
                f.hash, f.used_global_vals = h, {}


def test_preset_keys_follow_the_text(tmp_path):
    """Compiled modules come with their keys: one per function, and all new when the text
    changes anywhere (a callee's formula is part of its callers' keys)."""
    mod = _modules("int32")["sparse"]
    fns = _jit_functions(mod)
    keys = [f.hash for f in fns]
    assert None not in keys and len(set(keys)) == len(keys)
    path = fns[0].fn.__code__.co_filename
    text = open(path).read()
    changed = tmp_path / "kernels.py"
    changed.write_text(text + "\n# one more line\n")
    same = tmp_path / "same" / "kernels.py"
    same.parent.mkdir()
    same.write_text(text)
    again = triton_modules.load_triton_module(str(same), interpret=False)
    other = triton_modules.load_triton_module(str(changed), interpret=False)
    assert [f.hash for f in _jit_functions(again)] == keys
    assert not set(f.hash for f in _jit_functions(other)) & set(keys)
    interpreted = [f for f in vars(triton_modules.load_triton_module(str(same), interpret=True)).values()
                   if hasattr(f, "fn")]
    assert interpreted and all(getattr(f, "hash", None) is None for f in interpreted)
