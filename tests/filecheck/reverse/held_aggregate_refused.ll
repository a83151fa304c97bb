; Reverse mode: a struct holding a pointer loaded from shadowed memory as one value: the shadow of the
; pointer inside is not followed, so the derivative is refused, naming the load.
; RUN-FAIL: --func first --args dup --stage derivative --no-canonicalize
define double @first(ptr %v) {
entry:
  %s = load { i64, ptr }, ptr %v, align 8
  %data = extractvalue { i64, ptr } %s, 1
  %x = load double, ptr %data, align 8
  %r = fmul double %x, %x
  ret double %r
}
; CHECK: a { i64, ptr } holding pointers loaded from shadowed memory as one value
; CHECK: instruction: %s{{.*}} = load { i64, ptr }
; CHECK: fix: not supported yet: read the struct's fields one by one
