"""enzyme_py's tests. tests/unit/ mirrors the source tree (unit/ir_passes/<module path>,
unit/enzyme_py/<module path>); tests/filecheck is the golden-IR tier; the test_*.py files here
test the public API end to end (kernel corpus, NumPy sweep, random programs, examples)."""
