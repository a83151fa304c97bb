; A pointer reloaded from memory that held a dup array's address has an unknown shadow:
; the derivative is refused, naming the load, instead of treating it as inactive.
; RUN-FAIL: --func reload --args dup --stage derivative --no-canonicalize
define double @reload(ptr %x) {
entry:
  %slot = alloca ptr, align 8
  store ptr %x, ptr %slot, align 8
  %px = load ptr, ptr %slot, align 8
  %v = load double, ptr %px, align 8
  %r = fmul double %v, %v
  ret double %r
}
; CHECK: pointer loaded from memory that may hold the address of a differentiated array
; CHECK: instruction: %px{{.*}} = load ptr
