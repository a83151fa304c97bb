; Activity: reads of a const array are inactive; only the product with the dup array is.
; RUN: --func weighted --args dup,const,const --stage activity
define double @weighted(ptr %x, ptr %w, i64 %i) {
entry:
  %px = getelementptr inbounds double, ptr %x, i64 %i
  %pw = getelementptr inbounds double, ptr %w, i64 %i
  %vx = load double, ptr %px, align 8
  %vw = load double, ptr %pw, align 8
  %ww = fmul double %vw, %vw
  %r = fmul double %vx, %ww
  ret double %r
}
; CHECK: %px{{.*}} = getelementptr {{.*}}; shadowed pointer
; CHECK: %pw{{.*}} = getelementptr {{.*}}; inactive
; CHECK: %vx{{.*}} = load double{{.*}}; active
; CHECK: %vw{{.*}} = load double{{.*}}; inactive
; CHECK: %ww{{.*}} = fmul double{{.*}}; inactive
; CHECK: %r{{.*}} = fmul double{{.*}}; active
