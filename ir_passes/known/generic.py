"""Records of the functions any front end's IR may call: LLVM's memory intrinsics and the
intrinsics with no effect on derivatives. Registered when `ir_passes.known` is imported.

`llvm.memcpy` / `llvm.memmove` move values: the tangent is the same copy of the shadows; the
adjoint adds the destination's adjoint to the source's and zeroes it (`d_src += d_dst; d_dst
= 0`, element by element in a small internal function: the intrinsic only knows bytes, the
element type comes from how the function accesses the memory; a `memmove` whose destination
lies before its source runs that loop from the end). `llvm.memset` writes
constants: the destination's shadow is zeroed in both modes. `TAPE_ALLOCATE` allocates the
tape of a derivative being differentiated (a raw buffer).
"""
from __future__ import annotations

from ..ir.builder import Builder, counted_loop, declare
from ..ir.types import I1, I8, I64, PTR, VOID, FloatType, FunctionType, size_of
from ..ir.values import FALSE, Block, Function, Instruction, Module, Value, const_int, zero
from .growable_types import growable_float_type
from .memory import MEMORY_INTRINSICS, TAPE_ALLOCATE, is_tape_memory, memory_intrinsic_kind
from .model import CallContext, Flow, ForwardCalls, KnownCall, ReverseCalls, Role, register

_INERT = ("llvm.lifetime.", "llvm.assume", "llvm.experimental.noalias.scope.decl", "llvm.dbg.",
          "llvm.invariant.", "llvm.prefetch")


def _check_memory(ctx: CallContext, inst: Instruction) -> None:
    dst = inst.operands[0]
    if not ctx.has_shadow(dst):
        raise ctx.diag.unsupported(f"'{inst.callee_name}' copies active values into memory "
                                   f"without a shadow ({ctx.describe(dst)})", inst)


def _forward_memory(ctx: ForwardCalls, inst: Instruction) -> None:
    """The same copy between the shadows (a memset of the destination's shadow when the
    source has none or the intrinsic is a memset), once per lane."""
    name = inst.callee_name or ""
    dst, src = inst.operands[0], inst.operands[1]
    rest = [ctx.value(op) for op in inst.operands[2:]]
    copy = memory_intrinsic_kind(name) == "copy" and ctx.has_shadow(src)
    for j in range(ctx.width):
        sdst = ctx.shadow(dst, j)
        if copy:
            ctx.b.call(ctx.module.functions[name], [sdst, ctx.shadow(src, j), *rest], inst.type)
        else:
            zero_memory(ctx.b, ctx.module, sdst, rest[0], rest[-1])


def _reverse_memory(ctx: ReverseCalls, inst: Instruction) -> None:
    """memset: the shadow is zeroed; memcpy/memmove: d_src += d_dst, then d_dst = 0."""
    dst, src = inst.operands[0], inst.operands[1]
    length = ctx.value(inst.operands[2])
    if memory_intrinsic_kind(inst.callee_name or "") == "copy" and ctx.has_shadow(src):
        if is_tape_memory(dst):
            _move_tape_adjoints(ctx, ctx.shadow(src), ctx.shadow(dst), length)
            return
        t = ctx.element_type(dst) or ctx.element_type(src) or _list_element(inst)
        if t is None:
            raise ctx.diag.unsupported("memory copy of active data whose element type is "
                                       "unknown", inst, "copy the array with an explicit loop")
        move = "memmove" in (inst.callee_name or "")
        ctx.b.call((move_adjoint_function if move else copy_adjoint_function)(ctx.module, t),
                   [ctx.shadow(src), ctx.shadow(dst), length], VOID)
        return
    zero_memory(ctx.b, ctx.module, ctx.shadow(dst), length, FALSE)


def _list_element(inst: Instruction) -> FloatType | None:
    """A copy inside a list's storage: the float type its items are accessed as."""
    fn = inst.block.function if inst.block is not None else None
    if fn is None:
        return None
    return growable_float_type(fn, inst.operands[0]) or growable_float_type(fn, inst.operands[1])


def _move_tape_adjoints(ctx: ReverseCalls, d_old: Value, d_new: Value, length: Value) -> None:
    """A tape grown into a new buffer: the adjoints of its slots (of any width and alignment,
    see `tape.slot_bytes`) move bit for bit to the old buffer's, all zero before the move
    (nothing touches the old buffer after the copy); the new buffer's are zeroed."""
    memcpy = declare(ctx.module, "llvm.memcpy.p0.p0.i64", VOID, [PTR, PTR, I64, I1])
    ctx.b.call(memcpy, [d_old, d_new, length, FALSE], VOID)
    zero_memory(ctx.b, ctx.module, d_new, length, FALSE)


