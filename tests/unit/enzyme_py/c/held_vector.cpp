// A std::vector<double> passed by const reference (tests/unit/enzyme_py/c/test_held_pointers.py):
// its shadow is a vector of the same size whose {begin, end, cap} address the shadow values.
#include <cstddef>
#include <vector>

extern "C" double vdot(const std::vector<double> &a, const std::vector<double> &b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); i++) s += a[i] * b[i] * a[i];
  return s;
}

extern "C" double vdot_flat(double *a, double *b, long n) {
  std::vector<double> u(a, a + n), v(b, b + n);
  return vdot(u, v);
}
