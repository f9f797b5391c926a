import re
from pathlib import Path

from setuptools import find_packages, setup

# One home for the version: zktensor/version.py (the tuning cache keys on it too).
VERSION = re.search(r'^__version__ = "([^"]+)"', (Path(__file__).parent / "zktensor" / "version.py").read_text(),
                    re.M)[1]

setup(
    name="zktensor",
    version=VERSION,
    description="A Groth16 prover written as a tensor compiler: limb tensors, MLIR passes, Triton and CPU kernels",
    long_description=(Path(__file__).parent / "README.md").read_text(),
    long_description_content_type="text/markdown",
    # zktensor._demo: the demo circuit's files (examples/demo), so that `zktensor demo` works
    # from an installed wheel as from a checkout
    packages=find_packages(include=["zktensor", "zktensor.*"]) + ["zktensor._demo"],
    package_dir={"zktensor._demo": "examples/demo"},
    # zktensor.serve: the native client's source, built by `python -m zktensor.serve.native install`
    package_data={"zktensor._demo": ["demo.circom", "demo.r1cs", "demo.wtns", "demo.zkey", "input.json",
                                     "public.json", "verification_key.json"],
                  "zktensor.serve": ["native_client.c"]},
    python_requires=">=3.10",
    # Lower bounds are the releases the project is tested with, where an older one is
    # known or likely to break it. Triton's upper bound: runtime/aot.py and
    # runtime/triton_passes.py use its compiler internals (ASTSource, GPUTarget, the
    # pass list), which change between minor releases. Its lower bound: the CPU tests run
    # the kernels under Triton's interpreter, whose tl.fma before 3.9 is numpy's x*y + z,
    # rounded twice, which breaks the fp64 strategy's exact product split (checked with
    # 3.6: the interpreted fp64 field tests fail). Compiled for a GPU, 3.6 runs the same
    # kernels right (bench/results/gpu/h200_2026-11-26.md). torch-mlir publishes dated
    # snapshots of the MLIR Python bindings (the IRDL dialect, the ExecutionEngine).
    install_requires=[
        "torch>=2.15",
        "triton>=3.9,<3.10",
        "numpy>=2.0",
        "sympy>=1.12",
        "torch-mlir>=20261001",
    ],
    extras_require={
        # scripts/test.sh runs pytest -n auto (pytest-xdist); ruff is its lint step
        "test": ["pytest>=8", "pytest-xdist>=3.2", "py_ecc>=8", "ruff>=0.6", "scikit-learn", "hypothesis>=6"],
        # bench/report.py's plots (Axes.set_yticks with labels: matplotlib 3.5)
        "bench": ["matplotlib>=3.5", "scikit-learn"],
    },
    entry_points={"console_scripts": ["zktensor=zktensor.cli:entry"]},
)
