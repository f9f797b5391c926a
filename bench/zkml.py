"""zkML: a PyTorch model proved with zktensor, snarkjs and EZKL in the same run.

    python -m bench.zkml                                 # MLP 784-56-10 and LeNet-5 on 1x28x28
    python -m bench.zkml --models mlp --weights fixed --runs 3
    python -m bench.zkml --small                         # tiny shapes: a smoke test, not a record

Models (random weights, fixed seed): ``mlp`` = Linear 784-56 + ReLU + Linear 56-10 (issue
20's MNIST MLP shape); ``lenet`` = LeNet-5 on 1x28x28: Conv 6@5x5 (padding 2) + ReLU +
AvgPool 2, Conv 16@5x5 + ReLU + AvgPool 2, Linear 400-120-84-10 with ReLUs. Each with the
weights ``fixed`` (circuit constants) and ``private`` (witness values, Poseidon commitment);
the input public, 8 bits at scale 2^6, activations at 2^8 (``--small``: 64-16-10 and a
LeNet-shaped CNN on 1x12x12).

For every (model, weights), in one run on one machine:

* zktensor, in a child process (its peak RSS is the compile + witness figure): compile
  (torch.export to R1CS), witness, ``.r1cs`` and ``.wtns`` written; constraints and wires;
* ``zktensor setup`` as a process (development setup; time and peak RSS);
* zktensor proving: a resident ``groth16.Prover`` (``time_runs``, in a child process: resident
  key size and peak memory while proving), and ``zktensor prove`` as a process once (start-up,
  key load and proof: like snarkjs's CLI; peak RSS);
* snarkjs 0.7.6 ``groth16 prove`` on the same ``.zkey`` and ``.wtns`` as a process (time,
  peak RSS), and ``snarkjs groth16 verify`` of both systems' proofs;
* the predicted class of the proof's public outputs against float inference;
* EZKL (when ``import ezkl`` works): the same model exported to ONNX, its defaults (input and
  output public, parameters fixed, ``calibrate_settings`` for resources), the SRS made
  locally with ``ezkl.gen_srs``, then setup and prove, all in one child process (phase times
  and the child's peak RSS). EZKL's ``private`` analogue is not run.

Rows go to bench/results/zkml.json (+ .csv); ``extra`` holds constraints, sizes and peak
memory. The resident prove runs in a child process of its own, so its memory is measured too:
the resident key (RSS once the key is loaded) and the peak while proving (VmHWM reset after
the load, so it is the key plus the proofs' working memory; the helper process the prover
forks is not counted). The published circomlib-ml and EZKL figures (ZKML-Benchmark's tables,
and issue 20's EZKL figures, whose source was not found) are listed with their URLs in
``PUBLISHED`` and written into the results' notes, not measured here.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench.common import (REPO_ROOT, Timing, cpu_cores, machine_info, make_row, row_from_timing, time_runs,
                          write_results)

BUILD = REPO_ROOT / "bench" / "build" / "zkml"
NODE_TOOLS = Path(os.environ.get("ZKT_FIXTURES_BUILD", REPO_ROOT / "tests" / "fixtures" / "build"))
OPTIONS = dict(input_scale=6, input_bits=8, act_scale=8, weight_bits=8)

ZKML_BENCHMARK = "https://github.com/Guy1m0/ZKML-Benchmark/blob/a525e240b2100bf903561396cfc1aff88c404455"
PUBLISHED = [
    "circomlib-ml (keras2circom's circuits; weights and input are circuit inputs), MNIST MLP 784_56_10: 73,416 "
    "non-linear constraints, proving 2.35 s (std 0.15), 2,328 MB, trusted setup 690 s "
    f"(ZKML-Benchmark: {ZKML_BENCHMARK}/benchmarks/benchmark_results.csv, "
    f"{ZKML_BENCHMARK}/docs/benchmark_report.md, {ZKML_BENCHMARK}/frameworks/circomlib-ml/model_info.csv)",
    "circomlib-ml, CNN 28_6_16_10_5 (conv 6@5x5, avg pool, conv 16@5x5, avg pool, dense 10; no padding): "
    "2,558,720 non-linear constraints, proving 43.75 s, 18,685 MB, setup 24,107 s (6.7 h); "
    "LeNet-5 28_6_16_120_84_10_5: 2,703,268 constraints (the CSV says 22703268, the report 2,703,268), proving "
    "59.76 s, 19,438 MB, setup 24,230 s (ZKML-Benchmark, same files)",
    "EZKL, MNIST MLP 784_56_10 (ZKML-Benchmark, same files): resources mode proving 2.66 s, 223 MB, 4.96% "
    "accuracy loss; accuracy mode 38.0 s, 4,807 MB",
    "EZKL 23.0.5 on a 2-core VM: MLP 784-56-10 3.1 s prove, 0.34 GB, pk 138 MB; LeNet-5 on 1x28x28 51 s prove, "
    "5.0 GB, 45 s setup, 2^19 rows, pk 2.2 GB (figures quoted by issue 20, source not found; this bench "
    "measures EZKL itself in the same run)",
]


# -- models ---------------------------------------------------------------------------------


def make_model(name: str, small: bool):
    import torch
    from torch import nn
    torch.manual_seed(0)
    if name == "mlp":
        n_in, hidden = (64, 16) if small else (784, 56)
        return nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, 10)).eval(), (1, n_in)
    side = 12 if small else 28
    c1, c2, f1, f2 = (2, 4, 16, 12) if small else (6, 16, 120, 84)
    flat = c2 * ((side // 2 - 4) // 2) ** 2
    m = nn.Sequential(nn.Conv2d(1, c1, 5, padding=2), nn.ReLU(), nn.AvgPool2d(2),
                      nn.Conv2d(c1, c2, 5), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(),
                      nn.Linear(flat, f1), nn.ReLU(), nn.Linear(f1, f2), nn.ReLU(), nn.Linear(f2, 10))
    return m.eval(), (1, 1, side, side)


def example_input(shape):
    import torch
    g = torch.Generator().manual_seed(1)
    return torch.rand(shape, generator=g)            # in [0, 1): 8 signed bits at scale 2^6


# -- processes with their peak memory ---------------------------------------------------------


def _hwm(pid: int) -> int:
    """VmHWM (peak resident set) of a live process, in bytes; 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_child(cmd, timeout=7200):
    """(wall seconds, peak RSS bytes, exit code, output) of a child process. The peak is the
    child's VmHWM, polled until it exits (Linux carries ru_maxrss over fork and exec, so wait4's
    would report this parent's size for any smaller child); processes the child forks (the
    prover's helper) are not counted."""
    import tempfile
    with tempfile.TemporaryFile() as log:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + timeout
        peak = 0
        while True:
            peak = max(peak, _hwm(p.pid))
            pid, status, _ = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.time() > deadline:
                p.kill()
            time.sleep(0.005)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        return wall, peak, p.returncode, log.read().decode(errors="replace")