def zero_memory(b: Builder, module: Module, ptr: Value, size: Value, volatile: Value) -> None:
    memset = declare(module, "llvm.memset.p0.i64", VOID, [PTR, I8, I64, I1])
    b.call(memset, [ptr, const_int(I8, 0), size, volatile], VOID)


def copy_adjoint_function(module: Module, t: FloatType) -> Function:
    """`void copy_adjoint(ptr d_src, ptr d_dst, i64 bytes)`: d_src += d_dst; d_dst = 0."""
    name = f"enzyme_py.copy_adjoint.{t}"
    fn = module.functions.get(name)
    if fn is not None:
        return fn
    fn = Function(name, FunctionType(VOID, (PTR, PTR, I64)), ["d_src", "d_dst", "bytes"],
                  linkage="internal")
    d_src, d_dst, nbytes = fn.args

    def accumulate(b: Builder, i: Value) -> None:
        dst_at, src_at = b.gep(t, d_dst, [i]), b.gep(t, d_src, [i])
        b.store(b.fadd(b.load(t, src_at), b.load(t, dst_at)), src_at)
        b.store(zero(t), dst_at)

    b = Builder(fn.add_block("entry"))
    counted_loop(b, b.binop("udiv", nbytes, const_int(I64, size_of(t))), accumulate)
    b.ret()
    module.add_function(fn)
    return fn


def move_adjoint_function(module: Module, t: FloatType) -> Function:
    """The adjoint of `llvm.memmove`, whose ranges may overlap: `copy_adjoint`'s element loop,
    run from the end when the destination lies before the source (and nothing when both are
    the same memory), so that no adjoint is read after being moved."""
    name = f"enzyme_py.move_adjoint.{t}"
    fn = module.functions.get(name)
    if fn is not None:
        return fn
    copy = copy_adjoint_function(module, t)
    fn = Function(name, FunctionType(VOID, (PTR, PTR, I64)), ["d_src", "d_dst", "bytes"],
                  linkage="internal")
    d_src, d_dst, nbytes = fn.args
    b = Builder(fn.add_block("entry"))
    n = b.binop("udiv", nbytes, const_int(I64, size_of(t)))
    forward, backward = fn.add_block("ascending"), fn.add_block("overlap")
    done = fn.add_block("finished")
    before = b.icmp("ult", b.cast("ptrtoint", d_dst, I64), b.cast("ptrtoint", d_src, I64))
    same = b.icmp("eq", d_dst, d_src)
    b.cbr(same, done, backward)
    b.position_at_end(backward)
    b.cbr(before, _descending(fn, b, t, d_src, d_dst, n, done), forward)
    b.position_at_end(forward)
    b.call(copy, [d_src, d_dst, nbytes], VOID)
    b.br(done)
    b.position_at_end(done)
    b.ret()
    module.add_function(fn)
    return fn


def _descending(fn: Function, b: Builder, t: FloatType, d_src: Value, d_dst: Value, n: Value,
                done: Block) -> Block:
    """A block running `d_src[k] += d_dst[k]; d_dst[k] = 0` for k = n-1 down to 0."""
    saved = b.block
    start = fn.add_block("from_end")
    b.position_at_end(start)

    def accumulate(b: Builder, i: Value) -> None:
        k = b.sub(b.sub(n, const_int(I64, 1)), i)
        dst_at, src_at = b.gep(t, d_dst, [k]), b.gep(t, d_src, [k])
        b.store(b.fadd(b.load(t, src_at), b.load(t, dst_at)), src_at)
        b.store(zero(t), dst_at)

    counted_loop(b, n, accumulate)
    b.br(done)
    b.position_at_end(saved)
    return start


def _memory_intrinsic(name: str, copy: bool) -> KnownCall:
    return KnownCall(name, prefix=True, pointer_neutral=True, writes=(0,),
                     flow=Flow(0, (1,), raw=True) if copy else None, check=_check_memory,
                     forward=_forward_memory, reverse=_reverse_memory)


register(*(KnownCall(name, prefix=True, inert=True, pointer_neutral=True) for name in _INERT),
         *(_memory_intrinsic(f"llvm.{kind}.", copy=effect == "copy")
           for kind, effect in MEMORY_INTRINSICS.items()),
         # Saving and restoring the stack pointer writes no memory a value lives in.
         *(KnownCall(f"llvm.{name}", prefix=True, pointer_neutral=True, writes=())
           for name in ("stacksave", "stackrestore")),
         # A prefix record: `runtime_call(Role.RAW_ALLOC)` stays the front end's allocator.
         KnownCall(TAPE_ALLOCATE, prefix=True, fresh=True, role=Role.RAW_ALLOC))
