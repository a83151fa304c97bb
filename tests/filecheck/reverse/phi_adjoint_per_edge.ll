; A phi's adjoint goes to the incoming value of the edge the forward pass came along.
; RUN: --func blend --args active,active --stage derivative --no-canonicalize
define double @blend(double %x, double %y) {
entry:
  %c = fcmp olt double %x, 0.0
  br i1 %c, label %neg, label %merge
neg:
  %nx = fmul double %x, %y
  br label %merge
merge:
  %r = phi double [ %nx, %neg ], [ %y, %entry ]
  %s = fmul double %r, %x
  ret double %s
}
; CHECK-LABEL: blend.exit.rev:
; CHECK: switch i32 {{.*}}, label %blend.exit.rev.to.entry [ i32 1, label %blend.exit.rev.to.neg.i ]
; CHECK-LABEL: blend.exit.rev.to.entry:
; CHECK: [[Y:%[^ ]+]] = load double, ptr %y.adj
; CHECK-NEXT: fadd double [[Y]], [[ADJ:%[^ ]+]]
; CHECK-LABEL: blend.exit.rev.to.neg.i:
; CHECK: [[NX:%[^ ]+]] = load double, ptr %nx.i.adj
; CHECK-NEXT: fadd double [[NX]], [[ADJ]]