def gib(b) -> str:
    return f"{b / 2**30:.2f} GiB"


# -- the zktensor child: compile and witness ----------------------------------------------------


def child_compile(model: str, weights: str, small: bool, out: Path) -> None:
    import torch
    import zktensor.zkml as zkml
    m, shape = make_model(model, small)
    x = example_input(shape)
    t0 = time.perf_counter()
    c = zkml.compile(m, x, weights=weights, **OPTIONS)
    t1 = time.perf_counter()
    c.save_r1cs(out / "circuit.r1cs")
    t2 = time.perf_counter()
    words = c.witness_words(x)
    t3 = time.perf_counter()
    c.save_witness(x, out / "witness.wtns")
    c.check(words)
    ints, floats = c.output(x)
    with torch.no_grad():
        fl = m(x)
    info = dict(constraints=c.num_constraints, wires=c.num_wires, n_public=c.n_public, compile_s=t1 - t0,
                write_r1cs_s=t2 - t1, witness_s=t3 - t2, circuit_class=int(floats.argmax()),
                float_class=int(fl.argmax()), max_error=float((floats - fl.double()).abs().max()),
                output=ints.reshape(-1).tolist())
    (out / "info.json").write_text(json.dumps(info))


# -- the zktensor child: the resident prover --------------------------------------------------


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def child_prove(d: Path, runs: int) -> None:
    """Time the resident Prover on the circuit in ``d``; info.json gets the timing, the RSS once
    the key is loaded and the peak RSS while proving (VmHWM reset after the load)."""
    from zktensor.groth16.prover import Prover
    prover = Prover(str(d / "circuit.zkey"), r1cs=str(d / "circuit.r1cs"))
    resident = _status_kib("VmRSS")
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")                       # reset VmHWM: the peak from here on is the proofs'
    except OSError:
        pass
    timing = time_runs(lambda: prover.prove(str(d / "witness.wtns")), runs=runs)
    peak = _status_kib("VmHWM")
    proof, public = prover.prove(str(d / "witness.wtns"))
    prover.close()
    from zktensor.groth16.formats.json_io import proof_to_json
    (d / "prove.json").write_text(json.dumps(dict(timing=vars(timing), resident_rss=resident, peak_rss=peak,
                                                  proof=proof_to_json(proof), public=[str(v) for v in public])))


