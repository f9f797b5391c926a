"""``zktensor zkml compile model.pt2 --input input.json --out DIR``.

Reads a saved ``torch.export`` program and one input (JSON: a nested list of numbers, or
{"input": [...]}, with or without the leading batch dimension of 1), compiles the circuit
and writes into DIR: ``circuit.r1cs``, ``witness.wtns`` (for that input), ``output.json``
(the circuit's integer outputs, their float values, the output scale and, with private
weights, the commitment) and ``circuit.json`` (the options, shapes and sizes). Then
``zktensor setup``/``prove`` or snarkjs take it from there.
"""
from __future__ import annotations

import argparse
import json
import os

from ..cli import _err, register


def _args(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="zkml_command", metavar="command")
    c = sub.add_parser("compile", help="a torch.export program (.pt2) and an input -> .r1cs, .wtns, outputs")
    c.add_argument("model", help="a program saved by torch.export.save (.pt2)")
    c.add_argument("--input", required=True, help="JSON: the input as a nested list (or {\"input\": [...]})")
    c.add_argument("--out", required=True, metavar="DIR", help="directory for circuit.r1cs, witness.wtns, ...")
    c.add_argument("--input-scale", type=int, default=4, help="input fixed point: x·2^s (default 4)")
    c.add_argument("--input-bits", type=int, default=8, help="signed bits of a quantised input (default 8)")
    c.add_argument("--act-scale", type=int, default=8, help="activations' fixed point 2^s (default 8)")
    c.add_argument("--weight-bits", type=int, default=8, help="signed bits of a quantised weight (default 8)")
    c.add_argument("--private-input", action="store_true", help="the input is a private (range-checked) signal")
    c.add_argument("--private-weights", action="store_true",
                   help="weights are private signals with a Poseidon commitment as a public output")


def _load_input(path: str):
    import torch
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: cannot read the input JSON ({e})") from None
    if isinstance(data, dict):
        if "input" not in data:
            raise ValueError(f"{path}: a JSON object must hold the input under \"input\"")
        data = data["input"]
    try:
        return torch.tensor(data, dtype=torch.float32)
    except (TypeError, ValueError, RuntimeError) as e:
        raise ValueError(f"{path}: the input is not a rectangular nested list of numbers ({e})") from None


def _run(a: argparse.Namespace) -> int:
    if a.zkml_command != "compile":
        _err("usage: zktensor zkml compile model.pt2 --input input.json --out DIR")
        return 2
    import torch
    from .circuit import compile as zk_compile
    from .frontend import UnsupportedError
    from .gadgets import BoundError
    try:
        if not os.path.isfile(a.model):
            raise ValueError(f"{a.model}: no such file")
        try:
            ep = torch.export.load(a.model)
        except Exception as e:      # torch raises many kinds for a file that is not a program
            raise ValueError(f"{a.model}: not a torch.export program ({type(e).__name__}: {e})") from None
        x = _load_input(a.input)
        val = [n for n in ep.graph.nodes if n.op == "placeholder"][-1].meta.get("val")
        want = tuple(val.shape) if val is not None else None
        if want is not None and tuple(x.shape) == want[1:]:
            x = x.unsqueeze(0)
        if want is not None and tuple(x.shape) != want:
            raise ValueError(f"{a.input}: input of shape {list(x.shape)}, the program takes {list(want)}")
        c = zk_compile(ep, x, input_scale=a.input_scale, input_bits=a.input_bits, act_scale=a.act_scale,
                       weight_bits=a.weight_bits, input_visibility="private" if a.private_input else "public",
                       weights="private" if a.private_weights else "fixed")
        os.makedirs(a.out, exist_ok=True)
        c.save_r1cs(os.path.join(a.out, "circuit.r1cs"))
        c.save_witness(x, os.path.join(a.out, "witness.wtns"))
        ints, floats = c.output(x)
        out = {"output": ints[0].tolist(), "float": floats[0].tolist(), "output_scale": c.qm.output_scale}
        if c.commitment is not None:
            out["commitment"] = str(c.commitment)
        with open(os.path.join(a.out, "output.json"), "w") as f:
            json.dump(out, f, indent=1)
        info = {"constraints": c.num_constraints, "wires": c.num_wires, **c.counts,
                "input_shape": list(c.input_shape), "output_shape": list(c.output_shape),
                "options": vars(c.options)}
        with open(os.path.join(a.out, "circuit.json"), "w") as f:
            json.dump(info, f, indent=1)
    except (UnsupportedError, BoundError, ValueError, TypeError, OSError) as e:
        _err(str(e))
        return 1
    print(f"wrote {a.out}/circuit.r1cs ({c.num_constraints} constraints, {c.num_wires} wires), witness.wtns, "
          f"output.json (output {ints[0].tolist()} at scale 2^{c.qm.output_scale})")
    return 0


register("zkml", "compile a PyTorch model (torch.export .pt2) to an R1CS circuit and witness", _args, _run)
