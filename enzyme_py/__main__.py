"""`python -m enzyme_py ...` runs the `enzyme-py` command (see `enzyme_py.cli`)."""
import sys

from .cli import main

sys.exit(main())