# -- EZKL -----------------------------------------------------------------------------------------

EZKL_CHILD = r"""
import asyncio, json, sys, time, inspect
import torch, ezkl
sys.path.insert(0, {root!r})
from bench.zkml import make_model, example_input
d = {dir!r}
m, shape = make_model({model!r}, {small!r})
x = example_input(shape)
torch.onnx.export(m, x, d + "/model.onnx", input_names=["input"], output_names=["output"], dynamo=False)
json.dump({{"input_data": [x.reshape(-1).tolist()]}}, open(d + "/input.json", "w"))
def call(f, *a, **k):
    r = f(*a, **k)
    return asyncio.run(r) if inspect.isawaitable(r) else r
times = {{}}
t = time.perf_counter()
args = ezkl.PyRunArgs()
args.input_visibility, args.output_visibility, args.param_visibility = "public", "public", "fixed"
call(ezkl.gen_settings, d + "/model.onnx", d + "/settings.json", py_run_args=args)
call(ezkl.calibrate_settings, d + "/input.json", d + "/model.onnx", d + "/settings.json", "resources")
call(ezkl.compile_circuit, d + "/model.onnx", d + "/model.ezkl", d + "/settings.json")
times["compile_s"] = time.perf_counter() - t
settings = json.load(open(d + "/settings.json"))
logrows = settings["run_args"]["logrows"]
t = time.perf_counter()
call(ezkl.gen_srs, d + "/kzg.srs", logrows)
times["srs_s"] = time.perf_counter() - t
t = time.perf_counter()
call(ezkl.gen_witness, d + "/input.json", d + "/model.ezkl", d + "/witness.json")
times["witness_s"] = time.perf_counter() - t
t = time.perf_counter()
call(ezkl.setup, d + "/model.ezkl", d + "/vk.key", d + "/pk.key", d + "/kzg.srs")
times["setup_s"] = time.perf_counter() - t
t = time.perf_counter()
call(ezkl.prove, witness=d + "/witness.json", model=d + "/model.ezkl", pk_path=d + "/pk.key",
     proof_path=d + "/proof.json", srs_path=d + "/kzg.srs")
times["prove_s"] = time.perf_counter() - t
ok = call(ezkl.verify, d + "/proof.json", d + "/settings.json", d + "/vk.key", d + "/kzg.srs")
times.update(logrows=logrows, verified=bool(ok), scale=settings["run_args"].get("input_scale"),
             version=getattr(ezkl, "__version__", ""))
import os
times["pk_bytes"] = os.path.getsize(d + "/pk.key")
print("EZKL_RESULT " + json.dumps(times))
"""


