"""Which LLVM modules Numba 0.68 lowers for a parfor, and what our capture records of them.

Run: ``nice python docs/design/parallel_spike/probe_lowering.py [OUTDIR]`` (from the
worktree). Compiles four ``parallel=True`` kernels, prints per kernel every module handed to
``CPUCodeLibrary.add_llvm_module`` (library name, functions it defines, the runtime symbols it
declares) and writes the raw module texts to OUTDIR (default /tmp/parallel_probe) to read.
"""
import os
import re
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..")))

import numpy as np
import numba
from numba import prange
from numba.core import codegen as nb_codegen

import enzyme_py.numba_bridge.capture as cap     # installs capture's recorder first

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/parallel_probe"
os.makedirs(OUT, exist_ok=True)
_seen = []
_recording = nb_codegen.CPUCodeLibrary.add_llvm_module


def _probe(self, ll_module):
    _seen.append((self, str(ll_module)))
    return _recording(self, ll_module)


nb_codegen.CPUCodeLibrary.add_llvm_module = _probe


@numba.njit(parallel=True)
def rowmap(x, out):                  # row-wise map, disjoint writes
    for i in prange(x.shape[0]):
        out[i] = np.sin(x[i]) * x[i]


@numba.njit(parallel=True)
def reduce_(x):                      # prange reduction
    s = 0.0
    for i in prange(x.shape[0]):
        s += np.exp(x[i])
    return s


@numba.njit(parallel=True)
def nested(x, out):                  # nested loops, prange outside
    n, m = x.shape
    for i in prange(n):
        acc = 0.0
        for j in range(m):
            acc += x[i, j] * x[i, j]
        out[i] = acc


@numba.njit(parallel=True)
def fused(x, y, w):                  # array expression, no prange
    return np.sum(np.exp(-x * y) * w)


RUNTIME = re.compile(r"declare [^@]*@\"?(numba_parallel_for|do_scheduling_\w+|get_num_threads|"
                     r"get_sched_size|allocate_sched|deallocate_sched|\w*chunksize|"
                     r"get_thread_id|set_num_threads|PyEval_\w+|PyGILState_\w+)\"?\(")
DEFINE = re.compile(r"^define [^@]*@\"?([^\"(]+)\"?\(", re.M)

x1 = np.linspace(0.1, 1.0, 64)
x2 = np.linspace(0.1, 1.0, 64 * 8).reshape(64, 8)
for name, fn, args in [("rowmap", rowmap, (x1, np.empty(64))), ("reduce", reduce_, (x1,)),
                       ("nested", nested, (x2, np.empty(64))),
                       ("fused", fused, (x1, x1[::-1].copy(), x1 * 2))]:
    start = len(_seen)
    fn(*args)
    print(f"== {name}: {len(_seen) - start} modules")
    for k, (lib, text) in enumerate(_seen[start:]):
        defined = DEFINE.findall(text)
        short = [d if len(d) < 70 else d[:67] + "..." for d in defined]
        recorded = cap._recorded(lib) is not None
        print(f"  [{k}] library {lib.name!r} recorded={recorded}: defines {short}")
        runtime = sorted(set(RUNTIME.findall(text)))
        if runtime:
            print(f"       declares {runtime}")
        with open(os.path.join(OUT, f"{name}_{k}.ll"), "w") as f:
            f.write(text)
    print("   value:", fn(*args) if name in ("reduce", "fused") else "ok")

# How many divisions Numba's scheduler makes (the derivative forces chunksize 0: ndiv ==
# num_threads, so one reduction slot per division fits Numba's np.empty(num_threads)).
import ctypes                                            # noqa: E402
import llvmlite.binding as ll                            # noqa: E402

sched_size = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_void_p,
                              ctypes.c_void_p)(ll.address_of_symbol("get_sched_size"))
set_chunk = ctypes.CFUNCTYPE(None, ctypes.c_uint64)(ll.address_of_symbol("set_parallel_chunksize"))
for chunk in (0, 10):
    set_chunk(chunk)
    for threads in (1, 2, 4):
        sizes = []
        for n in (1, 3, 1000, 10**6):
            starts, stops = np.array([0], np.int64), np.array([n - 1], np.int64)
            sizes.append(sched_size(threads, 1, starts.ctypes.data, stops.ctypes.data))
        print(f"get_sched_size, chunksize {chunk}, {threads} threads, n = 1, 3, 1000, 1e6: {sizes}")
set_chunk(0)
