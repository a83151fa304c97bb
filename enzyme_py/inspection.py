"""The IR inspection tool: every stage of differentiating one function, as text.

`inspection(target, activities, ...)` prepares an `Inspection`; `.text(stage)` renders a stage:

  raw         the module as it came in (Numba's lowering, or the .ll/.bc file)
  canonical   the canonical module the pass differentiates (callees inlined)
  activity    the primal annotated per instruction (active / inactive / shadowed pointer),
              then per Python source line: its text and its active instructions
  derivative  the synthesized derivative function
  optimized   the derivative's module after `ir_passes.canonicalize.optimize` (O3)
  tape        reverse mode: per value, taped (bytes per loop iteration, totals for
              `sizes`), spilled or recomputed instead, as the reverse synthesizer decided
              (`ir_passes.diff.reverse.tape_report`)

and `.cfg_dot()` / `.write_cfg(path)` draw the primal and derivative control-flow graphs.
`inspect(...)` is the one-call form. Targets:
- a Python function, `numba.njit` dispatcher, `@autodiff` object or `derive_diff` result, or a
  `"module:func"` / `"path/file.py:func"` string, specialised for `types` (a Numba type string
  such as `"float64[::1], int64"` or a tuple of Numba types); activities are per Python
  parameter, exactly as for `derive_diff`;
- a `.ll` / `.bc` file (or IR text) and `func`, any LLVM function. Two ABIs (`abi=`):
  * "numba": `i32 @f(ptr %retptr, ptr %excinfo, ...)` as Numba emits it. Activities map to
    the parameters after retptr/excinfo; arguments named `arg.<p>.<k>` (Numba's names) are
    grouped per Python parameter, and a group of 5 + 2*ndim arguments is an array.
  * "c": plain C functions `double f(double, ...)`, `void f(double *, ...)`: one activity per
    LLVM parameter. The synthesizers expect Numba's ABI, so a shim
    `i32 @f.enzyme_abi(ptr %retptr, ptr %excinfo, ...)` is built (with our `Builder`) that calls
    `f`, stores its result through `retptr` and returns 0; `f` is inlined into it and the shim
    is differentiated. A `dup` pointer becomes a 0-d array in the shim (meminfo, parent,
    nitems, itemsize, data: only data is used), so its shadow is one pointer too.
  "auto" (default) picks "numba" for `i32 (ptr %retptr, ptr %excinfo, ...)`, else "c".

Nothing is compiled to native code or linked: the derivative is synthesized and verified
only. Errors are the pipeline's own (`ActivityError`, `UnsupportedError` with the Python
`file:line`, `InvalidIRError`) or `InspectionError` for a bad request.
"""
from __future__ import annotations

import ast
import functools
import linecache
import os
import shutil
import subprocess
import weakref
from dataclasses import dataclass
from typing import Mapping, Sequence

from numba import njit, types
from numba.core.dispatcher import Dispatcher
from numba.core.errors import NumbaError

from ir_passes.analysis.activity import ActivityInfo, analyze_activity, print_activity
from ir_passes.analysis.cfg_dot import cfg_dot
from ir_passes.canonicalize import canonicalize_module, optimize, parse, run_module_passes
from ir_passes.diff.returns import find_return_type
from ir_passes.diff.driver import differentiate
from ir_passes.diff.reverse.tape_report import TapeReport, print_tape, tape_report, taped_slots
from ir_passes.diff.seeds import activity_seeds
from ir_passes.diff.spec import Activity, DiffSpec, ParamSpec
from ir_passes.diagnostics import Diagnostics
from ir_passes.errors import ActivityError, InvalidIRError
from ir_passes.ir.builder import Builder
from ir_passes.ir.parser import parse_module, parse_type
from ir_passes.ir.printer import Namer, print_function, print_module
from ir_passes.ir.types import (I32, I64, PTR, ArrayType, FloatType, FunctionType, IntType,
                                StructType, Type)
from ir_passes.ir.values import Function, Instruction, Module, const_int

from .activities import check_types, parse_spec, ret_words, return_activity
from .numba_bridge.capture import capture
from .numba_bridge.link import llvm_abi
from .returns import return_fields
from .sources import (InspectionError, ir_error, load_python_target, numba_error,
                      read_ir)
