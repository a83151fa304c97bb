"""What the pass knows about functions it does not differentiate through, a layer below the
analyses (it imports only `ir`): one record per known function and their registry (`model`),
the generic records of LLVM intrinsics (`generic`, registered on import), facts about memory
(`memory`), the array layout (`array_layout`), and why a call cannot be differentiated
(`calls`). Front ends register the records of their runtimes (enzyme_py/numba_bridge)."""
from . import generic  # noqa: F401  (registers LLVM's memory and inert intrinsics)
