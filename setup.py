from setuptools import find_packages, setup

setup(
    name="zktensor",
    version="0.1.0",
    description="A Groth16 prover written as a tensor compiler: limb tensors, MLIR passes, Triton and CPU kernels",
    packages=find_packages(include=["zktensor", "zktensor.*"]),
    python_requires=">=3.10",
    install_requires=[
        "torch",
        "triton",
        "numpy",
        "sympy",
        "torch-mlir",
    ],
    extras_require={
        "test": ["pytest", "pytest-xdist>=3.2", "py_ecc"],
        "bench": ["matplotlib"],
    },
    entry_points={"console_scripts": ["zktensor=zktensor.cli:main"]},
)
