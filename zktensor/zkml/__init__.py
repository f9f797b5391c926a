"""zkML: a PyTorch model to an R1CS circuit, its witness and a Groth16 proof.

    import zktensor as zt
    cal = zt.zkml.calibrate(model, data)                   # scales, and accuracy against float
    circuit = zt.zkml.compile(model, data[:1], **cal.options)
    circuit.save_r1cs("model.r1cs"); circuit.save_witness(x, "model.wtns")   # snarkjs reads both
    circuit.setup("model.zkey")                             # or snarkjs groth16 setup
    proof, public = circuit.prove(x, "model.zkey")
    zt.zkml.verify("model.vk.json", public, proof, circuit=circuit)

Modules, in the order a model goes through them: ``frontend`` (torch.export to a layer
graph, BatchNorm folded, unsupported operators refused), ``quant`` (power-of-two fixed
point, calibration), ``lc`` (tensors of linear combinations, the constraint system),
``gadgets`` (rescale with fused ReLU, range checks, max), ``private``, ``products`` and
``poseidon`` (private weights, their products and their commitment), ``circuit`` (building,
witness, files, proofs),
``reference`` (the integer and float oracles).
"""
import importlib

_LAZY = {
    "compile": ("circuit", "compile"),
    "verify": ("circuit", "verify"),
    "Circuit": ("circuit", "Circuit"),
    "calibrate": ("quant", "calibrate"),
    "UnsupportedError": ("frontend", "UnsupportedError"),
    "BoundError": ("gadgets", "BoundError"),
    "poseidon": ("poseidon", "poseidon"),
}


def __getattr__(name):
    if name in _LAZY:
        mod, attr = _LAZY[name]
        return getattr(importlib.import_module(f".{mod}", __name__), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = list(_LAZY)
