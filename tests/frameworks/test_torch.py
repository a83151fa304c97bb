"""enzyme_py.torch.function: our compiled derivatives inside PyTorch autograd."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install '.[torch]')")

import enzyme_py.torch as et  # noqa: E402
from tests.frameworks.kernels import (fit_loss, fit_loss_np,  # noqa: E402
                                      scaled_pair, softmax, softmax_np)
from tests.support.gradcheck import fd_gradient  # noqa: E402

_loss = et.function(fit_loss)
_softmax = et.function(softmax)


def _data(requires_grad=True):
    x = torch.linspace(-1.0, 1.0, 7, dtype=torch.float64)
    w = torch.tensor([0.7, -0.3], dtype=torch.float64)
    y = torch.sin(2 * x)
    return [t.clone().requires_grad_(requires_grad) for t in (w, x, y)]


def test_backward_matches_torch_and_finite_differences():
    ours, theirs = _data(), _data()
    _loss(*ours).backward()
    fit_loss_np(*theirs, xp=torch).backward()
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-10, atol=1e-12)
    plain = [t.detach().numpy() for t in ours]
    np.testing.assert_allclose(ours[0].grad.numpy(), fd_gradient(fit_loss, tuple(plain))[0],
                               rtol=1e-6)


def test_gradcheck_backward_and_forward_ad():
    args = tuple(_data())
    assert torch.autograd.gradcheck(_loss, args, check_forward_ad=True)
    z = torch.tensor([0.2, -1.0, 0.5, 2.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(_softmax, (z,), check_forward_ad=True)


def test_torch_func_transforms():
    w, x, y = (t.detach() for t in _data(False))
    g = torch.func.grad(lambda v: _loss(v, x, y))(w)
    ref = torch.func.grad(lambda v: fit_loss_np(v, x, y, xp=torch))(w)
    torch.testing.assert_close(g, ref, rtol=1e-10, atol=1e-12)
    t = torch.tensor([0.3, -1.2], dtype=torch.float64)
    _, tangent = torch.func.jvp(lambda v: _loss(v, x, y), (w,), (t,))
    torch.testing.assert_close(tangent, torch.dot(g, t), rtol=1e-10, atol=1e-12)
    z = torch.tensor([0.2, -1.0, 0.5, 2.0], dtype=torch.float64)
    expected = torch.func.jacrev(lambda v: softmax_np(v, xp=torch))(z)
    torch.testing.assert_close(torch.func.jacrev(_softmax)(z), expected)
    torch.testing.assert_close(torch.func.jacfwd(_softmax)(z), expected)


def test_tuple_result_and_float_argument():
    x = torch.tensor([1.0, 2.0, -0.5], dtype=torch.float64, requires_grad=True)
    a, b = et.function(scaled_pair)(x, 1.5)
    (torch.sum(a * a) + 3.0 * b).backward()
    torch.testing.assert_close(x.grad, 2 * 1.5 ** 2 * x.detach() + 6.0 * x.detach())


def test_second_derivatives_are_refused_with_a_clear_error():
    w, x, y = _data()
    (g,) = torch.autograd.grad(_loss(w, x, y), (w,), create_graph=True)
    with pytest.raises(NotImplementedError, match="second derivatives through enzyme_py.torch"):
        g.sum().backward()
