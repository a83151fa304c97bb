"""Vector math from glibc's libmvec for LLVM's loop vectoriser (VFABI call-site annotations).

LLVM 22 has no `-vector-library` option any more (llvmlite cannot set `TargetOptions::VecLib`,
and `set_option` ignores unknown options silently), but the loop vectoriser still reads the
call-site attribute `"vector-function-abi-variant"`. `annotate(module_text)` gives every call
to a scalar math function that libmvec vectorises (`llvm.sin.f64`, `tanh`, `llvm.pow.f32`,
`expf`, ...) the attribute naming its variants (`_ZGVdN4v_sin`, ...) plus `memory(none)
nounwind willreturn` (libm calls may otherwise write errno, which blocks vectorisation),
declares the variants and keeps them in `@llvm.compiler.used` (otherwise global DCE drops the
unused declarations before the vectoriser runs). LLVM then calls a variant wherever it
vectorises a loop holding such a call; elsewhere the scalar call stays.

Only variants that exist in the process's libmvec and whose ISA the host has are named:
SSE (`b`, 128-bit), AVX (`c`) or AVX2 (`d`, 256-bit), AVX-512 (`e`, 512-bit). libmvec is
loaded into the process (globally, once) before any annotated text is returned, so JIT code
never calls an unresolved symbol. On hosts without libmvec (not Linux/glibc, not x86-64) the
text comes back unchanged. Results may differ from scalar libm by up to 4 ulp (glibc's bound).
"""
from __future__ import annotations

import ctypes
import functools
import platform
import re
import sys
from dataclasses import dataclass

import llvmlite.binding as llvm

__all__ = ["LIBMVEC", "annotate", "libmvec_variants", "vector_calls"]

LIBMVEC = "libmvec.so.1"

#: libm base name (double precision) -> number of floating-point arguments.
FUNCTIONS = {"sin": 1, "cos": 1, "tan": 1, "asin": 1, "acos": 1, "atan": 1, "sinh": 1,
             "cosh": 1, "tanh": 1, "asinh": 1, "acosh": 1, "atanh": 1, "exp": 1, "exp2": 1,
             "exp10": 1, "expm1": 1, "log": 1, "log2": 1, "log10": 1, "log1p": 1, "cbrt": 1,
             "erf": 1, "erfc": 1, "pow": 2, "atan2": 2, "hypot": 2}

#: (LLVM scalar type, intrinsic suffix, libm suffix, bits per element)
_PRECISIONS = (("double", "f64", "", 64), ("float", "f32", "f", 32))

#: (vector bits, [(libmvec ISA letter, host CPU feature), best first])
_ISAS = ((128, [("b", "sse4.1")]), (256, [("d", "avx2"), ("c", "avx")]),
         (512, [("e", "avx512f")]))


@dataclass(frozen=True)
class Variant:
    """One libmvec variant: `_ZGV<isa>N<lanes><v...>_<name>`."""
    isa: str
    lanes: int
    nargs: int
    name: str           # libm name of the scalar function (`sin`, `sinf`)

    @property
    def symbol(self) -> str:
        return f"_ZGV{self.isa}N{self.lanes}{'v' * self.nargs}_{self.name}"


def _host_isas() -> dict[int, str]:
    """Vector bits -> the best libmvec ISA letter this host runs (empty off x86-64 Linux)."""
    if not sys.platform.startswith("linux") or platform.machine() not in ("x86_64", "AMD64"):
        return {}
    features = llvm.get_host_cpu_features()
    out = {}
    for bits, choices in _ISAS:
        for isa, feature in choices:
            if features.get(feature):
                out[bits] = isa
                break
    return out


@functools.cache
def libmvec_variants() -> dict[str, tuple[str, tuple[Variant, ...]]]:
    """Scalar callee name (`llvm.sin.f64`, `tanh`, `sinf`) -> (LLVM element type, the libmvec
    variants this host can call). Loads libmvec into the process the first time; empty when
    it is missing or the host is not x86-64 Linux."""
    isas = _host_isas()
    if not isas:
        return {}
    try:
        llvm.load_library_permanently(LIBMVEC)
        library = ctypes.CDLL(LIBMVEC, mode=ctypes.RTLD_GLOBAL)
    except (OSError, RuntimeError):
        return {}
    out = {}
    for base, nargs in FUNCTIONS.items():
        for ty, intrinsic_suffix, libm_suffix, element_bits in _PRECISIONS:
            name = base + libm_suffix
            variants = tuple(v for bits, isa in sorted(isas.items())
                             for v in [Variant(isa, bits // element_bits, nargs, name)]
                             if hasattr(library, v.symbol))
            if variants:
                out[f"llvm.{base}.{intrinsic_suffix}"] = (ty, variants)
                out[name] = (ty, variants)
    return out


def annotate(module_text: str) -> str:
    """`module_text` with its scalar math calls marked vectorisable with libmvec (see the
    module docstring); unchanged when nothing is called that libmvec provides."""
    table = libmvec_variants()
    if not table:
        return module_text
    next_group = 1 + max((int(n) for n in re.findall(r"#(\d+)", module_text)), default=0)
    groups, declared = [], {}
    called = set(re.findall(r"\bcall [^@\n]*@([\w.]+)\(", module_text))
    for callee in sorted(called.intersection(table)):
        ty, variants = table[callee]
        pattern = re.compile(r"(call[^@\n]*\b" + re.escape(ty) + r" @" + re.escape(callee)
                             + r"\([^()\n]*\))( #\d+)?")
        if not pattern.search(module_text):
            continue
        module_text = pattern.sub(lambda m, g=next_group: f"{m.group(1)} #{g}", module_text)
        abi = ",".join(f"_ZGV_LLVM_N{v.lanes}{'v' * v.nargs}_{callee}({v.symbol})"
                       for v in variants)
        groups.append(f'attributes #{next_group} = {{ memory(none) nounwind willreturn '
                      f'"vector-function-abi-variant"="{abi}" }}')
        next_group += 1
        for v in variants:
            vector = f"<{v.lanes} x {ty}>"
            declared[v.symbol] = f"declare {vector} @{v.symbol}({', '.join([vector] * v.nargs)})"
    if not groups:
        return module_text
    return _with_declarations(module_text, declared) + "\n".join(groups) + "\n"


def _with_declarations(module_text: str, declared: dict[str, str]) -> str:
    """The module with the variants declared (once) and listed in `@llvm.compiler.used`."""
    existing = set(re.findall(r"^declare [^@\n]*@(_ZGV\w+)\(", module_text, re.M))
    decls = [d for symbol, d in declared.items() if symbol not in existing]
    keep = list(declared)
    used = re.search(r"^@llvm\.compiler\.used = appending global \[\d+ x ptr\] \[(.*)\], "
                     r"section \"llvm\.metadata\"\n", module_text, re.M)
    if used:                                       # merge with the module's own list
        names = re.findall(r"@([\w.$]+)", used.group(1))
        keep = names + [k for k in keep if k not in names]
        module_text = module_text[:used.start()] + module_text[used.end():]
    used_line = (f"@llvm.compiler.used = appending global [{len(keep)} x ptr] "
                 f"[{', '.join('ptr @' + k for k in keep)}], section \"llvm.metadata\"")
    return "\n".join([module_text.rstrip("\n"), *decls, used_line, ""])


def vector_calls(text: str) -> list[str]:
    """The libmvec variants (`_ZGV...`) that `text` (optimised IR) calls, sorted."""
    return sorted(set(re.findall(r"call [^\n]*@(_ZGV\w+)\(", text)))
