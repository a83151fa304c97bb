"""LLVM types as small immutable objects.

Types compare by value, print as LLVM 22 text (`str(t)`), and know their size in bytes for the
data layout Numba uses on 64-bit hosts (enough for tape sizing; not a general DataLayout).
"""
from __future__ import annotations

from dataclasses import dataclass


class Type:
    """Base of all LLVM types."""

    @property
    def is_float(self) -> bool:
        return isinstance(self, FloatType)

    @property
    def is_int(self) -> bool:
        return isinstance(self, IntType)

    @property
    def is_pointer(self) -> bool:
        return isinstance(self, PointerType)

    @property
    def is_void(self) -> bool:
        return isinstance(self, VoidType)

    @property
    def is_float_vector(self) -> bool:
        return isinstance(self, VectorType) and self.element.is_float

    @property
    def scalar(self) -> Type:
        """The element type of a vector, otherwise the type itself."""
        return self.element if isinstance(self, VectorType) else self


@dataclass(frozen=True, slots=True)
class VoidType(Type):
    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True, slots=True)
class LabelType(Type):
    def __str__(self) -> str:
        return "label"


@dataclass(frozen=True, slots=True)
class MetadataType(Type):
    def __str__(self) -> str:
        return "metadata"


@dataclass(frozen=True, slots=True)
class TokenType(Type):
    def __str__(self) -> str:
        return "token"


@dataclass(frozen=True, slots=True)
class IntType(Type):
    bits: int

    def __str__(self) -> str:
        return f"i{self.bits}"


_FLOAT_BITS = {"half": 16, "bfloat": 16, "float": 32, "double": 64, "x86_fp80": 80, "fp128": 128}


@dataclass(frozen=True, slots=True)
class FloatType(Type):
    kind: str  # "half", "bfloat", "float", "double", "x86_fp80", "fp128"

    def __str__(self) -> str:
        return self.kind

    @property
    def bits(self) -> int:
        return _FLOAT_BITS[self.kind]


@dataclass(frozen=True, slots=True)
class PointerType(Type):
    addrspace: int = 0

    def __str__(self) -> str:
        return "ptr" if self.addrspace == 0 else f"ptr addrspace({self.addrspace})"


@dataclass(frozen=True, slots=True)
class ArrayType(Type):
    count: int
    element: Type

    def __str__(self) -> str:
        return f"[{self.count} x {self.element}]"


@dataclass(frozen=True, slots=True)
class VectorType(Type):
    count: int
    element: Type
    scalable: bool = False

    def __str__(self) -> str:
        prefix = "vscale x " if self.scalable else ""
        return f"<{prefix}{self.count} x {self.element}>"


@dataclass(frozen=True, slots=True)
class StructType(Type):
    elements: tuple[Type, ...]
    packed: bool = False

    def __str__(self) -> str:
        body = ", ".join(str(e) for e in self.elements)
        inner = f"{{ {body} }}" if body else "{}"
        return f"<{inner}>" if self.packed else inner


@dataclass(frozen=True, slots=True)
class NamedStructType(Type):
    """A reference to an identified struct (`%name`); its body lives in the module."""
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class FunctionType(Type):
    ret: Type
    params: tuple[Type, ...]
    vararg: bool = False

    def __str__(self) -> str:
        params = [str(p) for p in self.params] + (["..."] if self.vararg else [])
        return f"{self.ret} ({', '.join(params)})"


VOID = VoidType()
LABEL = LabelType()
METADATA = MetadataType()
I1 = IntType(1)
I8 = IntType(8)
I32 = IntType(32)
I64 = IntType(64)
FLOAT = FloatType("float")
DOUBLE = FloatType("double")
PTR = PointerType()


def holds_pointer(t: Type) -> bool:
    """Whether a value of type `t` carries a pointer (itself, or in an element)."""
    if isinstance(t, StructType):
        return any(holds_pointer(e) for e in t.elements)
    if isinstance(t, (ArrayType, VectorType)):
        return holds_pointer(t.element)
    return t.is_pointer


def size_of(t: Type) -> int:
    """Allocation size in bytes (natural alignment, as on x86-64 / aarch64)."""
    if isinstance(t, IntType):
        return max(1, (t.bits + 7) // 8) if t.bits <= 8 else _round_pow2((t.bits + 7) // 8)
    if isinstance(t, FloatType):
        return {16: 2, 32: 4, 64: 8, 80: 16, 128: 16}[t.bits]
    if isinstance(t, PointerType):
        return 8
    if isinstance(t, ArrayType):
        return t.count * size_of(t.element)
    if isinstance(t, VectorType):
        return _round_pow2(t.count * size_of(t.element))
    if isinstance(t, StructType):
        offset = 0
        for e in t.elements:
            a = 1 if t.packed else align_of(e)
            offset = (offset + a - 1) // a * a + size_of(e)
        a = 1 if t.packed else align_of(t)
        return (offset + a - 1) // a * a
    raise TypeError(f"no size for type {t}")


def align_of(t: Type) -> int:
    """ABI alignment in bytes."""
    if isinstance(t, ArrayType):
        return align_of(t.element)
    if isinstance(t, StructType):
        return 1 if t.packed else max((align_of(e) for e in t.elements), default=1)
    return min(size_of(t), 16)


def _round_pow2(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p
