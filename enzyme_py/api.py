"""The public entry points: `derive_diff` and the `@autodiff` decorator.

`derive_diff` checks the activity specification at once and returns a Numba dispatcher. The
first call with new argument types (from Python or from `@njit` code) specialises it: the
primal is captured for those types, differentiated by `ir_passes`, and linked back; later
calls reuse the compiled specialisation.

Mechanics: the dispatcher's body is generated per argument types (`njit_generated`): the
wrapper for the concrete types (argument checks, the width-k tangent buffer), which calls the
derivative through a lazily built `@intrinsic`. Generated code names
arguments `a0, a1, ...`; the user's names only appear in messages.
"""
from __future__ import annotations

import functools
import keyword

import numpy as np
from numba import njit
from numba.core.dispatcher import Dispatcher

from ir_passes.errors import ActivityError

from .activities import parse_spec
from .call_checks import NAMESPACE as CHECKS
from .call_boundary import guard_first_calls
from .disk_cache import DerivativeCache, fingerprint
from .numba_bridge.link import lazy_intrinsic, njit_generated, raise_failed
from .omitted import default_scope
from .specialize import Specializer
from .tape import NAMESPACE as TAPES

def derive_diff(f, name: str | None, activities, mode: str = "reverse", *,
                ret: str | tuple[str, ...] | None = None, return_primal: bool = False,
                width: int = 1, vector_math: bool = True, cache: bool = False,
                checkpoint: bool = False, strong_zero: bool = False,
                unchanged: tuple[str, ...] = ()) -> Dispatcher:
    """The derivative of `f` (a Python function or `numba.njit` dispatcher), as a Numba
    dispatcher named `name` (default `d_<f's name>`).

    activities: one word per parameter of `f`, in order (a sequence or "a, b, ..."):
      "const"      no derivative; pass `p`. Integers, booleans and other non-float data
                   are always const.
      "active"     reverse mode, float scalars: pass `p`; its gradient is returned.
      "dup"        pass `p` and then its shadow: in reverse mode `d_p` (an array shaped and
                   strided like `p`) into which the gradient is accumulated (`d_p += ...`);
                   in forward mode `t_p`, the tangent (direction) of `p` (a float or array).
      "dupnoneed"  like "dup"; results the function writes through `p` may be skipped.
    mode="reverse": `df(p or p, d_p, ...)` returns the tuple of gradients of the "active"
      parameters (`()` if none); a float return value is seeded with 1.0 (`ret="active"`, the
      default; `ret="const"` ignores it). Arrays the function writes (outputs) are seeded
      through their shadow: `d_out` holds the incoming adjoint and is consumed (left zeroed),
      so a vector-Jacobian product is: `v` in `d_out`, zeros in `d_in`, call `df`.
      `return_primal=True` returns `(value, gradients)`.
    mode="forward": `df(p or p, t_p, ...)` returns `(value, tangent)` for a float return
      (`ret="dupnoneed"`: the tangent only); tangents of written arrays land in their
      tangent arrays. `width=k` (vector mode): every tangent gains a leading axis of length k
      and the returned tangent is an array of k directional derivatives.

    Functions returning an array or a tuple (of floats and/or arrays): the reverse
      derivative takes the adjoint of the result as one more, last, argument `d_ret` with
      the result's structure (array parts are consumed, left zeroed), and `ret` may give one
      activity ("active"/"const") per tuple element (a "const" element takes no `d_ret`
      part); the forward derivative returns `(value, tangent)`, the tangent shaped like the
      value. A derivative with nothing to differentiate is an `ActivityError`.

    Parameters with defaults: like `f`, `df` may be called without trailing parameters that
      have defaults in `f` (`f(k, r, v, tol=1e-8)`: `df(k, r, v)`, from Python and `@njit`
      code, in every mode); they take their defaults and are "const". One marked "active" or
      "dup" must be passed (an `ArgumentError` names it); `activities` may stop before
      them (they are then "const"). A `d_ret` follows the last argument given (or `d_ret=`).

    `df` compiles lazily per argument types, like `numba.njit`, and can be called from
    Python and from `@njit` code (e.g. an optimisation loop). Exceptions the function raises
    are raised by `df` too.

    `vector_math=True` (default): loops of the derivative that LLVM vectorises call glibc's
    libmvec for sin, cos, exp, log, pow, tanh, ... (x86-64 Linux; elsewhere nothing changes).
    Results may differ from scalar libm by up to 4 ulp; `vector_math=False` keeps scalar libm.

    `cache=True`: each compiled specialisation is also stored on disk, where Numba caches
    the primal (`__pycache__` beside its file, or `NUMBA_CACHE_DIR`), and later processes
    load it instead of compiling, while the primal's code (and the `@njit` functions it
    calls), the activities, the options and the versions of enzyme_py, Numba and llvmlite
    are unchanged. Not for mode="split"; `f` must be defined in a file.

    `checkpoint=True` (reverse mode; off by default; no effect in forward mode, nor in split
    mode, whose caller may change the inputs an iteration re-reads between the halves):
    the reverse of an outermost loop holding loops re-runs each iteration's forward just
    before that iteration's reverse instead of reading a tape kept for all iterations, so
    the tape no longer grows with its trip count, for about one more forward pass of the
    loop. Applied where it is legal and pays: each iteration reads only memory it wrote
    itself or that nothing writes after the loop, writes only local arrays or `out[i]` (i
    the loop counter), and would otherwise tape values; other loops keep their tape (a
    `CheckpointWarning` names each outermost loop holding loops that keeps a tape growing
    with its trip count, by its Python file:line, and why; `enzyme-py inspect --stage tape
    --checkpoint` lists the checkpointed loops; `ir_passes/checkpoint_loops.py`).

    `strong_zero=True` (off by default): a zero tangent or adjoint times an infinite or NaN
    partial gives 0 instead of NaN (Enzyme's strong zero), e.g. the forward tangent of
    `sqrt((a - b)**2)` where `a = b` with zero tangents (padding), or the gradient through
    `w * sqrt(d)` with `w = 0` and `d = 0`. Costs a compare and a select per product.
    Selections (`max`, `min`, `abs`, `math.copysign`, `np.fmax`, a conditional expression)
    never leak the derivative of the operand they did not pick, with or without it; at a tie
    the first operand of min/max gets the derivative, and `abs`'s derivative at 0 is +1.

    mode="split": `fwd, rev`: `fwd` returns `(value, tape)`, `rev` takes the arguments, `d_ret`
      and the tape, and returns the derivative at the values `fwd` saw: what it reads from
      argument arrays is kept in the tape (arrays the function only reads are copied whole),
      unless `unchanged=("x", ...)` names arrays the caller does not change between the
      halves, which `rev` reads again. `rev` raises
      `ArgumentError` when an array's shape (or a strided view's strides) or a scalar
      argument differs from `fwd`'s.

    Errors: `ActivityError` (a ValueError) for a bad specification, raised here, or at the
    first call when it depends on types (e.g. an int passed for an "active" float);
    `ArgumentError` (an ActivityError) at a call whose arguments do not fit: missing
    shadows (named), a shadow with another shape, strides or dtype, a read-only array that
    would be written, or array arguments sharing memory when one of them is written;
    `UnsupportedError` (a NotImplementedError) at the first call for a construct the pass
    cannot differentiate, naming it, its Python file:line and a workaround.
    """
    primal = as_dispatcher(f)
    inner = getattr(primal, "enzyme", None)         # a derivative of a derivative
    spec = parse_spec(primal.py_func, activities, mode, ret, width, return_primal,
                      inner.argument_labels() if inner is not None else None, strong_zero,
                      unchanged)
    name = name or f"d_{primal.py_func.__name__}"
    for option, value in (("vector_math", vector_math), ("cache", cache),
                          ("checkpoint", checkpoint), ("strong_zero", strong_zero)):
        if not isinstance(value, bool):
            raise TypeError(f"{option} must be True or False, not {value!r}")
    if cache and spec.split:
        raise ValueError("cache=True is not supported with mode='split' yet: each process "
                         "compiles its split derivatives")
    specializer = Specializer(primal, name, spec, vector_math, checkpoint)
    params = specializer.wrapper_params()
    if spec.split:
        fwd = _dispatcher(f"{name}_fwd", specializer, specializer.build_forward_half,
                          specializer.forward_half_source, params)
        rev = _dispatcher(f"{name}_rev", specializer, specializer.build_reverse_half,
                          specializer.reverse_half_source, specializer.reverse_half_params(),
                          rest=True)
        return fwd, rev
    d_ret = specializer.d_ret_param()         # reverse mode: optional trailing adjoint
    dispatcher = _dispatcher(name, specializer, specializer.build, specializer.wrapper_source,
                             params + ([d_ret] if d_ret else []))
    if cache:
        _enable_cache(dispatcher, primal, name,
                      (spec, vector_math) + ((True,) if checkpoint else ()))
    return dispatcher


