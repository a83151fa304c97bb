; A pointer returned by an unknown call that was handed a dup array may address the array:
; its shadow is unknown, so the derivative is refused (naming the call), never zero.
; RUN-FAIL: --func through --args dup --stage derivative
define double @through(ptr %x) {
entry:
  %p = call ptr @interior(ptr %x)
  %v = load double, ptr %p, align 8
  %r = fmul double %v, %v
  ret double %r
}
declare ptr @interior(ptr)
; CHECK: cannot differentiate: {{.*}}'interior'
; CHECK: instruction: %p{{.*}} = {{.*}}call ptr @interior