from .specialize import result_type

__all__ = ["STAGES", "Inspection", "InspectionError", "Target", "check_cfg_path", "inspect",
           "inspection", "load_python_target", "parse_sizes", "parse_types", "render_dot",
           "source_summary"]

STAGES = ("raw", "canonical", "activity", "derivative", "optimized", "tape")
_ALIASES = {"primal": "canonical", "preprocessed": "canonical"}


@dataclass(frozen=True)
class Target:
    """One function to differentiate, whatever the front end: its IR and its DiffSpec."""
    title: str                 # "f (float64, int64)" / "@f in kernel.ll"
    raw_text: str
    canonical_text: str
    spec: DiffSpec
    abi: str                   # "numba" | "c"


# ---------------------------------------------------------------- entry points

def inspect(target, activities=None, mode: str | None = None, *, stage: str = "derivative",
            types=None, func: str | None = None, abi: str = "auto", ret: str | None = None,
            return_primal: bool = False, width: int = 1, canonicalize: bool = True,
            sizes: Mapping[str, int] | None = None) -> str:
    """The IR text of `stage` for differentiating `target`; nothing is compiled or linked.

    target: a Python function, njit dispatcher, `@autodiff` object or `derive_diff` result,
      or "module:func" / "path/file.py:func", specialised for `types` (a Numba type string
      such as "float64[::1], int64" or a tuple of Numba types), with one activity per Python
      parameter as for `derive_diff`; or a .ll/.bc file (or IR text) with `func`, the LLVM
      function, and one activity per LLVM parameter (`abi="numba"` for Numba's
      `i32 @f(ptr retptr, ptr excinfo, ...)`, "c" for plain C functions, "auto" picks).
    stage: "raw" (as given), "canonical" (what the pass differentiates), "activity" (the
      primal annotated with activities per instruction and Python line), "derivative",
      "optimized" (after O3), "tape" (reverse mode: what is taped, spilled or recomputed;
      `sizes` maps loop-size names to numbers for totals) or "all".
    mode, ret, return_primal, width: as for `derive_diff`.
    Errors: `ActivityError`, `UnsupportedError` (naming the construct and Python file:line),
    `InvalidIRError`, or `InspectionError` for a bad request.
    """
    return inspection(target, activities, mode, types=types, func=func, abi=abi, ret=ret,
                      return_primal=return_primal, width=width, canonicalize=canonicalize,
                      sizes=sizes).text(stage)


def inspection(target, activities=None, mode: str | None = None, *, types=None,
               func: str | None = None, abi: str = "auto", ret: str | None = None,
               return_primal: bool = False, width: int = 1, canonicalize: bool = True,
               sizes: Mapping[str, int] | None = None) -> Inspection:
    """An `Inspection` of `target` (stages are computed on demand and cached).

    `canonicalize=False` (IR files only) differentiates the function as given after inlining
    its callees: for IR already in canonical form, e.g. saved from the "canonical" stage.
    """
    if _is_ir_source(target):
        if types is not None:
            raise InspectionError("types/--types describe Python functions; an IR function's "
                                  "types are in its signature")
        if func is None:
            raise InspectionError("an IR file needs the name of the function: func=/--func")
        if activities is None:
            raise InspectionError("give one activity per LLVM parameter (args=/--args)")
        t = _ir_target(target, func, activities, mode or "reverse", abi, ret, return_primal,
                       width, canonicalize)
    else:
        if func is not None:
            raise InspectionError("func/--func names a function of an IR file; for Python "
                                  "give MODULE:FUNC")
        t = _numba_target(target, activities, mode, types, ret, return_primal, width)
    return Inspection(t, sizes or {})


