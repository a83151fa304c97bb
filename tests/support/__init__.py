"""Test support for enzyme_py: kernel descriptions and derivative checkers.

- ``kernel``: the ``Kernel`` description of a test kernel (plain Python function + arguments).
- ``arrays``: float-argument classification, layout-preserving copies and shadows.
- ``gradcheck``: finite differences and the forward / reverse / inner-product / vector-forward
  checkers, written against the public API contract (``/work/shared/design/API.md``).
- ``reference``: an FD-based stand-in for ``derive_diff`` with the same calling convention,
  used to test the checkers themselves (never to test enzyme_py).
"""
