/* Calls the shared library's gradient and checks it against finite differences. */
#include "enzyme.h"
#define N 4

double rosenbrock_value(const double *x, int n);
void rosenbrock_grad(const double *x, double *grad, int n);

int main(void) {
  double x[N] = {-1.2, 1.0, 0.5, 0.8}, g[N] = {0}, h = 1e-6;
  rosenbrock_grad(x, g, N);
  for (int k = 0; k < N; k++) {
    double keep = x[k];
    x[k] = keep + h; double fp = rosenbrock_value(x, N);
    x[k] = keep - h; double fm = rosenbrock_value(x, N);
    x[k] = keep;
    check("drosenbrock/dx", g[k], (fp - fm) / (2 * h), 1e-6);
  }
  return report("shared library");
}
