"""Make the repository root importable (``enzyme_py``, ``ir_passes``, ``tests.support``,
``tests.kernels``) whether pytest runs as ``pytest`` or ``python -m pytest``, installed or not,
keep the garbage collector from rescanning what the tests cache, and apply the tiers of
``tests/_params.py``: the quick tier deselects the variants its seed does not pick, and the
heaviest xdist work units go first (``--no-loadscope-reorder`` keeps this order)."""
import gc
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

# enzyme_py records the raw IR of every Numba library compiled after it is imported (callee
# bodies such as np.empty's come from those records), so import it before any kernel compiles.
import enzyme_py  # noqa: E402,F401

from tests import _params  # noqa: E402
from tests.support.nrt_stats import nrt_stats  # noqa: E402,F401  (a fixture for every test)


def pytest_configure(config):
    config.addinivalue_line("markers", "variant(family, key, keep): a case the quick tier "
                                       "samples (tests/_params.py, sampled)")
    if not _params.FULL:
        _params.tier_seed()                           # fixed before xdist starts its workers


def pytest_report_header(config):
    return _params.tier_header()


def pytest_sessionstart(session):
    """``-q`` (the README's command) hides the header: say the tier and seed anyway."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and session.config.get_verbosity() < 0:
        reporter.write_line(_params.tier_header())


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(_params.tier_header())


def pytest_collection_modifyitems(config, items):
    if not _params.FULL:
        named = [a.split("::", 1)[1] for a in config.args if "::" in a and "[" in a]
        kept, dropped = _params.select_variants(items, _params.tier_seed(), named)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept
    if hasattr(config, "workerinput"):                 # a pytest-xdist worker
        items[:] = _params.heavy_first(items)


_COSTS: dict[str, float] = {}


def pytest_runtest_logreport(report):
    if os.environ.get("ENZYME_TESTS_COSTS"):
        _params.record_cost(_COSTS, report.nodeid, report.duration)


def pytest_sessionfinish(session):
    path = os.environ.get("ENZYME_TESTS_COSTS")
    if path and not hasattr(session.config, "workerinput"):
        _params.write_costs(_COSTS, path)


def pytest_runtest_teardown(item, nextitem):
    """After a test file's last test, collect and then freeze what survives: a worker keeps
    every derivative its tests cached and everything Numba compiled, and Python's full
    collections rescanned all of it (17% of the linalg tests' time, 8% after freezing);
    frozen objects are never scanned again, and only objects alive at that moment are frozen."""
    module = getattr(item, "module", None)             # golden IR items have none
    if nextitem is None or getattr(nextitem, "module", None) is not module:
        gc.collect()
        gc.freeze()
