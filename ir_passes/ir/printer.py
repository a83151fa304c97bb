"""`Module` / `Function` objects -> LLVM 22 assembly text. The only place IR text is written.

Names: values keep their names where unique; unnamed or clashing values get fresh names, so
passes can create values freely. Names outside LLVM's identifier syntax are quoted.
"""
from __future__ import annotations

import re

from .types import FunctionType
from .values import Argument, Constant, Function, GlobalRef, Instruction, Module, Value

_IDENT = re.compile(r"[-a-zA-Z$._][-a-zA-Z$._0-9]*")
_CASTS = {"trunc", "zext", "sext", "fptrunc", "fpext", "fptoui", "fptosi", "uitofp", "sitofp",
          "ptrtoint", "inttoptr", "bitcast", "addrspacecast"}


def quote(name: str) -> str:
    return name if _IDENT.fullmatch(name) else '"' + name.replace('"', "\\22") + '"'


class Namer:
    """Assigns every local value of one function a unique printable name."""

    def __init__(self, fn: Function) -> None:
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.counter = 0
        for arg in fn.args:
            self._assign(arg)
        for block in fn.blocks:
            self._assign(block)
            for inst in block.instructions:
                if inst.has_result:
                    self._assign(inst)

    def _assign(self, v: Value) -> None:
        base = v.name or ""
        name = base
        while not name or name in self.used:
            self.counter += 1
            name = f"{base}.{self.counter}" if base else f"v{self.counter}"
        self.used.add(name)
        self.names[id(v)] = name

    def ref(self, v: Value) -> str:
        if isinstance(v, Constant):
            return v.text
        if isinstance(v, (GlobalRef, Function)):
            return "@" + quote(v.name or "")
        name = self.names.get(id(v))
        if name is None:
            raise ValueError(f"value {v!r} is used but not defined in this function")
        return "%" + quote(name)


def print_module(mod: Module) -> str:
    parts = ["\n".join(mod.header)] if mod.header else []
    if mod.type_defs:
        parts.append("\n".join(mod.type_defs.values()))
    if mod.globals:
        parts.append("\n".join(mod.globals.values()))
    for fn in mod.functions.values():
        parts.append(print_function(fn))
    if mod.attribute_groups:
        parts.append("\n".join(mod.attribute_groups.values()))
    if mod.metadata:
        parts.append("\n".join(f"{k} = {v}" for k, v in mod.metadata.items()))
    return "\n\n".join(parts) + "\n"


def print_function(fn: Function, keep_metadata: bool = True) -> str:
    namer = Namer(fn)
    head = " ".join(p for p in (
        "declare" if fn.is_declaration else "define", fn.linkage, fn.prefix_attrs,
        fn.ret_attrs, str(fn.ftype.ret)) if p)
    params = [_param(a, namer, fn.is_declaration) for a in fn.args]
    if fn.ftype.vararg:
        params.append("...")
    line = f"{head} @{quote(fn.name or '')}({', '.join(params)})"
    if fn.fn_attrs:
        line += " " + fn.fn_attrs
    if fn.metadata and keep_metadata:
        line += " " + fn.metadata
    if fn.is_declaration:
        return line
    out = [line + " {"]
    for i, block in enumerate(fn.blocks):
        if i:
            out.append("")
        out.append(quote(namer.names[id(block)]) + ":")
        for inst in block.instructions:
            out.append("  " + print_instruction(inst, namer, keep_metadata))
    out.append("}")
    return "\n".join(out)


def _param(arg: Argument, namer: Namer, declaration: bool) -> str:
    parts = [str(arg.type)]
    if arg.attrs:
        parts.append(arg.attrs)
    if not declaration:
        parts.append(namer.ref(arg))
    return " ".join(parts)


def print_instruction(inst: Instruction, namer: Namer, keep_metadata: bool = True) -> str:
    body = _BODY.get(inst.opcode, _generic)(inst, namer)
    text = f"{namer.ref(inst)} = {body}" if inst.has_result else body
    if inst.align is not None:
        text += f", align {inst.align}"
    if inst.extra:
        text += ", " + inst.extra
    if keep_metadata:
        for kind, ref in inst.metadata.items():
            text += f", !{kind} {ref}"
    return text


def _typed(v: Value, namer: Namer) -> str:
    return f"{v.type} {namer.ref(v)}"


def _head(inst: Instruction) -> str:
    return " ".join((inst.opcode,) + inst.flags)


def _generic(inst: Instruction, n: Namer) -> str:
    """Binary operators: `fadd fast double %a, %b`."""
    a, b = inst.operands
    return f"{_head(inst)} {a.type} {n.ref(a)}, {n.ref(b)}"


def _cast(inst: Instruction, n: Namer) -> str:
    return f"{_head(inst)} {_typed(inst.operands[0], n)} to {inst.type}"


def _fneg(inst: Instruction, n: Namer) -> str:
    return f"{_head(inst)} {_typed(inst.operands[0], n)}"


