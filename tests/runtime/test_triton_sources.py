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