class Inspection:
    """Every stage of one differentiation; each is computed once, when first asked for."""

    def __init__(self, target: Target, sizes: Mapping[str, int]) -> None:
        self.target = target
        self.spec = target.spec
        self.sizes = dict(sizes)

    # ---- stages
    def text(self, stage: str = "derivative") -> str:
        stage = _ALIASES.get(stage, stage)
        if stage == "all":
            return "\n".join(self.text(s) for s in STAGES)
        if stage not in STAGES:
            raise InspectionError(f"unknown stage {stage!r}; expected one of "
                                  f"{', '.join(STAGES)}, all")
        body = getattr(self, f"_{stage}")()
        return self.header(stage) + body.rstrip("\n") + "\n"

    def header(self, stage: str) -> str:
        spec, fn = self.spec, self.primal
        namer = Namer(fn)
        lines = [f"; enzyme-py inspect {self.target.title} -- {stage}",
                 f"; mode={spec.mode} ret={spec.ret.value}"
                 + (f" width={spec.width}" if spec.width > 1 else "")
                 + (" return_primal" if spec.return_primal else "")
                 + (f" (C ABI through shim @{spec.primal})" if self.target.abi == "c" else "")]
        for p in spec.params:
            args = [namer.ref(fn.args[i]) for i in p.args]
            span = args[0] if len(args) == 1 else f"{args[0]} .. {args[-1]}"
            what = ""
            data = namer.ref(fn.args[p.data_arg]) if p.is_array else ""
            if p.is_array and self.target.abi == "c":
                what = f" (a pointer, passed as a 0-d array: only {data} is used)"
            elif p.is_array:
                what = f" ({p.ndim}-d array, data {data})"
            lines.append(f";   {p.name}: {p.activity.value} -> {span}{what}")
        return "\n".join(lines) + "\n"

    def _raw(self) -> str:
        return self.target.raw_text

    def _canonical(self) -> str:
        return self.target.canonical_text

    def _activity(self) -> str:
        return (print_activity(self.primal, self.activity).rstrip("\n") + "\n"
                + source_summary(self.module, self.primal, self.activity))

    def _derivative(self) -> str:
        return print_function(self._synthesized[0])

    def _optimized(self) -> str:
        return optimize(self._synthesized[1])

    def _tape(self) -> str:
        if self.spec.mode != "reverse":
            return "; forward mode keeps no tape: tangents are computed beside the primal\n"
        report = self.tape
        text = print_tape(report, self.sizes)
        pushed = taped_slots(self.derivative)     # read back from the real derivative
        if pushed != report.slots_by_block():
            text += (f"; warning: the synthesized derivative pushes {pushed} tape slot(s) per "
                     f"block execution, its observer reported {report.slots_by_block()}: "
                     "the reverse synthesizer does not report every push (please report)\n")
        return text

    # ---- objects behind the stages
    @functools.cached_property
    def module(self) -> Module:
        """The canonical module, parsed (the primal is `self.primal`)."""
        return parse_module(self.target.canonical_text)

    @property
    def primal(self) -> Function:
        return self.module.functions[self.spec.primal]

    @functools.cached_property
    def activity(self) -> ActivityInfo:
        return analyze_activity(self.primal, *activity_seeds(self.primal, self.spec))

    @functools.cached_property
    def tape(self) -> TapeReport:
        return tape_report(self.module, self.spec)

    @functools.cached_property
    def _synthesized(self) -> tuple[Function, str]:
        """(derivative function, its verified module text without the primal)."""
        module = parse_module(self.target.canonical_text)
        fn, text = differentiate(module, self.spec, self.target.title)
        return fn, text

    @property
    def derivative(self) -> Function:
        return self._synthesized[0]

    # ---- control-flow graphs
    def cfg_dot(self) -> str:
        """DOT text: primal and derivative CFGs side by side, active code highlighted."""
        return cfg_dot(self.primal, self.activity, self.derivative, module=self.module,
                       title=f"{self.target.title} ({self.spec.mode} mode)")

    def write_cfg(self, path: str | os.PathLike) -> None:
        """Write the CFGs to `path`: .dot as text, .svg / .png rendered by Graphviz `dot`."""
        render_dot(self.cfg_dot(), path)


