; Activity: a pointer reloaded from a stack slot that held a dup array's address may
; address shadowed memory; the slot's other fields (a const pointer) stay inactive.
; RUN: --func reload --args dup,const --stage activity --no-canonicalize
define double @reload(ptr %x, ptr %c) {
entry:
  %slot = alloca [2 x ptr], align 8
  %second = getelementptr inbounds nuw i8, ptr %slot, i64 8
  store ptr %x, ptr %slot, align 8
  store ptr %c, ptr %second, align 8
  %px = load ptr, ptr %slot, align 8
  %pc = load ptr, ptr %second, align 8
  %vx = load double, ptr %px, align 8
  %vc = load double, ptr %pc, align 8
  %r = fmul double %vx, %vc
  ret double %r
}
; CHECK: %px{{.*}} = load ptr{{.*}}; shadowed pointer
; CHECK: %pc{{.*}} = load ptr{{.*}}; inactive
; CHECK: %vx{{.*}} = load double{{.*}}; active
; CHECK: %vc{{.*}} = load double{{.*}}; inactive