def _enable_cache(dispatcher: Dispatcher, primal: Dispatcher, name: str, parts: tuple) -> None:
    """Store `dispatcher`'s specialisations on disk (`disk_cache`)."""
    try:
        dispatcher._cache = DerivativeCache(dispatcher.py_func, primal.py_func, _ident(name),
                                            lambda: fingerprint(primal, parts))
    except RuntimeError as exc:      # Numba finds no cache directory for the primal's file
        raise ValueError(f"cache=True: {exc} (define the function in a file, or set "
                         "NUMBA_CACHE_DIR)") from None


def _dispatcher(name: str, specializer: Specializer, build, wrapper_source, params: list[str],
                rest: bool = False) -> Dispatcher:
    """The njit dispatcher `name(*params)` (with `*rest` when `rest`) whose body is the
    wrapper `wrapper_source(argtypes)` writes per argument types, calling the derivative
    `build(argtypes)` gives. The wrapper is the dispatcher's compiled body itself: an
    exception leaves it with nothing held, and it is compiled once per signature."""
    call = lazy_intrinsic(f"enzyme_{_ident(name)}", build, deferred=True)
    slots = specializer.slots()
    as_name = name if name.isidentifier() else _ident(name)

    def make_impl(argtypes: tuple):
        # a module name: Numba then pickles the wrapper's globals by reference (disk cache)
        scope = {"__name__": __name__, "__call": call, "__raise_failed": raise_failed,
                 "np": np, **TAPES, **CHECKS, **default_scope(slots.defaults)}
        exec(wrapper_source(argtypes), scope)
        impl = scope["impl"]
        impl.__name__ = impl.__qualname__ = as_name
        return impl

    # defaults None: a call missing arguments reaches the wrapper, which names them
    dispatcher = njit_generated(params, rest, make_impl, as_name)
    dispatcher.enzyme = specializer
    dispatcher.release = specializer.release    # API.md "Memory kept between calls"
    guard_first_calls(dispatcher, name, list(slots.labels), slots.required)
    return dispatcher


