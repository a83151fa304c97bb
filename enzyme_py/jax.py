"""enzyme_py functions as JAX functions: `primitive(f, out=None, mode="reverse")`.

The primal and its derivatives run our compiled code on the host through
`jax.pure_callback`, so the result works under `jax.jit` and `jax.vmap` (sequentially).
mode="reverse" (the default) gives a custom VJP: `jax.grad`, `jax.vjp`, `jax.jacrev`.
mode="forward" gives a custom JVP: `jax.jvp`, `jax.jacfwd`. JAX cannot transpose a host
callback, so each mode supports only its own direction; asking for the other is JAX's error.
Needs the optional extra: `pip install "enzyme_py[jax]"`.
"""
from __future__ import annotations

try:
    import jax
    import jax.numpy as jnp
except ImportError as exc:      # pragma: no cover - depends on the environment
    raise ImportError("enzyme_py.jax needs JAX: pip install 'enzyme_py[jax]' "
                      "(or pip install jax)") from exc
import numpy as np

from ir_passes.errors import ActivityError

from .host_derivatives import HostDerivatives


def primitive(f, out=None, mode: str = "reverse"):
    """A JAX function computing `f` (a Python or `numba.njit` function of float arrays and
    scalars), differentiated by enzyme_py.

    out: the result's shape and dtype, a `jax.ShapeDtypeStruct` (or a tuple of them), or a
      function of the inputs' `ShapeDtypeStruct`s returning one; None means a float scalar
      of the first float input's dtype (a loss).
    mode: "reverse" (`jax.grad`, `jax.vjp`, `jax.jacrev`) or "forward" (`jax.jvp`,
      `jax.jacfwd`). Float array inputs are differentiated ("dup"), float scalars too;
      integer inputs are constants.
    """
    if mode not in ("reverse", "forward"):
        raise ActivityError(f"mode must be 'reverse' or 'forward', not {mode!r}")
    host = HostDerivatives(f)

    def result_type(args):
        structs = tuple(jax.ShapeDtypeStruct(jnp.shape(a), jnp.result_type(a)) for a in args)
        if callable(out):
            return out(*structs)
        if out is not None:
            return out
        floats = [s.dtype for s in structs if jnp.issubdtype(s.dtype, jnp.floating)]
        return jax.ShapeDtypeStruct((), floats[0] if floats else jnp.float32)

    def run(result, compute, *args):
        def on_host(*host_args):
            return _cast(compute(*jax.tree.map(np.asarray, host_args)), result)
        return jax.pure_callback(on_host, result, *args, vmap_method="sequential")

    def value(*args):
        return run(result_type(args), lambda *a: host.value(a), *args)

    if mode == "reverse":
        fun = jax.custom_vjp(value)

        def fwd(*args):
            return value(*args), args

        def bwd(args, cotangent):
            grads_type = tuple(jax.ShapeDtypeStruct(jnp.shape(a), jnp.result_type(a))
                               for a in args)
            grads = run(grads_type, lambda a, c: _zeros_for_none(host.vjp(a, c), a),
                        args, cotangent)
            return tuple(g if _is_float(a) else None for g, a in zip(grads, args))

        fun.defvjp(fwd, bwd)
    else:
        fun = jax.custom_jvp(value)

        @fun.defjvp
        def jvp(args, tangents):
            result = result_type(args)
            floats = tuple(t if _is_float(a) else jnp.zeros(jnp.shape(a)) for a, t in
                           zip(args, tangents))
            # the value in its own callback: under vmap (jax.jacfwd) only the tangent varies
            tangent = run(result, lambda a, t: host.jvp(a, t)[1], args, floats)
            return value(*args), tangent

    fun.__name__ = getattr(host.primal.py_func, "__name__", "primitive")
    fun.__doc__ = host.primal.py_func.__doc__
    return fun


def _is_float(a) -> bool:
    return jnp.issubdtype(jnp.result_type(a), jnp.floating)


def _zeros_for_none(grads: tuple, args: tuple) -> tuple:
    return tuple(np.zeros(np.shape(a), np.asarray(a).dtype) if g is None else g
                 for g, a in zip(grads, args))


def _cast(value, result):
    """`value` (floats, arrays, tuples) in the exact dtypes and shapes JAX expects."""
    if isinstance(result, (tuple, list)):
        return type(result)(_cast(v, r) for v, r in zip(value, result))
    return np.asarray(value, dtype=result.dtype).reshape(result.shape)


__all__ = ["primitive"]
