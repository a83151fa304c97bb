"""The Numba front end. Importing it registers what the pass knows about Numba's runtime and
library helpers (`known_calls`), so every user of the front end (the API, the command line,
the C front end) differentiates NRT allocations and BLAS dots the same way."""
from . import known_calls  # noqa: F401  (registers Numba's known calls with ir_passes)
from . import printing  # noqa: F401  (print() of active values)
