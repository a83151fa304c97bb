"""The derivative of a call to a function with registered rules: calls to the user's compiled
`@njit` rules in Numba's ABI (`i32 rule(ptr retptr, ptr excinfo, exploded args...)`).

A call to `f(x, a, n)` (float `x`, float array `a`, integer `n`) in the primal is
`call i32 @f(ptr %ret, ptr %exc, double %x, <7 arguments of a>, i64 %n)`; the value lands in
`%ret`. Forward mode calls `f_fwd(x, t_x, a, t_a, n)` once per lane and stores the tangent
(the second element of its result) in the shadow of `%ret`. Reverse mode reads and zeroes the
adjoint in `%ret`'s shadow, calls `f_rev(x, a, d_a, n, d_ret)`, which accumulates into `d_a`,
and adds the gradients it returns to the adjoints of the float arguments. Arrays are passed
without their owner (null meminfo and parent): the rules only see the memory. An inactive
argument gets a zero tangent or a zeroed scratch shadow, freed after the call. A rule may
raise (it may call `f` itself, compiled with Numba's default error model, where a division by
zero raises): its status and exception are handed to the derivative's `deferred_raise`, and
the derivative raises that exception when it returns, as the primal would have.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from numba import types
from numba.core import errors
from numba.core.dispatcher import Dispatcher

from ir_passes.diff.shadows import allocate_raw_shadow, free_raw
from ir_passes.ir.builder import declare
from ir_passes.ir.parser import parse_type
from ir_passes.ir.types import I32, PTR, Type
from ir_passes.ir.values import Constant, Instruction, Value, zero
from ir_passes.known.array_layout import DATA, ITEMSIZE, MEMINFO, NITEMS, PARENT
from ir_passes.known.model import CallContext, ForwardCalls, ReverseCalls

from .link import llvm_abi

_NULL = Constant(PTR, "null")


@dataclass(frozen=True)
class Param:
    """A parameter of `f` and the operand positions of its exploded arguments in the call."""
    name: str
    numba_type: Any
    positions: tuple[int, ...]

    @property
    def kind(self) -> str:
        """"float" (has a tangent/gradient), "array" (float array: has a shadow), "const"
        (integers, booleans, integer arrays), or "unsupported"."""
        t = self.numba_type
        if isinstance(t, types.Float):
            return "float"
        if isinstance(t, types.Array):
            return "array" if isinstance(t.dtype, types.Float) else "const"
        if isinstance(t, (types.Integer, types.Boolean)):
            return "const"
        return "unsupported"


def call_params(names, argtypes, restype) -> tuple[Param, ...]:
    groups, _ = llvm_abi(argtypes, restype)
    params, index = [], 2
    for name, t, group in zip(names, argtypes, groups):
        params.append(Param(name, types.unliteral(t), tuple(range(index, index + len(group)))))
        index += len(group)
    return tuple(params)


@dataclass(frozen=True)
class CompiledRule:
    symbol: str
    out_type: Type              # LLVM type of the rule's result slot
    library: Any


@dataclass(frozen=True)
class CustomCall:
    """The emitters of calls to one compiled signature of a registered function."""
    function: Dispatcher
    forward_rule: Dispatcher | None
    reverse_rule: Dispatcher | None
    params: tuple[Param, ...]
    restype: Any
    libraries: dict                  # rule symbol -> code library, shared with the linker
    written: tuple[Param, ...] = ()  # array parameters the function may write

    @property
    def name(self) -> str:
        return self.function.py_func.__qualname__

    def check(self, ctx: CallContext, inst: Instruction) -> None:
        if not isinstance(self.restype, types.Float):
            raise ctx.diag.unsupported(
                f"call to {self.name}, which has a registered derivative but returns "
                f"{self.restype}", inst, "register_derivative supports functions returning "
                "a float: return the value instead of writing it into an array")
        if self.written:
            raise ctx.diag.unsupported(
                f"call to {self.name}, which has a registered derivative and may write its "
                f"array argument {self.written[0].name}", inst, "register_derivative supports "
                "functions that only read their arrays: return the value instead")
        odd = next((p for p in self.params if p.kind == "unsupported"), None)
        if odd is not None:
            raise ctx.diag.unsupported(
                f"call to {self.name}, which has a registered derivative, with the argument "
                f"{odd.name} of type {odd.numba_type}", inst, "register_derivative supports "
                "float, integer and boolean scalars and arrays")

    # ------------------------------------------------------------------ forward
    def forward(self, ctx: ForwardCalls, inst: Instruction) -> None:
        rule = self._compiled(ctx, inst, "forward", self.forward_rule, self._forward_types())
        fn = declare(ctx.module, rule.symbol, I32, [PTR, PTR, *self._rule_arg_types(inst, "forward")])
        out, exc = ctx.entry_alloca(rule.out_type), ctx.entry_alloca(PTR)
        for lane in range(ctx.width):
            args: list[Value] = [out, exc]
            scratch: list[Value] = []
            for p in self.params:
                args += self._primal_args(ctx, inst, p)
                if p.kind == "float":
                    args.append(_lane(ctx, ctx.tangent(inst.operands[p.positions[0]]), lane))
                elif p.kind == "array":
                    args += self._shadow_args(ctx, inst, p, scratch, lane)
            ctx.deferred_raise().note(ctx.b, ctx.b.call(fn, args, I32), exc)
            tangent = ctx.b.extractvalue(ctx.b.load(rule.out_type, out), (1,))
            ctx.b.store(tangent, ctx.shadow(inst.operands[0], lane))
            for buffer in scratch:
                free_raw(ctx.b, ctx.module, buffer)

    def _forward_types(self) -> tuple:
        out = []
        for p in self.params:
            out += [p.numba_type] * (2 if p.kind in ("float", "array") else 1)
        return tuple(out)

    # ------------------------------------------------------------------ reverse
    def reverse(self, ctx: ReverseCalls, inst: Instruction) -> None:
        rule = self._compiled(ctx, inst, "reverse", self.reverse_rule, self._reverse_types())
        b, t = ctx.b, self._ret_type()
        fn = declare(ctx.module, rule.symbol, I32,
                     [PTR, PTR, *self._rule_arg_types(inst, "reverse"), t])
        seed_slot = ctx.shadow(inst.operands[0])
        seed = b.load(t, seed_slot)
        b.store(zero(t), seed_slot)
        out, exc = ctx.entry_alloca(rule.out_type), ctx.entry_alloca(PTR)
        args: list[Value] = [out, exc]
        scratch: list[Value] = []
        for p in self.params:
            args += self._primal_args(ctx, inst, p)
            if p.kind == "array":
                args += self._shadow_args(ctx, inst, p, scratch, None)
        ctx.deferred_raise().note(b, b.call(fn, [*args, seed], I32), exc)
        grads = b.load(rule.out_type, out)
        floats = [p for p in self.params if p.kind == "float"]
        for k, p in enumerate(floats):
            ctx.add_adjoint(inst.operands[p.positions[0]], b.extractvalue(grads, (k,)))
        for buffer in scratch:
            free_raw(b, ctx.module, buffer)

    def _reverse_types(self) -> tuple:
        out = []
        for p in self.params:
            out += [p.numba_type] * (2 if p.kind == "array" else 1)
        return (*out, self.restype)

    def _ret_type(self) -> Type:
        return parse_type(llvm_abi((), self.restype)[1])

    # ------------------------------------------------------------------ arguments
    def _rule_arg_types(self, inst: Instruction, mode: str) -> list[Type]:
        """LLVM types of the rule's arguments (forward: with the tangents of floats and
        arrays; reverse: with the shadows of arrays), without the result seed."""
        out: list[Type] = []
        for p in self.params:
            mine = [inst.operands[i].type for i in p.positions]
            out += mine
            if p.kind == "array" or p.kind == "float" and mode == "forward":
                out += mine
        return out

    @staticmethod
    def _primal_args(ctx, inst: Instruction, p: Param) -> list[Value]:
        values = [ctx.value(inst.operands[i]) for i in p.positions]
        if isinstance(p.numba_type, types.Array):      # the memory only, not its owner
            values[MEMINFO] = values[PARENT] = _NULL
        return values

    @staticmethod
    def _shadow_args(ctx, inst: Instruction, p: Param, scratch: list[Value],
                     lane: int | None) -> list[Value]:
        values = [ctx.value(inst.operands[i]) for i in p.positions]
        values[MEMINFO] = values[PARENT] = _NULL
        data = inst.operands[p.positions[DATA]]
        if ctx.has_shadow(data):
            values[DATA] = ctx.shadow(data) if lane is None else ctx.shadow(data, lane)
        else:
            size = ctx.b.mul(values[NITEMS], values[ITEMSIZE])
            values[DATA] = allocate_raw_shadow(ctx.b, ctx.module, size)
            scratch.append(values[DATA])
        return values

    # ------------------------------------------------------------------ rules
    def _compiled(self, ctx: CallContext, inst: Instruction, mode: str,
                  rule: Dispatcher | None, argtypes: tuple) -> CompiledRule:
        if rule is None:
            raise ctx.diag.unsupported(
                f"{mode} mode through {self.name}, whose registered derivative has no "
                f"{mode} rule", inst, f"pass {mode}= to enzyme_py.register_derivative")
        label = f"the {mode} rule {rule.py_func.__qualname__}{_signature(argtypes)}"
        count = rule.py_func.__code__.co_argcount
        if count != len(argtypes):
            raise ctx.diag.unsupported(
                f"the {mode} rule {rule.py_func.__qualname__} takes {count} parameters; for "
                f"{self.name}{_signature(tuple(p.numba_type for p in self.params))} it takes "
                f"{len(argtypes)}: {self._convention(mode)}", inst, _CONVENTIONS)
        try:
            rule.compile(argtypes)
        except errors.NumbaError as exc:
            raise ctx.diag.unsupported(f"{label} does not compile: "
                                       f"{_first_line(exc)}", inst, _CONVENTIONS) from None
        cres = rule.overloads[argtypes]
        expected = self._expected_result(mode)
        if cres.signature.return_type != expected:
            raise ctx.diag.unsupported(f"{label} returns {cres.signature.return_type}, "
                                       f"expected {expected}", inst, _CONVENTIONS)
        symbol = cres.fndesc.llvm_func_name
        self.libraries[symbol] = cres.library
        out_type = parse_type(llvm_abi((), expected)[1])
        return CompiledRule(symbol, out_type, cres.library)

    def _convention(self, mode: str) -> str:
        names = []
        for p in self.params:
            names.append(p.name)
            if p.kind == "array" or p.kind == "float" and mode == "forward":
                names.append(("t_" if mode == "forward" else "d_") + p.name)
        return "(" + ", ".join(names + ([] if mode == "forward" else ["d_ret"])) + ")"

    def _expected_result(self, mode: str):
        if mode == "forward":
            return types.UniTuple(self.restype, 2)
        floats = [p.numba_type for p in self.params if p.kind == "float"]
        return types.Tuple(tuple(floats)) if len(set(floats)) != 1 \
            else types.UniTuple(floats[0], len(floats))


_CONVENTIONS = ("see enzyme_py.register_derivative: f_fwd(x, t_x, ...) returns (value, "
                "tangent); f_rev(x, d_x (arrays only), ..., d_ret) returns the tuple of the "
                "gradients of f's float parameters")


def _lane(ctx: ForwardCalls, tangent: Value, lane: int) -> Value:
    return tangent if ctx.width == 1 else ctx.b.extractelement(tangent, lane)


def _signature(argtypes: tuple) -> str:
    return "(" + ", ".join(str(t) for t in argtypes) + ")"


def _first_line(exc: Exception) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__
