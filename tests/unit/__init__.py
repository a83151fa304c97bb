"""Tests of single modules; the tree mirrors the source tree (unit/ir_passes/<path>,
unit/enzyme_py/<path>)."""