def _cmp(inst: Instruction, n: Namer) -> str:
    a, b = inst.operands
    return f"{_head(inst)} {inst.predicate} {a.type} {n.ref(a)}, {n.ref(b)}"


def _phi(inst: Instruction, n: Namer) -> str:
    pairs = ", ".join(f"[ {n.ref(v)}, {n.ref(b)} ]" for v, b in zip(inst.operands, inst.incoming))
    return f"{_head(inst)} {inst.type} {pairs}"


def _select(inst: Instruction, n: Namer) -> str:
    return f"{_head(inst)} " + ", ".join(_typed(v, n) for v in inst.operands)


def _ret(inst: Instruction, n: Namer) -> str:
    return f"ret {_typed(inst.operands[0], n)}" if inst.operands else "ret void"


def _br(inst: Instruction, n: Namer) -> str:
    if len(inst.operands) == 1:
        return f"br label {n.ref(inst.operands[0])}"
    c, t, f = inst.operands
    return f"br {_typed(c, n)}, label {n.ref(t)}, label {n.ref(f)}"


def _switch(inst: Instruction, n: Namer) -> str:
    c, default = inst.operands
    cases = " ".join(f"{_typed(v, n)}, label {n.ref(b)}" for v, b in inst.cases)
    return f"switch {_typed(c, n)}, label {n.ref(default)} [ {cases} ]"


def _unreachable(inst: Instruction, n: Namer) -> str:
    return "unreachable"


def _alloca(inst: Instruction, n: Namer) -> str:
    count = f", {_typed(inst.operands[0], n)}" if inst.operands else ""
    return f"alloca {inst.source_type}{count}"


def _load(inst: Instruction, n: Namer) -> str:
    vol = " volatile" if inst.volatile else ""
    return f"load{vol} {inst.type}, {_typed(inst.operands[0], n)}"


def _store(inst: Instruction, n: Namer) -> str:
    vol = " volatile" if inst.volatile else ""
    v, p = inst.operands
    return f"store{vol} {_typed(v, n)}, {_typed(p, n)}"


def _gep(inst: Instruction, n: Namer) -> str:
    ops = ", ".join(_typed(v, n) for v in inst.operands)
    return f"{_head(inst)} {inst.source_type}, {ops}"


def _indices(inst: Instruction) -> str:
    return "".join(f", {i}" for i in inst.indices)


def _extractvalue(inst: Instruction, n: Namer) -> str:
    return f"extractvalue {_typed(inst.operands[0], n)}{_indices(inst)}"


def _insertvalue(inst: Instruction, n: Namer) -> str:
    agg, v = inst.operands
    return f"insertvalue {_typed(agg, n)}, {_typed(v, n)}{_indices(inst)}"


def _operands(inst: Instruction, n: Namer) -> str:
    return f"{inst.opcode} " + ", ".join(_typed(v, n) for v in inst.operands)


def _call(inst: Instruction, n: Namer) -> str:
    assert inst.callee is not None
    args = []
    for i, a in enumerate(inst.operands):
        attrs = inst.arg_attrs[i] if i < len(inst.arg_attrs) else ""
        args.append(" ".join(p for p in (str(a.type), attrs, n.ref(a)) if p))
    fty = inst.fn_type
    callee_ty = str(fty) if isinstance(fty, FunctionType) and fty.vararg else str(inst.type)
    head = " ".join(p for p in (inst.tail, "call", *inst.flags, inst.ret_attrs, callee_ty) if p)
    text = f"{head} {n.ref(inst.callee)}({', '.join(args)})"
    return f"{text} {inst.fn_attrs}" if inst.fn_attrs else text


def _fence(inst: Instruction, n: Namer) -> str:
    return f"fence {inst.ordering}"


def _atomic(inst: Instruction, n: Namer) -> str:
    ops = ", ".join(_typed(v, n) for v in inst.operands)
    return f"{_head(inst)} {ops} {inst.ordering}"


_BODY = {
    "fence": _fence, "atomicrmw": _atomic, "cmpxchg": _atomic,
    **{op: _cast for op in _CASTS},
    "fneg": _fneg, "icmp": _cmp, "fcmp": _cmp, "phi": _phi, "select": _select, "ret": _ret,
    "br": _br, "switch": _switch, "unreachable": _unreachable, "alloca": _alloca,
    "load": _load, "store": _store, "getelementptr": _gep, "extractvalue": _extractvalue,
    "insertvalue": _insertvalue, "extractelement": _operands, "insertelement": _operands,
    "shufflevector": _operands, "freeze": _operands, "call": _call,
}


def value_name(fn: Function, v: Value) -> str:
    """The printed name of `v` inside `fn` (for diagnostics and analysis printers)."""
    return Namer(fn).ref(v)


__all__ = ["print_function", "print_instruction", "print_module", "quote", "value_name"]
