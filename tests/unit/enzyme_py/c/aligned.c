/* Local arrays the optimiser aligns beyond their element type (tests/unit/enzyme_py/c/
   test_alignment.py): at -O2 clang gives `double t[4]` `align 16` and stores to it with
   `align 16` (vector stores once SLP-vectorised); the shadow slots must be as aligned. */
#include <math.h>

double local_prod(const double *x, const double *y, int n) {
  double t[4];
  t[0] = x[0] * y[0]; t[1] = x[1] * y[1]; t[2] = x[2] * y[2]; t[3] = x[3] * y[3];
  double s = 0.0;
  for (int i = 0; i < n; i++) s += t[i % 4] * x[i];
  return s;
}

double local_wide(const double *x, int n) {
  double t[4] __attribute__((aligned(32)));
  t[0] = x[0] * x[1]; t[1] = sin(x[1]); t[2] = x[2] * x[0]; t[3] = exp(x[3]);
  double s = 0.0;
  for (int i = 0; i < n; i++) s += t[(i + 1) % 4] * x[i];
  return s;
}