def source_summary(module: Module, fn: Function, info: ActivityInfo) -> str:
    """Per Python line (`!enzyme.loc`): the line's text and which of its instructions are
    active, i.e. where in the user's source the derivative does work."""
    diag = Diagnostics(module, fn)
    lines: dict[str, list[tuple[Instruction, bool]]] = {}
    for inst in fn.instructions():
        loc = diag.source(inst)
        if loc is not None:
            active = inst.operands[1] in info.shadowed if inst.opcode == "store" else \
                info.is_active(inst)
            lines.setdefault(loc, []).append((inst, active))
    if not lines:
        return ""
    out = ["; active instructions by Python source line:"]
    rows = []
    for loc in sorted(lines, key=_line_key):
        path, _, number = loc.rpartition(":")
        code = linecache.getline(path, int(number)).strip() if number.isdigit() else ""
        active = [_op_name(i) for i, a in lines[loc] if a]
        idle = [_op_name(i) for i, a in lines[loc] if not a and i in info.varied]
        what = ", ".join(active) + (f" (varied, not useful: {', '.join(idle)})" if idle else "")
        rows.append((f"{os.path.basename(path)}:{number}", f"{len(active)}/{len(lines[loc])}",
                     code, what.strip()))
    widths = [max(len(r[k]) for r in rows) for k in range(3)]
    for r in rows:
        out.append((";   " + "  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[3])
                   .rstrip())
    return "\n".join(out) + "\n"


def _line_key(loc: str) -> tuple[str, int]:
    path, _, number = loc.rpartition(":")
    return path, int(number) if number.isdigit() else 0


def _op_name(inst: Instruction) -> str:
    return f"call {inst.callee_name}" if inst.opcode == "call" else inst.opcode


def check_cfg_path(path: str | os.PathLike) -> str | None:
    """Refuse a --cfg name `render_dot` cannot write; the `dot` program it needs, or None."""
    path = os.fspath(path)
    ext = os.path.splitext(path)[1].lower()
    if ext in (".dot", ".gv"):
        return None
    if ext not in (".svg", ".png"):
        raise InspectionError(f"--cfg {path}: expected a .dot, .svg or .png file name")
    dot = shutil.which("dot")
    if dot is None:
        raise InspectionError(
            f"rendering {path} needs Graphviz's 'dot' program, which is not on PATH: install "
            "Graphviz (Debian/Ubuntu: apt-get install graphviz; conda: conda install graphviz; "
            "macOS: brew install graphviz), or write the graph as .dot instead")
    return dot


def render_dot(dot_text: str, path: str | os.PathLike) -> None:
    """Write DOT text to a .dot file, or render it to .svg / .png with Graphviz."""
    path = os.fspath(path)
    dot = check_cfg_path(path)
    if dot is None:
        with open(path, "w") as f:
            f.write(dot_text)
        return
    ext = os.path.splitext(path)[1].lower()
    proc = subprocess.run([dot, f"-T{ext[1:]}", "-o", path], input=dot_text.encode(),
                          capture_output=True, check=False)
    if proc.returncode != 0:
        raise InspectionError(f"Graphviz dot failed on {path}: "
                              f"{proc.stderr.decode(errors='replace').strip()}")


# ---------------------------------------------------------------- Numba front end

def parse_types(text: str) -> tuple:
    """Numba types from a string like "float64[::1], int64" (names from `numba.types` only)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise InspectionError(f"cannot parse types {text!r}: {exc.msg}") from None
    for node in ast.walk(tree):
        if not isinstance(node, _TYPE_NODES):
            raise InspectionError(f"types {text!r}: {type(node).__name__} is not allowed "
                                  "(use Numba type names, [:] / [::1] for arrays, and calls "
                                  "such as UniTuple(float64, 2))")
        if isinstance(node, ast.Name) and node.id not in _TYPE_NAMESPACE:
            raise InspectionError(f"types {text!r}: unknown Numba type {node.id!r}")
    try:
        value = eval(compile(tree, "<types>", "eval"), {"__builtins__": {}},  # noqa: S307
                     dict(_TYPE_NAMESPACE))
    except Exception as exc:
        raise InspectionError(f"types {text!r}: {exc}") from None
    out = value if isinstance(value, tuple) else (value,)
    for t in out:
        if not isinstance(t, types.Type):
            raise InspectionError(f"types {text!r}: {t!r} is not a Numba type")
    return out


_TYPE_NAMESPACE = {k: v for k, v in vars(types).items() if not k.startswith("_")}
_TYPE_NODES = (ast.Expression, ast.Tuple, ast.Name, ast.Load, ast.Subscript, ast.Slice,
               ast.Constant, ast.Call, ast.keyword, ast.List)


def _numba_target(f, activities, mode, argtypes, ret, return_primal, width) -> Target:
    if isinstance(f, str):
        f = load_python_target(f)
    primal, defaults = _primal_and_defaults(f)
    if activities is None:
        if defaults is None:
            names = ", ".join(primal.py_func.__code__.co_varnames[
                :primal.py_func.__code__.co_argcount])
            raise InspectionError(f"{primal.py_func.__name__}({names}): give one activity per "
                                  "parameter (args=/--args, e.g. --args dup,const)")
        activities = [a.value for a in defaults.activities]
        mode = mode or defaults.mode
        ret = ret if ret is not None else ret_words(defaults.ret)
        width = defaults.width if width == 1 else width
        return_primal = return_primal or defaults.return_primal
    mode = mode or "reverse"
    spec = parse_spec(primal.py_func, activities, mode, ret, width, return_primal)
    primal_types = _argument_types(primal, argtypes)
    if len(primal_types) != len(spec.params):
        raise InspectionError(f"{primal.py_func.__name__} has {len(spec.params)} parameter(s) "
                              f"({', '.join(spec.params)}) but {len(primal_types)} type(s) were "
                              "given: give one --types entry per parameter")
    check_types(spec, primal_types)
    try:
        cap = capture(primal, primal_types)
    except NumbaError as exc:
        raise numba_error(exc, primal.py_func.__name__, primal_types) from None
    ret_act = return_activity(spec, cap.restype)
    restype = result_type(spec, cap.restype, ret_act, primal_types)
    _, ret_text = llvm_abi((), restype)
    params = []
    for layout, act in zip(cap.params, spec.activities):
        ndim = layout.numba_type.ndim if isinstance(layout.numba_type, types.Array) else None
        params.append(ParamSpec(layout.name, act, layout.llvm_args, ndim))
    pyname = primal.py_func.__name__
    dspec = DiffSpec(primal=cap.func_name,
                     name=("fwddiffe_" if mode == "forward" else "diffe_") + pyname,
                     mode=mode, params=tuple(params), ret=ret_act,
                     ret_type=None if restype == types.none else parse_type(ret_text),
                     width=spec.width, return_primal=spec.return_primal,
                     **return_fields(spec, cap.restype))
    title = f"{primal.py_func.__qualname__} ({', '.join(str(t) for t in primal_types)})"
    return Target(title, cap.raw_text, cap.module_text, dspec, "numba")


def _primal_and_defaults(f):
    """The primal dispatcher, and the ActivitySpec of an @autodiff / derive_diff object."""
    derivative = getattr(f, "derivative", None)          # @autodiff
    specializer = getattr(derivative if derivative is not None else f, "enzyme", None)
    if specializer is not None:
        return specializer.primal, specializer.spec
    if isinstance(f, Dispatcher):
        return f, None
    if callable(f) and hasattr(f, "__code__"):
        jitted = _jitted.get(f)
        if jitted is None:                  # one dispatcher per function: captures are cached
            jitted = _jitted[f] = njit(f)
        return jitted, None
    raise InspectionError(f"cannot inspect {f!r} ({type(f).__name__}): expected a Python "
                          "function, a numba.njit dispatcher, an @autodiff object, or an IR "
                          "file")


_jitted: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _argument_types(primal: Dispatcher, argtypes) -> tuple:
    if argtypes is None:
        sigs = primal.signatures
        if len(sigs) == 1:
            return tuple(types.unliteral(t) for t in sigs[0])
        raise InspectionError(f"{primal.py_func.__name__}: give the argument types "
                              "(types=/--types, e.g. \"float64[::1], int64\")"
                              + (f"; compiled so far: {sigs}" if sigs else ""))
    if isinstance(argtypes, str):
        return parse_types(argtypes)
    return tuple(argtypes)


# ---------------------------------------------------------------- LLVM IR front end

def _is_ir_source(target) -> bool:
    if isinstance(target, (str, os.PathLike)):
        text = os.fspath(target)
        return text.endswith((".ll", ".bc")) or "define " in text
    return False


def _ir_target(source, func: str, activities, mode: str, abi: str, ret, return_primal: bool,
               width: int, canonicalize: bool) -> Target:
    if mode not in ("forward", "reverse"):
        raise ActivityError(f"mode must be 'forward' or 'reverse', not {mode!r}")
    if not isinstance(width, int) or width < 1:
        raise ActivityError(f"width must be a positive integer, not {width!r}")
    raw, where = read_ir(source)
    try:
        named = _named(raw)
    except InvalidIRError as exc:
        raise ir_error(exc, where) from None
    module = parse_module(named)
    fn = _find_function(module, func, where)
    base, func = func, fn.name or func        # derivative named after what was asked for
    if abi == "auto":
        abi = "numba" if _has_numba_abi(fn) else "c"
    if abi not in ("numba", "c"):
        raise InspectionError(f"abi must be auto, numba or c, not {abi!r}")
    if abi == "numba" and not _has_numba_abi(fn):
        raise InspectionError(f"@{fn.name} does not have Numba's calling convention "
                              "(i32 (ptr %retptr, ptr %excinfo, ...)): use --abi c or auto")
    words = activities.split(",") if isinstance(activities, str) else list(activities)
    acts = [_activity(str(w).strip()) for w in words]
    if abi == "c":
        primal_name, params = _c_abi_shim(module, fn, acts, mode)
    else:
        primal_name, params = func, _numba_abi_params(fn, acts)
    _check_ir_activities(module.functions[primal_name], params, mode)
    canonical = _canonical(module, primal_name, canonicalize, named)
    primal = parse_module(canonical).functions[primal_name]
    slot = find_return_type(primal, 0)
    ret_act = _ir_return_activity(slot, ret, mode)
    if width > 1 and mode != "forward":
        raise ActivityError("width > 1 (vector mode) is only available in forward mode")
    dspec = DiffSpec(primal=primal_name, name=("fwddiffe_" if mode == "forward" else "diffe_")
                     + base, mode=mode, params=tuple(params), ret=ret_act,
                     ret_type=_ir_result_type(primal, params, slot, ret_act, mode, width,
                                              return_primal),
                     width=width, return_primal=return_primal)
    return Target(f"@{func} in {os.path.basename(where)}", raw, canonical, dspec, abi)


def _find_function(module: Module, func: str, where: str) -> Function:
    """The function named `func`, or the only defined one whose name contains it (so Numba's
    mangled names can be given as the Python name)."""
    defined = [f for f in module.functions.values() if not f.is_declaration]
    exact = [f for f in defined if f.name == func]
    matches = exact or [f for f in defined if func in (f.name or "")]
    if len(matches) == 1:
        return matches[0]
    names = ", ".join(f"@{f.name}" for f in (matches or defined)) or "nothing"
    if matches:
        raise InspectionError(f"{where}: --func {func} is ambiguous: {names}")
    raise InspectionError(f"{where} defines no function @{func}; it defines {names}")


def _named(text: str) -> str:
    """The module verified by LLVM, with numbered arguments and blocks named (`%arg0`, `%bb4`,
    and `%v13` for the values numbered alongside them), as clang prints them without value
    names; `ir_passes.ir.parser` reads only named arguments and blocks."""
    ref = parse(text)                       # verify first: llvmlite's LLVM aborts on bad IR
    changed = False
    for fn in ref.functions:
        if fn.is_declaration or (all(a.name for a in fn.arguments)
                                 and all(b.name for b in fn.blocks)):
            continue
        changed = True
        number = 0                          # LLVM's numbering of unnamed values
        for i, arg in enumerate(fn.arguments):
            if not arg.name:
                arg.name = f"arg{i}"
                number += 1
        for block in fn.blocks:
            if not block.name:
                block.name = f"bb{number}"
                number += 1
            for inst in block.instructions:
                if not inst.name and str(inst.type) != "void":
                    inst.name = f"v{number}"
                    number += 1
    return str(ref) if changed else text


def _activity(word: str) -> Activity:
    try:
        return Activity(word)
    except ValueError:
        raise ActivityError(f"unknown activity {word!r} (expected one of const, dup, active, "
                            "dupnoneed)") from None


def _has_numba_abi(fn: Function) -> bool:
    a = fn.args
    return (fn.ftype.ret == I32 and len(a) >= 2 and a[0].type == PTR and a[1].type == PTR
            and a[0].name == "retptr" and a[1].name == "excinfo")


def _numba_abi_params(fn: Function, acts: list[Activity]) -> list[ParamSpec]:
    """Parameters of a Numba-ABI function: `arg.<p>.<k>` arguments grouped per parameter."""
    groups: list[tuple[str, list[int]]] = []
    for arg in fn.args[2:]:
        name = arg.name or f"arg{arg.index}"
        pname = name[4:].split(".")[0] if name.startswith("arg.") else name
        if groups and groups[-1][0] == pname and name.startswith("arg."):
            groups[-1][1].append(arg.index)
        else:
            groups.append((pname, [arg.index]))
    params: list[ParamSpec] = []
    for pname, idx in groups:
        n = len(idx)
        if n == 1:
            params.append(ParamSpec(pname, Activity.CONST, (idx[0],)))
        elif n >= 5 and (n - 5) % 2 == 0 and fn.args[idx[4]].type == PTR:
            params.append(ParamSpec(pname, Activity.CONST, tuple(idx), (n - 5) // 2))
        else:                               # a tuple or struct: one parameter per argument
            params += [ParamSpec(f"{pname}.{k}", Activity.CONST, (i,)) for k, i in enumerate(idx)]
    if len(acts) != len(params):
        described = ", ".join(f"{p.name}" + (f" ({p.ndim}-d array)" if p.is_array else "")
                              for p in params)
        raise ActivityError(f"@{fn.name} has {len(params)} parameter(s) after retptr/excinfo "
                            f"({described}) but {len(acts)} activities were given")
    return [ParamSpec(p.name, a, p.args, p.ndim) for p, a in zip(params, acts)]


def _c_abi_shim(module: Module, fn: Function, acts: list[Activity],
                mode: str) -> tuple[str, list[ParamSpec]]:
    """Add `i32 @<fn>.enzyme_abi(ptr %retptr, ptr %excinfo, ...)` calling `fn` (see module doc)."""
    if len(acts) != len(fn.args):
        raise ActivityError(f"@{fn.name} has {len(fn.args)} parameter(s) but {len(acts)} "
                            "activities were given")
    ret = fn.ftype.ret
    if fn.ftype.vararg or not (ret.is_void or isinstance(ret, (FloatType, IntType))):
        raise InspectionError(f"@{fn.name}: only C functions returning a float, an integer or "
                              "void are supported (shape double f(double, ...), "
                              "void f(double *, ...))")
    types_: list[Type] = [PTR, PTR]
    names: list[str | None] = ["retptr", "excinfo"]
    params: list[ParamSpec] = []
    call_args: list[int] = []
    for k, (arg, act) in enumerate(zip(fn.args, acts)):
        pname = arg.name or f"arg{k}"
        start = len(types_)
        if arg.type.is_pointer and act.has_shadow:   # a 0-d array: only `data` is used
            types_ += [PTR, PTR, I64, I64, PTR]
            names += [f"{pname}.meminfo", f"{pname}.parent", f"{pname}.nitems",
                      f"{pname}.itemsize", pname]
            params.append(ParamSpec(pname, act, tuple(range(start, start + 5)), 0))
            call_args.append(start + 4)
        elif isinstance(arg.type, (FloatType, IntType)) or arg.type.is_pointer:
            types_.append(arg.type)
            names.append(pname)
            params.append(ParamSpec(pname, act, (start,)))
            call_args.append(start)
        else:
            raise InspectionError(f"@{fn.name}: parameter {pname} of type {arg.type} is not "
                                  "supported by the C ABI shim (floats, integers, pointers)")
    shim = Function(f"{fn.name}.enzyme_abi", FunctionType(I32, tuple(types_)), names)
    b = Builder(shim.add_block("entry"))
    result = b.call(fn, [shim.args[i] for i in call_args], ret)
    if not ret.is_void:
        b.store(result, shim.args[0])
    b.ret(const_int(I32, 0))
    module.add_function(shim)
    return shim.name or "", params


def _check_ir_activities(fn: Function, params: list[ParamSpec], mode: str) -> None:
    for p in params:
        if p.activity is Activity.CONST:
            continue
        if p.is_array:
            if p.activity is Activity.ACTIVE:
                raise ActivityError(f"parameter '{p.name}' is a pointer/array: mark it 'dup' "
                                    "and pass a shadow")
            continue
        t = fn.args[p.args[0]].type
        if not isinstance(t, FloatType):
            raise ActivityError(f"parameter '{p.name}' has type {t}: only float scalars and "
                                "pointers to floats (dup) can be differentiated; mark it 'const'")
        if p.activity is Activity.ACTIVE and mode == "forward":
            raise ActivityError(f"parameter '{p.name}': 'active' is for reverse mode; in "
                                "forward mode mark it 'dup'")
        if p.activity.has_shadow and mode == "reverse":
            raise ActivityError(f"parameter '{p.name}' is a float passed by value: in reverse "
                                "mode mark it 'active'")


def _ir_return_activity(slot: Type, ret: str | None, mode: str) -> Activity:
    differentiable = isinstance(slot, FloatType)
    if ret is None:
        if not differentiable:
            return Activity.CONST
        return Activity.ACTIVE if mode == "reverse" else Activity.DUP
    act = _activity(ret)
    allowed = ("active", "const") if mode == "reverse" else ("dup", "dupnoneed", "const")
    if act.value not in allowed:
        raise ActivityError(f"ret={ret!r} is not valid in {mode} mode (expected one of "
                            f"{', '.join(allowed)})")
    if act is not Activity.CONST and not differentiable:
        raise ActivityError(f"ret={ret!r} needs a float return value, but the function "
                            f"returns {slot}")
    return act


def _ir_result_type(fn: Function, params: list[ParamSpec], slot: Type, ret_act: Activity,
                    mode: str, width: int, return_primal: bool) -> Type | None:
    """The derivative's retptr pointee, laid out as Numba lays out the same tuple."""
    prim = slot if slot != PTR else None
    if mode == "reverse":
        grads = [fn.args[p.args[0]].type for p in params if p.activity is Activity.ACTIVE]
        packed: Type = (ArrayType(len(grads), grads[0]) if grads and len(set(grads)) == 1
                        else StructType(tuple(grads)))
        if return_primal:
            return StructType((prim or PTR, packed))
        return packed
    if not ret_act.is_differentiated:
        return prim
    if width > 1:
        return None if ret_act is Activity.DUPNONEED else prim
    return prim if ret_act is Activity.DUPNONEED else ArrayType(2, slot)


def _canonical(module: Module, primal: str, canonicalize: bool, raw: str) -> str:
    """Inline every other defined function into `primal`, then canonicalise (as capture does)
    unless the input is known to be canonical already."""
    others = [f for n, f in module.functions.items() if n != primal and not f.is_declaration]
    if not canonicalize and not others:
        return raw                          # nothing to do: keep the input's value names
    for fn in others:
        fn.linkage = "internal"
        fn.fn_attrs = "alwaysinline"         # drops noinline/optnone attribute groups
        fn.prefix_attrs = " ".join(w for w in fn.prefix_attrs.split() if w not in _NOT_LOCAL)
    ref = parse(print_module(module))
    run_module_passes(ref, ("always_inliner", "global_dead_code_eliminate"))
    leftover = [f.name for f in ref.functions if not f.is_declaration and f.name != primal]
    if leftover:
        raise InspectionError(f"@{leftover[0]} cannot be inlined into @{primal} (recursive?)")
    if canonicalize:
        canonicalize_module(ref)
    run_module_passes(ref, ("global_dead_code_eliminate", "strip_dead_prototype"))
    return str(ref)


_NOT_LOCAL = {"dso_local", "dso_preemptable", "hidden", "protected", "default", "dllimport",
              "dllexport"}


def parse_sizes(items: Sequence[str]) -> dict[str, int]:
    """`["n=1000", "m=3,k=2"]` -> {"n": 1000, "m": 3, "k": 2}."""
    out: dict[str, int] = {}
    for item in items:
        for part in item.split(","):
            if not part.strip():
                continue
            key, sep, val = part.partition("=")
            try:
                out[key.strip()] = int(val)
            except ValueError:
                sep = ""
            if not sep or not key.strip():
                raise InspectionError(f"--sizes {part!r}: expected NAME=INTEGER, e.g. n=1000")
    return out
