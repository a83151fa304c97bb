"""enzyme_py functions as PyTorch functions: `function(f)`.

The result is a `torch.autograd.Function`'s `apply`: the primal runs our compiled code on
the tensors' data (on the CPU), `backward` runs the reverse derivative (`loss.backward()`,
`torch.autograd.grad`) and `jvp` the forward derivative (`torch.func.jvp`'s forward-mode AD
through `torch.autograd.forward_ad`). The derivatives are not themselves differentiable by
PyTorch (`create_graph=True` second derivatives raise). Needs the optional extra:
`pip install "enzyme_py[torch]"`.
"""
from __future__ import annotations

try:
    import torch
except ImportError as exc:      # pragma: no cover - depends on the environment
    raise ImportError("enzyme_py.torch needs PyTorch: pip install 'enzyme_py[torch]' "
                      "(or pip install torch)") from exc
import numpy as np

from .host_derivatives import HostDerivatives


def function(f):
    """A PyTorch function computing `f` (a Python or `numba.njit` function of float arrays
    and scalars) whose gradients (and forward-mode tangents) come from enzyme_py. Tensor
    inputs are passed to `f` as NumPy arrays (0-d tensors as floats); float tensors are
    differentiated, integer tensors and Python numbers are constants. `f` returns a float,
    an array or a tuple of them; the result is a tensor or a tuple of tensors."""
    host = HostDerivatives(f)
    vjp_of, jvp_of = _vjp_function(host), _jvp_function(host)

    class EnzymeFunction(torch.autograd.Function):
        @staticmethod
        def forward(*args):
            value = host.value(_host_args(args))
            like = next((a for a in args if isinstance(a, torch.Tensor)), None)
            return _to_torch(value, like)

        @staticmethod
        def setup_context(ctx, inputs, output):
            tensors = [a for a in inputs if isinstance(a, torch.Tensor)]
            ctx.save_for_backward(*tensors)
            ctx.save_for_forward(*tensors)
            ctx.template = [None if isinstance(a, torch.Tensor) else a for a in inputs]
            ctx.result_is_tuple = isinstance(output, tuple)

        vmap = _sequential_vmap(lambda *a: EnzymeFunction.apply(*a))

        @staticmethod
        def backward(ctx, *cotangents):
            args = _inputs(ctx, ctx.saved_tensors)
            cot = cotangents if ctx.result_is_tuple else cotangents[0]
            return vjp_of(len(args), ctx.result_is_tuple, *args, *_as_tuple(cot))

        @staticmethod
        def jvp(ctx, *tangents):
            args = _inputs(ctx, ctx.saved_tensors)
            zeros = [torch.zeros_like(a) if t is None and isinstance(a, torch.Tensor) else t
                     for a, t in zip(args, tangents)]
            return jvp_of(len(args), *args, *zeros)

    def apply(*args):
        return EnzymeFunction.apply(*args)

    apply.__name__ = host.primal.py_func.__name__
    apply.__doc__ = host.primal.py_func.__doc__
    return apply


def _vjp_function(host: HostDerivatives):
    """(n, tuple_result, *args, *cotangents) -> the cotangents of the args, computed by the
    reverse derivative."""
    def vjp(n, tuple_result, *rest):
        args, cot = rest[:n], tuple(_host_args(rest[n:]))
        grads = host.vjp(_host_args(args), cot if tuple_result else cot[0])
        return tuple(None if g is None or not isinstance(a, torch.Tensor)
                     else torch.as_tensor(np.asarray(g), dtype=a.dtype, device=a.device)
                     for g, a in zip(grads, args))
    return _host_function("EnzymeVJP", vjp)


def _jvp_function(host: HostDerivatives):
    """(n, *args, *tangents) -> the tangent of the result, by the forward derivative."""
    def jvp(n, *rest):
        args, tangents = rest[:n], rest[n:]
        host_t = tuple(np.zeros(np.shape(a)) if t is None else t
                       for a, t in zip(args, _host_args(tangents)))
        _, tangent = host.jvp(_host_args(args), host_t)
        return _to_torch(tangent, next((a for a in args if isinstance(a, torch.Tensor)), None))
    return _host_function("EnzymeJVP", jvp)


def _host_function(name: str, compute):
    """`compute` as a Function of its own, so that PyTorch's transforms (torch.func) hand it
    plain tensors; it is not differentiable again."""
    def backward(ctx, *_):
        raise _second_order()

    cls = type(name, (torch.autograd.Function,), {
        "forward": staticmethod(compute),
        "setup_context": staticmethod(lambda ctx, inputs, output: None),
        "backward": staticmethod(backward)})
    cls.vmap = _sequential_vmap(lambda *a: cls.apply(*a))
    return lambda *a: cls.apply(*a)


def _sequential_vmap(apply):
    """A `vmap` rule for torch.func (jacrev, jacfwd, vmap): one call per batch entry."""

    def vmap(info, in_dims, *args):
        outs = [apply(*(a.select(d, k) if d is not None else a for a, d in zip(args, in_dims)))
                for k in range(info.batch_size)]
        if isinstance(outs[0], tuple):
            stacked = tuple(None if first is None else torch.stack([o[i] for o in outs])
                            for i, first in enumerate(outs[0]))
            return stacked, tuple(None if r is None else 0 for r in stacked)
        return torch.stack(outs), 0

    return staticmethod(vmap)


def _second_order() -> NotImplementedError:
    return NotImplementedError("second derivatives through enzyme_py.torch are not supported: "
                               "differentiate a derivative with enzyme_py itself "
                               "(derive_diff of a function calling the derivative)")


def _as_tuple(x) -> tuple:
    return x if isinstance(x, tuple) else (x,)


def _inputs(ctx, tensors) -> list:
    """The forward's arguments again: saved tensors back in their places."""
    it = iter(tensors)
    return [next(it) if a is None else a for a in ctx.template]


def _host_args(args) -> tuple:
    return tuple(a.detach().cpu().numpy() if isinstance(a, torch.Tensor) else a for a in args)


def _to_torch(value, like):
    if isinstance(value, tuple):
        return tuple(_to_torch(v, like) for v in value)
    out = torch.as_tensor(np.asarray(value))
    return out if like is None else out.to(device=like.device)


__all__ = ["function"]
