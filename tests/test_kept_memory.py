"""Memory kept between calls (API.md; issue 11, item 2): a reverse derivative keeps its tape,
its temporaries and their shadows (forward derivatives their temporaries and shadows,
tests/test_kept_memory_forward.py), so that after a first call with given sizes a call
allocates nothing, through Numba's runtime or libc, from Python or from `@njit` code; calls
from several threads stay correct; `df.release()` frees what is kept."""
import functools
import json
import os
import pathlib
import shutil
import subprocess
import sys
import threading

import numba
import numpy as np
import pytest

from enzyme_py import derive_diff
from tests.support.allocation_probe import CALLS, CASES, residual_cubes, with_temporary
from tests.support.nrt_stats import frees_by
from tests.support.paths import ROOT

# One worker runs the whole module: the probe subprocess (a fresh Numba compiling its
# derivatives, slow on a loaded machine) runs once.
pytestmark = pytest.mark.xdist_group(name="kept-memory")


def gradient(x, A, b):
    """Of both kernels: sum (A x - b)^3."""
    return 3.0 * A.T @ (A @ x - b) ** 2


@functools.cache
def derivative(fn):
    return derive_diff(fn, None, ("dup", "const", "const"))


@functools.cache
def repeated(fn):
    """`@njit(nogil=True)`: `n` calls into `dx` (zeroed before each)."""
    d = derivative(fn)

    @numba.njit(nogil=True)
    def run(x, dx, A, b, n):
        for _ in range(n):
            dx[:] = 0.0
            d(x, dx, A, b)
    return run


def problem(seed: int, rows: int):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(4), rng.standard_normal((rows, 4)), rng.standard_normal(rows)


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    """Allocations per call measured in a subprocess counting libc's allocations."""
    cc = next(filter(None, map(shutil.which, ("cc", "gcc", "clang-22"))), None)
    if cc is None:      # .ci/run installs clang-22, so CI always runs these tests
        pytest.skip("no C compiler (cc, gcc, clang-22) to build the libc allocation counter")
    counter = tmp_path_factory.mktemp("malloc") / "malloc_counter.so"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(counter),
                    str(pathlib.Path(ROOT, "tests", "support", "malloc_counter.c"))],
                   check=True)
    env = dict(os.environ, LD_PRELOAD=str(counter), PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-m", "tests.support.allocation_probe"], env=env,
                         cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", list(CASES))
def test_no_allocation_per_call_in_steady_state(probed, case):
    """From Python (beyond what Numba costs to pass the arrays in) and from an `@njit` loop:
    neither libc nor NRT allocations, in reverse, forward and vector forward mode; in split
    mode only the tape object. After `release()` the first calls allocate again (a tape
    buffer, where the derivative has one; the temporary and its shadow), which shows the
    counters count."""
    mode = CASES[case][2].get("mode", "reverse")
    steady = {"libc": 0.0, "nrt": 0.0, "nrt_owners": 0.0}
    if mode == "split":     # the tape object `fwd` returns (its state array and its box) and,
        #                     with a temporary, the list of what the state releases unreversed
        steady = {"libc": 2.0 + (case == "split_temporary"), "nrt": 2.0, "nrt_owners": 2.0}
    assert probed[case]["python"] == steady
    assert probed[case]["njit"] == steady
    again = {k: n - CALLS * steady[k] for k, n in probed[case]["after_release"].items()}
    # with_temporary's reverse reloads the temporary (alive until its reverse): no tape
    tape = mode == "split" or case == "residual_cubes"
    temporaries = 0 if case in ("residual_cubes", "split_residual") else 2
    assert again["nrt_owners"] == temporaries
    assert again["libc"] >= tape + temporaries


def test_release_frees_what_is_kept_and_later_calls_allocate_again():
    d = derivative(with_temporary)
    x, A, b = problem(0, 50)
    dx = np.zeros(4)
    d(x, dx, A, b)
    # the temporary and its shadow, then nothing left to free
    assert frees_by(d.release, d.release) == [2, 0]
    dx[:] = 0.0
    d(x, dx, A, b)
    np.testing.assert_allclose(dx, gradient(x, A, b), rtol=1e-12)


@pytest.mark.parametrize("fn", [residual_cubes, with_temporary])
def test_calls_from_several_threads_stay_correct(fn):
    """Four threads call the derivative at once (no GIL), each with its own sizes: each call
    takes what is kept or allocates its own, and every gradient is right."""
    run = repeated(fn)
    problems = [problem(seed, rows) for seed, rows in enumerate((7, 3000, 64, 1500))]
    results = [np.zeros(4) for _ in problems]
    run(*problems[0][:1], results[0], *problems[0][1:], 1)      # compile outside the threads
    threads = [threading.Thread(target=run, args=(x, dx, A, b, 300))
               for (x, A, b), dx in zip(problems, results)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (x, A, b), dx in zip(problems, results):
        np.testing.assert_allclose(dx, gradient(x, A, b), rtol=1e-12)
