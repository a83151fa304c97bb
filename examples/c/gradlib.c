/* A shared library exporting a gradient computed by a derivative lowered at build time. */
#include "enzyme.h"

static double rosenbrock(const double *x, int n) {
  double s = 0.0;
  for (int i = 0; i + 1 < n; i++) {
    double a = 1.0 - x[i], b = x[i + 1] - x[i] * x[i];
    s += a * a + 100.0 * b * b;
  }
  return s;
}

double rosenbrock_value(const double *x, int n) { return rosenbrock(x, n); }

/* grad += d rosenbrock / dx */
void rosenbrock_grad(const double *x, double *grad, int n) {
  __enzyme_autodiff((void *)rosenbrock, x, grad, n);
}