def run_ezkl(model: str, small: bool, d: Path, threads: int):
    try:
        import ezkl  # noqa: F401
    except ImportError:
        return None, "ezkl not importable (pip install ezkl)"
    d.mkdir(parents=True, exist_ok=True)
    code = EZKL_CHILD.format(root=str(REPO_ROOT), dir=str(d), model=model, small=small)
    wall, rss, rc, out = run_child([sys.executable, "-c", code])
    line = [ln for ln in out.splitlines() if ln.startswith("EZKL_RESULT ")]
    if rc or not line:
        return None, f"ezkl failed (exit {rc}): {out[-600:]}"
    res = json.loads(line[-1][len("EZKL_RESULT "):])
    res["peak_rss"] = rss
    return res, ""


# -- one configuration -------------------------------------------------------------------------


def bench_one(model: str, weights: str, small: bool, runs: int, rows: list, notes: list, ezkl_done: set):
    from zktensor.groth16.verifier import verify
    tag = f"{model}{'_small' if small else ''}_{weights}"
    d = BUILD / tag
    d.mkdir(parents=True, exist_ok=True)
    threads = cpu_cores()
    py = sys.executable
    label = f"{model} ({weights} weights)"

    wall, rss, rc, out = run_child([py, "-m", "bench.zkml", "--child", model, weights, str(d)] +
                                   (["--small"] if small else []))
    if rc:
        raise RuntimeError(f"{label}: compile child failed:\n{out[-3000:]}")
    info = json.loads((d / "info.json").read_text())
    n = info["constraints"]
    base = f"{n} constraints, {info['wires']} wires"
    print(f"{label}: {base}; compile {info['compile_s']:.2f} s, witness {info['witness_s'] * 1e3:.1f} ms, "
          f"peak {gib(rss)} (compile+witness process)")
    rows.append(make_row("zktensor", f"zkml_compile_{tag}", "bn254", n, threads, info["compile_s"],
                         info["compile_s"], runs=1, unit="constraints/s",
                         extra=f"{base}; peak RSS of compile+witness process {rss}"))
    rows.append(make_row("zktensor", f"zkml_witness_{tag}", "bn254", n, threads, info["witness_s"], info["witness_s"],
                         runs=1, unit="witnesses/s", extra=base))

    zkey, vk = d / "circuit.zkey", d / "circuit.vk.json"
    wall, rss, rc, out = run_child([py, "-m", "zktensor.cli", "setup", str(d / "circuit.r1cs"), str(zkey),
                                    "--vk", str(vk)])
    if rc:
        raise RuntimeError(f"{label}: zktensor setup failed:\n{out[-3000:]}")
    print(f"  zktensor setup {wall:.2f} s, peak {gib(rss)}")
    rows.append(make_row("zktensor", f"zkml_setup_{tag}", "bn254", n, threads, wall, wall, runs=1,
                         unit="setups/s", extra=f"{base}; zktensor setup process; peak RSS {rss}"))

    wall, rss, rc, out = run_child([py, "-m", "bench.zkml", "--child-prove", str(d), str(runs)])
    if rc:
        raise RuntimeError(f"{label}: resident prove child failed:\n{out[-3000:]}")
    res = json.loads((d / "prove.json").read_text())
    timing = Timing(**res["timing"])
    assert verify(str(vk), res["public"], res["proof"])
    mem = f"resident key RSS {res['resident_rss']}, peak RSS while proving {res['peak_rss']}"
    print(f"  zktensor prove (resident key) median {timing.median_s:.3f} s ({timing.extra}); {mem}")
    rows.append(row_from_timing("zktensor", f"zkml_prove_{tag}", "bn254", 1, threads, timing,
                                extra=f"{base}; resident Prover, witness check and verification included; {mem}",
                                unit="proofs/s"))

    zp, zpub = d / "proof_zktensor.json", d / "public_zktensor.json"
    wall, rss, rc, out = run_child([py, "-m", "zktensor.cli", "prove", str(zkey), str(d / "witness.wtns"),
                                    str(zp), str(zpub)])
    if rc:
        raise RuntimeError(f"{label}: zktensor prove failed:\n{out[-3000:]}")
    print(f"  zktensor prove CLI {wall:.2f} s, peak {gib(rss)}")
    rows.append(make_row("zktensor", f"zkml_prove_cli_{tag}", "bn254", 1, threads, wall, wall, runs=1,
                         unit="proofs/s", extra=f"{base}; zktensor prove process (start-up, key load); peak RSS {rss}"))

    cli = NODE_TOOLS / "node_modules" / "snarkjs" / "build" / "cli.cjs"
    if cli.is_file():
        sp, spub = d / "proof_snarkjs.json", d / "public_snarkjs.json"
        wall, rss, rc, out = run_child(["node", str(cli), "groth16", "prove", str(zkey), str(d / "witness.wtns"),
                                        str(sp), str(spub)])
        if rc:
            raise RuntimeError(f"{label}: snarkjs prove failed:\n{out[-3000:]}")
        oks = [subprocess.run(["node", str(cli), "groth16", "verify", str(vk), str(pub), str(pr)],
                              capture_output=True).returncode == 0 for pr, pub in ((zp, zpub), (sp, spub))]
        print(f"  snarkjs prove {wall:.2f} s, peak {gib(rss)}; snarkjs verifies zktensor's proof: {oks[0]}, "
              f"its own: {oks[1]}")
        rows.append(make_row("snarkjs", f"zkml_prove_cli_{tag}", "bn254", 1, threads, wall, wall, runs=1,
                             unit="proofs/s", version="0.7.6",
                             extra=f"{base}; same zkey and wtns; peak RSS {rss}; verifies zktensor's proof: {oks[0]}"))
    else:
        notes.append(f"{label}: snarkjs not found at {cli}: not run")

    same = info["circuit_class"] == info["float_class"]
    notes.append(f"{label}: circuit class {info['circuit_class']}, float class {info['float_class']} "
                 f"({'same' if same else 'DIFFERENT'}), largest output error {info['max_error']:.4g}")

    if weights == "fixed" and model not in ezkl_done:
        ezkl_done.add(model)
        res, why = run_ezkl(model, small, d / "ezkl", threads)
        if res is None:
            notes.append(f"{label}: EZKL not run: {why}")
            print(f"  EZKL not run: {why[:200]}")
        else:
            ex = (f"logrows {res['logrows']}, pk {res['pk_bytes']} bytes, peak RSS of the whole pipeline "
                  f"{res['peak_rss']}, verified {res['verified']}")
            print(f"  EZKL {res.get('version', '')}: setup {res['setup_s']:.2f} s, prove {res['prove_s']:.2f} s, "
                  f"{ex}")
            for ph in ("compile", "witness", "setup", "prove"):
                unit = "proofs/s" if ph == "prove" else f"{ph}s/s"
                rows.append(make_row("ezkl", f"zkml_{ph}_{tag}", "bn254", 1, threads, res[f"{ph}_s"], res[f"{ph}_s"],
                                     runs=1, unit=unit, version=str(res.get("version", "")), extra=ex))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="zkML benchmark: zktensor, snarkjs and EZKL on the same models")
    p.add_argument("--models", nargs="+", default=["mlp", "lenet"], choices=["mlp", "lenet"])
    p.add_argument("--weights", nargs="+", default=["fixed", "private"], choices=["fixed", "private"])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--small", action="store_true", help="tiny shapes (a smoke test; results go to zkml_small)")
    p.add_argument("--name", default=None, help="results file name (default: zkml, or zkml_small with --small): "
                   "a run of some models keeps the full run's file")
    p.add_argument("--child", nargs=3, metavar=("MODEL", "WEIGHTS", "DIR"), help=argparse.SUPPRESS)
    p.add_argument("--child-prove", nargs=2, metavar=("DIR", "RUNS"), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child_prove:
        child_prove(Path(a.child_prove[0]), int(a.child_prove[1]))
        return 0
    if a.child:
        child_compile(a.child[0], a.child[1], a.small, Path(a.child[2]))
        return 0
    rows, notes, ezkl_done = [], list(PUBLISHED), set()
    for model in a.models:
        for weights in a.weights:
            bench_one(model, weights, a.small, a.runs, rows, notes, ezkl_done)
    name = a.name or ("zkml_small" if a.small else "zkml")
    path = write_results(name, rows, machine_info(), notes="\n".join(notes))
    print("\n".join(notes))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
