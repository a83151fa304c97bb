"""Errors of a derivative's first call with new argument types, as the user should see them.

A call from Python with new argument types compiles a specialisation (Numba's
`Dispatcher._compile_for_args`); our errors raised while typing it (bad activities for these
types, ill-fitting arguments, an unsupported construct) would otherwise reach the user at the
end of Numba's chained tracebacks, some wrapped in a `TypingError`. `guard_first_calls` names
missing arguments and re-raises our own error alone, from the call. Calls from `@njit` code
are typed by Numba directly and unaffected. The compile runs with the garbage collector
paused (`collector`).
"""
from __future__ import annotations

from numba.core.dispatcher import OmittedArg
from numba.core.errors import TypingError

from ir_passes.errors import ArgumentError, EnzymePyError

from .collector import paused

__all__ = ["guard_first_calls"]


def guard_first_calls(dispatcher, name: str, labels: list[str],
                      required: int | None = None) -> None:
    """Make `dispatcher`'s compile-on-call path name missing arguments (its parameters
    default to None so that a short call gets here; the first `required` labels, all by
    default, must be given) and raise our errors without Numba's."""
    compile_for_args = dispatcher._compile_for_args
    required = len(labels) if required is None else required

    def checked_compile_for_args(*args, **kws):
        given = sum(not isinstance(a, OmittedArg) for a in args)
        if given < required:
            raise ArgumentError(f"{name} expected {len(labels)} arguments ({', '.join(labels)}"
                                f"), got {given}: missing {', '.join(labels[given:])}")
        try:
            with paused():
                return compile_for_args(*args, **kws)
        except (EnzymePyError, TypingError) as exc:
            ours = _our_error(exc)
            if ours is None:
                raise
            raise ours.with_traceback(None) from None

    dispatcher._compile_for_args = checked_compile_for_args


def _our_error(exc: BaseException) -> EnzymePyError | None:
    """`exc` itself if it is ours, else the first of ours among its causes and contexts."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, EnzymePyError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None
