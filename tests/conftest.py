"""Make the repository root importable (``enzyme_py``, ``ir_passes``, ``tests.support``,
``tests.kernels``) whether pytest runs as ``pytest`` or ``python -m pytest``, installed or not,
and keep the garbage collector from rescanning what the tests cache."""
import gc
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

# enzyme_py records the raw IR of every Numba library compiled after it is imported (callee
# bodies such as np.empty's come from those records), so import it before any kernel compiles.
import enzyme_py  # noqa: E402,F401

from tests.support.nrt_stats import nrt_stats  # noqa: E402,F401  (a fixture for every test)


def pytest_runtest_teardown(item, nextitem):
    """After a test file's last test, collect and then freeze what survives: a worker keeps
    every derivative its tests cached and everything Numba compiled, and Python's full
    collections rescanned all of it (17% of the linalg tests' time, 8% after freezing);
    frozen objects are never scanned again, and only objects alive at that moment are frozen."""
    module = getattr(item, "module", None)             # golden IR items have none
    if nextitem is None or getattr(nextitem, "module", None) is not module:
        gc.collect()
        gc.freeze()
