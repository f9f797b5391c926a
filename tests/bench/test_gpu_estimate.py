"""bench/gpu_estimate.py: the per-pipe issue model (an estimate's arithmetic, no GPU)."""
import json

import pytest

from bench import gpu_estimate


def test_busiest_pipe_or_issue_bounds_a_multiplication():
    # 64 DFMA and 64 IADD3 run side by side (1 clock each) but need 128 issues: 1 clock
    c = gpu_estimate.pipe_cycles({"DFMA": 64, "IADD3": 64})
    assert c["FP64"] == c["ALU"] == c["issue"] == 1.0
    # 32 conversions on the 16-lane XU outlast 64 issues
    c = gpu_estimate.pipe_cycles({"I2F": 32, "LOP3": 32})
    assert c["XU"] == 2.0 and c["ALU"] == 0.5 and c["issue"] == 0.5
    assert max(c, key=c.get) == "XU"
    # IMAD goes to the FMA pipe, not the ALU; uniform ops and NOPs only take issue slots
    c = gpu_estimate.pipe_cycles({"IMAD": 128, "UMOV": 64, "NOP": 64})
    assert c["FMA"] == 2.0 and c["ALU"] == 0 and c["issue"] == 2.0
    # a per-mul difference may hold a negative count: no pipe goes below zero
    c = gpu_estimate.pipe_cycles({"DADD": 64, "CS2R": -2})
    assert c["ALU"] == 0 and c["FP64"] == 1.0
    assert gpu_estimate.seconds_per_mul({"DFMA": 64}) == pytest.approx(1 / (132 * 1.98e9))


def test_cli_names_the_busiest_pipe(tmp_path):
    sass = tmp_path / "sass.json"
    sass.write_text(json.dumps([{"field": "bn254.fq", "strategy": "fp64", "arch": "sm_90a",
                                 "per_mul_sass": {"DFMA": 100, "DADD": 50, "IADD3": 130,
                                                  "IMAD": 60, "I2F": 10}}]))
    out = tmp_path / "est"
    assert gpu_estimate.main([str(sass), "--out", str(out)]) == 0
    doc = json.loads(out.with_suffix(".json").read_text())
    assert {r["limit"] for r in doc["rows"]} == {"issue"}            # 350 issues / 128 > 150 / 64 > 130 / 64
    assert "ESTIMATE" in out.with_suffix(".md").read_text()
