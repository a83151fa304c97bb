/* Constructs the C front end refuses: each error must name this file and the line. */
extern double mystery(double);

double fact(double x, int n) {
  if (n == 0) return 1.0;
  return x * fact(x, n - 1);                           /* line 6: recursion */
}

double opaque(double x) { return 2.0 * mystery(x); }    /* line 9: no derivative */
