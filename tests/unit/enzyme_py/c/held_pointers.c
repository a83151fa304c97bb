/* Pointers held in differentiated memory (tests/unit/enzyme_py/c/test_held_pointers.py):
   the shadow of a struct holds the shadows of its pointers, as Enzyme's callers lay it out. */
typedef struct { long n; double *data; } vec;
typedef struct { double *a; double *b; } pair;
typedef struct { double *begin, *end, *cap; } dvector;   /* libstdc++'s std::vector<double> */
typedef struct { long n; double *data; } inner;
typedef struct { long n; double w; inner *child; } outer;

double pp_cube(double **x, int n) {
  double s = 0.0;
  for (int i = 0; i < n; i++) s += (*x)[i] * (*x)[i] * (*x)[i];
  return s;
}

double vec_norm2(const vec *v) {
  double s = 0.0;
  for (long i = 0; i < v->n; i++) s += v->data[i] * v->data[i];
  return s;
}

void pair_axpy(pair *p, long n, double s) {
  for (long i = 0; i < n; i++) p->b[i] = p->b[i] * p->a[i] + s * p->a[i] * p->a[i];
}

double rows_weighted(double **rows, int m, int n) {
  double s = 0.0;
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) s += (j + 1.0) * rows[i][j] * rows[i][j] * rows[(i + 1) % m][j];
  return s;
}

void rows_square(double **rows, int m, int n) {
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) rows[i][j] = rows[i][j] * rows[i][j] + rows[i][n - 1 - j];
}

double deep(const outer *o) {
  double s = 0.0;
  for (long i = 0; i < o->child->n; i++) s += o->child->data[i] * o->child->data[i];
  return o->w * s + o->n;
}

double dvec_dot(const dvector *a, const dvector *b) {
  double s = 0.0;
  for (long i = 0; i < a->end - a->begin; i++) s += a->begin[i] * b->begin[i] * a->begin[i];
  return s;
}

double const_index(const int **idx, const double *x, int n) {
  double s = 0.0;
  for (int i = 0; i < n; i++) s += x[(*idx)[i]] * x[i];
  return s;
}

void set_data(vec *v, double *x, long n) {     /* a dup pointer stored into dup memory */
  v->data = x;
  v->n = n;
  for (long i = 0; i < n; i++) v->data[i] = v->data[i] * v->data[i];
}

void swap_square(double **rows, int m, int n) {    /* pointers stored into dup memory */
  double *first = rows[0];
  rows[0] = rows[m - 1];
  rows[m - 1] = first;
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) rows[i][j] = rows[i][j] * rows[0][j] + (i + 1.0) * rows[i][j];
}

double struct_copy(vec *dst, const vec *src, long i) {   /* memcpy of {long, double *} */
  dst[i] = src[1];
  double s = 0.0;
  for (long k = 0; k < dst[0].n; k++) s += dst[0].data[k] * dst[0].data[k] * src[0].data[k];
  return s;
}

typedef union { double *p; double d; } either;
double punned(either *u, long i) {
  u[i].d = 2.0 * u[i].d;                        /* a float and a pointer in the same bytes */
  return (u[0].p)[0];
}

/* The primals as the tests call them (flat arrays in, the structs built here). */
double pp_cube_flat(double *x, long n) { return pp_cube(&x, (int)n); }
double vec_norm2_flat(double *x, long n) { vec v = {n, x}; return vec_norm2(&v); }
void pair_axpy_flat(double *a, double *b, long n, double s) { pair p = {a, b}; pair_axpy(&p, n, s); }
static void as_rows(double **rows, double *x, long m, long n) {
  for (long i = 0; i < m; i++) rows[i] = x + i * n;
}
double rows_weighted_flat(double *x, long m, long n) {
  double *rows[16]; as_rows(rows, x, m, n); return rows_weighted(rows, (int)m, (int)n);
}
void swap_square_flat(double *x, long m, long n) {
  double *rows[16]; as_rows(rows, x, m, n); swap_square(rows, (int)m, (int)n);
}
void rows_square_flat(double *x, long m, long n) {
  double *rows[16]; as_rows(rows, x, m, n); rows_square(rows, (int)m, (int)n);
}
double deep_flat(double *w, double *x, long n) {
  inner c = {n, x}; outer o = {7, w[0], &c};
  return deep(&o);
}
double dvec_dot_flat(double *a, double *b, long n) {
  dvector u = {a, a + n, a + n}, v = {b, b + n, b + n}; return dvec_dot(&u, &v);
}
double const_index_flat(int *idx, double *x, long n) {
  const int *p = idx; return const_index(&p, x, (int)n);
}
double struct_copy_flat(double *d0, double *s0, double *s1, long n) {
  vec dst[1] = {{n, d0}}, src[2] = {{n, s0}, {n, s1}}; return struct_copy(dst, src, 0);
}
void set_data_flat(double *vd, double *x, long n) { vec v = {0, vd}; set_data(&v, x, n); }

double keep_const(vec *v, const double *c, long n) {  /* a const pointer into dup memory */
  v->data = (double *)c;
  double s = 0.0;
  for (long i = 0; i < n; i++) s += v->data[i] * v->data[i];
  return s;
}

double copy_from_const(vec *dst, const vec *src, long i) {   /* pointers without shadows */
  dst[i] = *src;
  return dst[0].data[0] * dst[0].data[0];
}
