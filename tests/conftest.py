"""Make the repository root importable (``enzyme_py``, ``ir_passes``, ``tests.support``,
``tests.kernels``) whether pytest runs as ``pytest`` or ``python -m pytest``, installed or not."""
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
