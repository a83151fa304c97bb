"""C front end tests need clang-22 (CI installs it); without it they are skipped, saying why."""
import shutil

import pytest

HAVE_CLANG = shutil.which("clang-22") is not None


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="clang-22 is not installed (apt-get install clang-22); "
                                   "the C front end needs it")
    for item in items:
        if not HAVE_CLANG and "tests/unit/enzyme_py/c/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)
