"""The `enzyme-py` command (also `python -m enzyme_py`).

    enzyme-py inspect TARGET [--types T] --args A [--mode M] [--stage S] [--cfg FILE] ...
    enzyme-py clang [clang-22 arguments]     (the C front end: `enzyme_py.c.driver`)

TARGET is `module:func`, `path/to/file.py:func`, or a `.ll` / `.bc` file with `--func NAME`.
Prints the requested stage (see `enzyme_py.inspection`) to stdout or `-o FILE`. Exit status:
0 on success, 1 when the pipeline reports an error (the message names the instruction and the
Python `file:line`), 2 for a bad command line. Every failure is one `enzyme-py: error:` message
on stderr, never a traceback (`--traceback` shows one for an internal error).
"""
from __future__ import annotations

import argparse
import io
import os
import sys
import traceback

from ir_passes.api import ALIASES, STAGES
from ir_passes.errors import EnzymePyError

from .cfg_files import check_cfg_path
from .inspection import inspection, parse_sizes
from .sources import InspectionError

_EPILOG = """\
examples:
  enzyme-py inspect kernels.py:dot --types "float64[::1], float64[::1]" --args dup,const
  enzyme-py inspect mypkg.model:loss --types "float64[:], int64" --args dup,const \\
      --stage tape --sizes n=1000
  enzyme-py inspect kernel.ll --func f --args dup,const --stage activity
  enzyme-py inspect kernels.py:dot --types "float64[::1], float64[::1]" --args dup,dup \\
      --cfg dot.svg

stages: raw, canonical, activity, derivative, optimized, tape, all (API.md's names: primal
is raw, preprocessed is canonical).
--cfg FILE.svg / .png needs Graphviz's `dot` (apt-get install graphviz); .dot needs nothing.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="enzyme-py", description="enzyme_py: differentiate Numba-compiled Python (and "
        "LLVM IR) at the LLVM-IR level.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("inspect", help="show the IR of each stage of differentiating a function",
                       description="Show the IR of each stage of differentiating a function.",
                       epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("target", metavar="TARGET",
                   help="MODULE:FUNC, path/file.py:FUNC, or an LLVM .ll / .bc file")
    p.add_argument("--types", "-t", help='Numba argument types, e.g. "float64[::1], int64" '
                   "(default: the function's only compiled signature)")
    p.add_argument("--args", "-a", dest="activities",
                   help="one activity per parameter: const, dup, active, dupnoneed "
                   "(comma-separated; for IR files, per LLVM parameter)")
    p.add_argument("--mode", "-m", choices=("reverse", "forward"),
                   help="differentiation mode (default: reverse)")
    p.add_argument("--stage", "-s", default="derivative",
                   choices=STAGES + tuple(ALIASES) + ("all",),
                   help="what to print (default: derivative; primal = raw, preprocessed = "
                   "canonical)")
    p.add_argument("--ret", help="activity of the return value (reverse: active/const; "
                   "forward: dup/dupnoneed/const)")
    p.add_argument("--return-primal", action="store_true",
                   help="reverse mode: also return the primal value")
    p.add_argument("--width", type=_positive_int, default=1,
                   help="forward mode: vector width (a positive integer)")
    p.add_argument("--sizes", action="append", default=[], metavar="NAME=N",
                   help="sizes for tape totals, e.g. n=1000 or x=1000 (all of x's extents); "
                   "repeatable or comma-separated")
    p.add_argument("--func", "-f", help="IR files: the LLVM function to differentiate")
    p.add_argument("--abi", choices=("auto", "numba", "c"), default="auto",
                   help="IR files: the function's calling convention (default: auto)")
    p.add_argument("--no-canonicalize", dest="canonicalize", action="store_false",
                   help="IR files: the input is already canonical (e.g. saved from --stage "
                   "canonical); only inline callees")
    p.add_argument("--no-vector-math", dest="vector_math", action="store_false", default=None,
                   help="Python functions: the derivative as compiled with vector_math=False "
                   "(scalar libm calls only; default: vectorised loops call glibc's libmvec)")
    p.add_argument("--checkpoint", action="store_true", default=None,
                   help="reverse mode: checkpoint the loops where legal and worth it, as "
                   "derive_diff(..., checkpoint=True) (--stage tape lists them)")
    p.add_argument("--cfg", metavar="FILE", help="also write control-flow graphs of primal and "
                   "derivative: FILE.dot, or FILE.svg / FILE.png (needs Graphviz)")
    p.add_argument("--output", "-o", metavar="FILE", help="write the stage text to FILE")
    p.add_argument("--traceback", action="store_true",
                   help="on an unexpected (internal) error, show the Python traceback")
    sub.add_parser("clang", help="clang-22 driver lowering __enzyme_autodiff/__enzyme_fwddiff "
                   "calls in C sources (arguments as for clang)", add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command; every failure is one `enzyme-py: error: ...` on stderr, never a
    traceback (unless --traceback): exit 1, or 2 for a bad command line (argparse)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["clang"]:               # clang's options are not ours to parse
        from .c.driver import main as clang_main
        return clang_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())     # `MODULE:FUNC` from here, as `python -m` does
    try:
        return _inspect(args)
    except EnzymePyError as exc:
        return _fail(str(exc))
    except BrokenPipeError:                 # `enzyme-py inspect ... | head`
        _silence_stdout()
        return 1
    except OSError as exc:
        target = exc.filename or args.output or "the output"
        return _fail(f"cannot write {target}: {exc.strerror or exc}")
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except Exception as exc:  # noqa: BLE001 - the command line's last line of defence
        if args.traceback:
            raise
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        return _fail(f"internal error: {type(exc).__name__}: {exc} (at {frame.filename}:"
                     f"{frame.lineno}); this is a bug in enzyme_py: please report it with the "
                     "command line (--traceback shows the details)")


def _fail(message: str, status: int = 1) -> int:
    print(f"enzyme-py: error: {message}", file=sys.stderr)
    return status


def _silence_stdout() -> None:
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        pass


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer (1, 2, ...), not {text!r}")
    return value


def _check_output(path: str, flag: str) -> None:
    """Refuse, before any work, an output path that cannot be written."""
    if os.path.isdir(path):
        raise InspectionError(f"{flag} {path} is a folder: give a file name in it")
    folder = os.path.dirname(path)
    if folder and not os.path.isdir(folder):
        raise InspectionError(f"{flag} {path}: the folder {folder} does not exist; create it "
                              f"(mkdir -p {folder}) or write somewhere else")


def _inspect(args: argparse.Namespace) -> int:
    if args.output:
        _check_output(args.output, "-o")
    if args.cfg:
        _check_output(args.cfg, "--cfg")
        check_cfg_path(args.cfg)
    ins = inspection(args.target, args.activities, args.mode, types=args.types, func=args.func,
                     abi=args.abi, ret=args.ret, return_primal=args.return_primal,
                     width=args.width, canonicalize=args.canonicalize,
                     sizes=parse_sizes(args.sizes), vector_math=args.vector_math,
                     checkpoint=args.checkpoint)
    out = open(args.output, "w") if args.output else sys.stdout
    try:
        # stage by stage, so that with "all" the stages before a failing one are shown
        for stage in STAGES if args.stage == "all" else (args.stage,):
            out.write(ins.text(stage) + ("\n" if args.stage == "all" else ""))
            out.flush()
    finally:
        if out is not sys.stdout:
            out.close()
    if args.cfg:
        ins.write_cfg(args.cfg)
        print(f"enzyme-py: wrote {args.cfg}", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
