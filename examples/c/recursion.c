/* Recursion: a recursive power and a recursive tree sum over an array range, both modes. */
#include "enzyme.h"

static double power(double x, int n) { return n == 0 ? 1.0 : x * power(x, n - 1); }

double f(double x, int n) { return power(x, n) + sin(x); }

static double tree(const double *a, int lo, int hi) {
  if (hi - lo == 1) return a[lo] * a[lo];
  int mid = (lo + hi) / 2;
  return 0.5 * tree(a, lo, mid) + cos(tree(a, mid, hi));
}

double g(const double *a, int n) { return tree(a, 0, n); }

int main(void) {
  double x = 1.3, h = 1e-6;
  double dx = __enzyme_autodiff((void *)f, x, enzyme_const, 5);
  check("df/dx", dx, (f(x + h, 5) - f(x - h, 5)) / (2 * h), 1e-7);
  check("forward df/dx", __enzyme_fwddiff((void *)f, x, 1.0, enzyme_const, 5), dx, 1e-12);

  double a[7] = {0.3, -0.7, 0.2, 1.1, -0.4, 0.9, 0.5}, da[7] = {0};
  __enzyme_autodiff((void *)g, a, da, enzyme_const, 7);
  for (int i = 0; i < 7; i++) {
    double keep = a[i];
    a[i] = keep + h; double up = g(a, 7);
    a[i] = keep - h; double down = g(a, 7);
    a[i] = keep;
    check("dg/da[i]", da[i], (up - down) / (2 * h), 1e-7);
  }
  return report("recursion");
}
