from setuptools import find_packages, setup

setup(
    name="enzyme_py",
    version="0.1.0",
    description="Automatic differentiation of Numba-compiled Python at the LLVM-IR level",
    packages=find_packages(include=["enzyme_py", "enzyme_py.*", "ir_passes", "ir_passes.*"]),
    python_requires=">=3.10",
    install_requires=[
        # The IR text format changes across LLVM versions: numba 0.68 / llvmlite 0.50 = LLVM 22.
        "numba>=0.68,<0.69",
        "llvmlite>=0.50,<0.51",
        "numpy>=1.24",
    ],
    extras_require={"test": ["pytest>=7", "pytest-xdist>=3", "filecheck>=1.0", "hypothesis>=6",
                             "scipy>=1.10",  # scipy: Numba needs it for np.dot (BLAS)
                             "jax>=0.4.30"],  # tests of enzyme_py.jax
                    # enzyme_py.jax / enzyme_py.torch (PyTorch's tests skip without it)
                    "jax": ["jax>=0.4.30"], "torch": ["torch>=2.1"],
                    # examples/benchmarks/bench_kernels.py: the ours/JAX column and its chart
                    "bench": ["jax>=0.4.30", "matplotlib>=3.7"]},
    entry_points={"console_scripts": ["enzyme-py=enzyme_py.cli:main"]},
)
