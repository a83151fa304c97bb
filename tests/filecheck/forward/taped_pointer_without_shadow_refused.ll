; A pointer without a shadow (into a const argument) kept on the tape of a derivative being
; differentiated beside one with a shadow: read back, the two cannot be told apart, so the
; derivative is refused, naming the store.
; RUN-FAIL: --func taped --args dup,const --mode forward --stage derivative --no-canonicalize
define double @taped(ptr %x, ptr %c) {
entry:
  %tape = call ptr @enzyme_py.tape.allocate(i64 16)
  store ptr %x, ptr %tape, align 8
  %slot = getelementptr i8, ptr %tape, i64 8
  store ptr %c, ptr %slot, align 8
  %px = load ptr, ptr %tape, align 8
  %pc = load ptr, ptr %slot, align 8
  %v = load double, ptr %px, align 8
  %w = load double, ptr %pc, align 8
  %r = fmul double %v, %w
  call void @NRT_Free(ptr %tape)
  ret double %r
}
declare ptr @enzyme_py.tape.allocate(i64)
declare void @NRT_Free(ptr)
; CHECK: cannot differentiate: pointer without a derivative kept on the tape of a reverse-mode derivative that is itself differentiated, beside pointers with one: the outer pass cannot tell them apart when they are read back
; CHECK-NEXT: instruction: store ptr %c, ptr %slot
; CHECK: fix: not supported yet: differentiate the forward derivative instead (reverse or forward over forward, as enzyme_py.hessian and hvp do)
