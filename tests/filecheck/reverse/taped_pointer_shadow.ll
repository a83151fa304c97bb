; Reverse mode over a derivative reading a pointer back from its tape: the augmented forward
; pass stores the pointer's shadow beside it in the tape's shadow and reads it back from
; there; the reverse pass adds into the memory it addresses (ir_passes/diff/taped_pointers.py).
; RUN: --func taped --args dup --stage derivative --no-canonicalize
define double @taped(ptr %x) {
entry:
  %tape = call ptr @enzyme_py.tape.allocate(i64 8)
  store ptr %x, ptr %tape, align 8
  %px = load ptr, ptr %tape, align 8
  %v = load double, ptr %px, align 8
  %r = fmul double %v, %v
  call void @NRT_Free(ptr %tape)
  ret double %r
}
declare ptr @enzyme_py.tape.allocate(i64)
declare void @NRT_Free(ptr)
; CHECK: [[TAPE:%[^ ]+]] = call ptr @enzyme_py.tape.allocate(i64 8)
; CHECK-NEXT: [[STAPE:%[^ ]+]] = call ptr @NRT_Allocate(i64 8)
; CHECK: store ptr %x, ptr [[TAPE]]
; CHECK-NEXT: store ptr %"x'.4", ptr [[STAPE]]
; CHECK-NEXT: [[PX:%[^ ]+]] = load ptr, ptr [[TAPE]]
; CHECK-NEXT: [[SPX:%[^ ]+]] = load ptr, ptr [[STAPE]]
; CHECK: [[OLD:%[^ ]+]] = load double, ptr [[SPX]]
; CHECK-NEXT: [[NEW:%[^ ]+]] = fadd nsz double [[OLD]]
; CHECK-NEXT: store double [[NEW]], ptr [[SPX]]
; CHECK-NEXT: store ptr null, ptr [[STAPE]]