def _ident(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    out = out if out and not out[0].isdigit() else "_" + out
    return out + "_" if keyword.iskeyword(out) or out == "__stub" else out


class autodiff:
    """`@autodiff(mode="reverse", args=("dup", "const"), name=None, ret=None,
    return_primal=False, width=1, vector_math=True, cache=False, checkpoint=False,
    strong_zero=False, unchanged=(), **njit_options)`: a primal that knows its derivative.

    Decorates a plain Python function (compiled with `numba.njit(cache=cache,
    **njit_options)`) or an existing njit dispatcher. Calling the result runs the primal;
    `.derivative` is what `derive_diff(f, name or "d_<f>", args, mode, ret=...,
    return_primal=..., width=..., vector_math=..., cache=..., checkpoint=...,
    strong_zero=..., unchanged=...)` returns (see `derive_diff` for activities, calling
    conventions, errors, the on-disk cache, checkpointing and split mode);
    `.inspect(stage)` returns the IR text of a stage ("primal", "preprocessed", "activity",
    "derivative", "optimized") for every signature the derivative was called with so far.
    A bad `args` raises `ActivityError` at decoration time.
    """

    def __init__(self, fn=None, *, mode: str = "reverse", args=None, name: str | None = None,
                 ret=None, return_primal: bool = False, width: int = 1,
                 vector_math: bool = True, cache: bool = False, checkpoint: bool = False,
                 strong_zero: bool = False, unchanged: tuple[str, ...] = (),
                 **njit_options) -> None:
        self._options = dict(mode=mode, args=args, name=name, ret=ret,
                             return_primal=return_primal, width=width, vector_math=vector_math,
                             cache=cache, checkpoint=checkpoint, strong_zero=strong_zero,
                             unchanged=unchanged)
        self._njit_options = njit_options
        self.primal = None
        self.derivative = None
        if fn is not None:
            self._bind(fn)

    def _bind(self, fn) -> None:
        o = self._options
        if o["args"] is None:
            raise ActivityError("@autodiff needs args=(...) with one activity per parameter")
        self.primal = fn if isinstance(fn, Dispatcher) else \
            njit(cache=o["cache"], **self._njit_options)(fn)
        pyname = self.primal.py_func.__name__
        self.derivative = derive_diff(self.primal, o["name"] or f"d_{pyname}", o["args"],
                                      o["mode"], ret=o["ret"], return_primal=o["return_primal"],
                                      width=o["width"], vector_math=o["vector_math"],
                                      cache=o["cache"], checkpoint=o["checkpoint"],
                                      strong_zero=o["strong_zero"],
                                      unchanged=o["unchanged"])
        functools.update_wrapper(self, self.primal.py_func)

    def __call__(self, *args):
        if self.primal is None:          # used as @autodiff(...) with options
            (fn,) = args
            self._bind(fn)
            return self
        return self.primal(*args)

    def inspect(self, stage: str = "derivative") -> str:
        return self.derivative.enzyme.inspect(stage)  # type: ignore[union-attr]

    @property
    def _numba_type_(self):
        """How Numba types this object: as its primal, so `@njit` code can call it."""
        if self.primal is None:
            raise TypeError("@autodiff(...) was not applied to a function")
        return self.primal._numba_type_


def as_dispatcher(f) -> Dispatcher:
    """`f` as a Numba dispatcher: a dispatcher, an `@autodiff` object's primal, or njit(f)."""
    if isinstance(f, autodiff):
        return f.primal
    return f if isinstance(f, Dispatcher) else njit(f)


__all__ = ["as_dispatcher", "autodiff", "derive_diff"]
