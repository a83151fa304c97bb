/* Declarations of enzyme_py's C front end, Enzyme's conventions (enzyme-py clang lowers the
   calls), and a finite-difference check used by the examples. */
#ifndef ENZYME_PY_EXAMPLE_H
#define ENZYME_PY_EXAMPLE_H
#include <math.h>
#include <stdio.h>

extern int enzyme_dup, enzyme_const, enzyme_out, enzyme_dupnoneed;
typedef struct { double d0, d1; } grad2;        /* two active scalars: {double, double} */
typedef struct { double d0, d1, d2; } grad3;    /* three: returned through clang's sret */
extern double __enzyme_autodiff(void *, ...);
extern grad2 __enzyme_autodiff2(void *, ...) __asm__("__enzyme_autodiff");
extern grad3 __enzyme_autodiff3(void *, ...) __asm__("__enzyme_autodiff");
extern void __enzyme_autodiff_void(void *, ...) __asm__("__enzyme_autodiff");
extern double __enzyme_fwddiff(void *, ...);
extern void __enzyme_fwddiff_void(void *, ...) __asm__("__enzyme_fwddiff");

static int failures = 0;

/* got vs want (a central finite difference), relative tolerance tol */
static void check(const char *what, double got, double want, double tol) {
  double err = fabs(got - want) / fmax(1.0, fabs(want));
  if (!(err <= tol)) {
    printf("FAIL %s: derivative %.12g, finite difference %.12g\n", what, got, want);
    failures++;
  }
}

static int report(const char *name) {
  printf("%s: %s\n", name, failures ? "FAILED" : "ok");
  return failures != 0;
}
#endif
