"""``zktensor zkml compile model.pt2 --input input.json --out DIR``.

Reads a saved ``torch.export`` program and one input (JSON: a nested list of numbers, or
{"input": [...]}, with or without the leading batch dimension of 1), compiles the circuit
and writes into DIR: ``circuit.r1cs``, ``witness.wtns`` (for that input), ``output.json``
(the circuit's integer outputs, their float values, the output scale and, with private
weights, the commitment) and ``circuit.json`` (the options, shapes and sizes). Then
``zktensor setup``/``prove`` or snarkjs take it from there.

As the other commands: the outputs are checked before any work (exit 2: not writable, not a
directory, one of them is an input); the input JSON is read with the format layer's bounded
reader; every refusal is one line naming the file (exit 1); the four files are replaced as one
set (``groth16.outputs.write_outputs``), so a failure leaves the old ones.
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


OUTPUTS = ("circuit.r1cs", "witness.wtns", "output.json", "circuit.json")


def _load_input(path: str):
    """The input file as a float tensor: read by the format layer's hostile-JSON reader (size
    and nesting bounded, NaN/Infinity and oversized numbers refused), every problem one
    FormatError naming the file."""
    import torch
    from ..groth16.formats import FormatError
    from ..groth16.formats.json_io import read_json
    data = read_json(path)
    if isinstance(data, dict):
        if "input" not in data:
            raise FormatError(f"{path}: a JSON object must hold the input under \"input\"")
        data = data["input"]
    try:
        return torch.tensor(data, dtype=torch.float32)
    except (TypeError, ValueError, RuntimeError, OverflowError) as e:
        raise FormatError(f"{path}: the input is not a rectangular nested list of numbers ({e})") from None


def _load_program(path: str):
    """torch.export.load, its own warnings and tracebacks kept off stderr (a refusal is one line)."""
    import logging

    import torch
    log = logging.getLogger("torch.export")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        return torch.export.load(path)
    except Exception as e:      # torch raises many kinds for a file that is not a program
        raise ValueError(f"{path}: not a torch.export program ({type(e).__name__}: {e})") from None
    finally:
        log.setLevel(level)


def _output_paths(a: argparse.Namespace) -> list[str]:
    """The four outputs, checked before any work (``groth16.outputs``): the directory is made when
    missing; an output that cannot be written, or that is one of the inputs, is refused."""
    from ..groth16.outputs import OutputError, check_outputs
    if os.fspath(a.out) == "":
        raise OutputError("the output directory path is empty")
    if os.path.lexists(a.out) and not os.path.isdir(a.out):
        raise OutputError(f"{a.out}: exists and is not a directory")
    try:
        os.makedirs(a.out, exist_ok=True)
    except OSError as e:
        raise OutputError(f"{a.out}: cannot make the directory ({e.strerror or e})") from None
    return check_outputs([os.path.join(a.out, n) for n in OUTPUTS], inputs=[a.model, a.input])


def _run(a: argparse.Namespace) -> int:
    if a.zkml_command != "compile":
        _err("usage: zktensor zkml compile model.pt2 --input input.json --out DIR")
        return 2
    from ..groth16.outputs import OutputError, write_outputs
    try:
        paths = _output_paths(a)
    except OutputError as e:
        _err(str(e))
        return 2
    from ..groth16.formats import FormatError
    from .circuit import compile as zk_compile
    from .frontend import UnsupportedError
    from .gadgets import BoundError
    try:
        if not os.path.isfile(a.model):
            raise ValueError(f"{a.model}: no such file")
        x = _load_input(a.input)
        ep = _load_program(a.model)
        val = [n for n in ep.graph.nodes if n.op == "placeholder"][-1].meta.get("val")
        want = tuple(val.shape) if val is not None else None
        if want is not None and tuple(x.shape) == want[1:]:
            x = x.unsqueeze(0)
        if want is not None and tuple(x.shape) != want:
            raise ValueError(f"{a.input}: input of shape {list(x.shape)}, the program takes {list(want)}")
        c = zk_compile(ep, x, input_scale=a.input_scale, input_bits=a.input_bits, act_scale=a.act_scale,
                       weight_bits=a.weight_bits, input_visibility="private" if a.private_input else "public",
                       weights="private" if a.private_weights else "fixed")
        try:
            ints, floats = c.output(x)
        except (ValueError, TypeError) as e:
            raise ValueError(f"{a.input}: {e}") from None
        out = {"output": ints[0].tolist(), "float": floats[0].tolist(), "output_scale": c.qm.output_scale}
        if c.commitment is not None:
            out["commitment"] = str(c.commitment)
        info = {"constraints": c.num_constraints, "wires": c.num_wires, **c.counts,
                "input_shape": list(c.input_shape), "output_shape": list(c.output_shape),
                "options": vars(c.options)}
        # the four files change together: all new, or (on any failure) all as they were
        write_outputs(list(zip(paths, [c.r1cs_chunks(), c.witness_chunks(x), json.dumps(out, indent=1),
                                       json.dumps(info, indent=1)])))
    except OutputError as e:
        _err(str(e))
        return 2
    except (UnsupportedError, BoundError, FormatError, ValueError, TypeError, OSError) as e:
        _err(str(e))
        return 1
    print(f"wrote {a.out}/circuit.r1cs ({c.num_constraints} constraints, {c.num_wires} wires), witness.wtns, "
          f"output.json (output {ints[0].tolist()} at scale 2^{c.qm.output_scale})")
    return 0


register("zkml", "compile a PyTorch model (torch.export .pt2) to an R1CS circuit and witness", _args, _run)
