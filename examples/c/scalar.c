/* Scalars: several active doubles (struct results), libm, a static helper; both modes. */
#include "enzyme.h"

static double sq(double x) { return x * x; }

double f(double x, double y) { return sq(x) * sin(y) + exp(x * y) / (1.0 + sq(y)); }

double g(double x, double y, double z) { return x * log(1.0 + y * y) + tanh(z) * x / y; }

int main(void) {
  double x = 0.7, y = -1.3, z = 0.4, h = 1e-6;
  grad2 d = __enzyme_autodiff2((void *)f, x, y);
  check("df/dx", d.d0, (f(x + h, y) - f(x - h, y)) / (2 * h), 1e-7);
  check("df/dy", d.d1, (f(x, y + h) - f(x, y - h)) / (2 * h), 1e-7);

  grad3 e = __enzyme_autodiff3((void *)g, x, y, z);
  check("dg/dx", e.d0, (g(x + h, y, z) - g(x - h, y, z)) / (2 * h), 1e-7);
  check("dg/dy", e.d1, (g(x, y + h, z) - g(x, y - h, z)) / (2 * h), 1e-7);
  check("dg/dz", e.d2, (g(x, y, z + h) - g(x, y, z - h)) / (2 * h), 1e-7);

  /* dx/dy only: y const (enzyme_const), x active (enzyme_out) */
  double only = __enzyme_autodiff((void *)f, enzyme_out, x, enzyme_const, y);
  check("df/dx (y const)", only, d.d0, 1e-12);

  /* forward mode: the tangent along (1, 2) */
  double t = __enzyme_fwddiff((void *)f, x, 1.0, y, 2.0);
  check("forward df.(1,2)", t, d.d0 + 2 * d.d1, 1e-12);
  return report("scalar");
}
