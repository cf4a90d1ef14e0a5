// Per-sample linear algebra in the front end (docs/language.md "Linear algebra"): eye, diag,
// diagonal, tril, triu, inv, solve, lu, lu_solve, cholesky, cho_solve, lstsq and eigh on
// Matrix[n, n] values, n from 1 to 6. Like every matrix function (lower_matrix.cpp) each one is
// written out as straight-line scalar IR: pivot searches and row swaps are Selects, a failed
// factorisation is an int `info` (LAPACK's numbering) with zero results, and eigh is a fixed
// number of cyclic Jacobi sweeps. So the interpreter, both emitters, tangent and adjoint
// kernels at every order and the "xla" lowering need nothing new. Start at
// `Lowerer::call_linalg`.
#include <string>
#include <utility>
#include <vector>

#include "ir/lower.hpp"
#include "ir/lower_ctx.hpp"

namespace raptor::ir::front {

namespace {

constexpr int kMaxSize = 6;  // the largest n written out

// Cyclic Jacobi sweeps for an n x n eigh: one more than the most a simulation of this exact
// rotation scheme needed to bring the off-diagonal below 1e-17 of ||A|| (300 random symmetric
// matrices per size: Gaussian, clustered eigenvalues down to 1e-8 apart, entries over six
// decades); Jacobi converges quadratically, so the spare sweep also settles the derivatives.
int jacobi_sweeps(int n) {
  static constexpr int sweeps[kMaxSize + 1] = {0, 0, 1, 5, 6, 7, 7};
  return sweeps[n];
}

// Scalar IR for the factorisations: each operation in a statement of its own (see
// Lowerer::signed_sum on the order in which a call's arguments are evaluated).
class Ops {
 public:
  explicit Ops(Lowerer& l) : l_(l) {}
  int k(double v) { return l_.konst(v); }
  int ki(int64_t v) { return l_.kint(v); }
  int add(int a, int b) { return l_.emit(Op::Add, Type::F, a, b); }
  int sub(int a, int b) { return l_.emit(Op::Sub, Type::F, a, b); }
  int mul(int a, int b) { return l_.emit(Op::Mul, Type::F, a, b); }
  int div(int a, int b) { return l_.emit(Op::Div, Type::F, a, b); }
  int neg(int a) { return l_.emit(Op::Neg, Type::F, a); }
  int abs(int a) { return l_.emit(Op::Abs, Type::F, a); }
  int sqrt(int a) { return l_.emit(Op::Sqrt, Type::F, a); }
  int hypot(int a, int b) { return l_.emit(Op::Hypot, Type::F, a, b); }
  int sel(int c, int a, int b) { return l_.emit(Op::Select, Type::F, c, a, b); }
  int isel(int c, int a, int b) { return l_.emit(Op::Select, Type::I, c, a, b); }
  int gt(int a, int b) { return l_.emit(Op::Gt, Type::B, a, b); }
  int lt(int a, int b) { return l_.emit(Op::Lt, Type::B, a, b); }
  int le(int a, int b) { return l_.emit(Op::Le, Type::B, a, b); }
  int eq(int a, int b) { return l_.emit(Op::Eq, Type::B, a, b); }  // F or I operands
  int land(int a, int b) { return l_.emit(Op::And, Type::B, a, b); }
  int lor(int a, int b) { return l_.emit(Op::Or, Type::B, a, b); }
  int lnot(int a) { return l_.emit(Op::Not, Type::B, a); }
  int is_zero(int x) {
    const int z = k(0.0);
    return eq(x, z);
  }
  // x where it is not exactly 0, else 1: a divisor that keeps a failed sample's values (and
  // their derivatives) finite; its results are replaced by zeros afterwards.
  int safe_divisor(int x) {
    const int zero = is_zero(x);
    const int one = k(1.0);
    return sel(zero, one, x);
  }
  // LAPACK's info: the first failing step, 1-based; `fail` says step `step` failed.
  int note_failure(int info, int fail, int step) {
    const int izero = ki(0);
    const int clean = eq(info, izero);
    const int first = land(clean, fail);
    const int at = ki(step);
    return isel(first, at, info);
  }
  // The components of `v`, or 0 where `failed` holds.
  std::vector<int> zero_where(int failed, std::vector<int> v) {
    const int zero = k(0.0);
    for (int& x : v) x = sel(failed, zero, x);
    return v;
  }
  // acc - sum_j a[j] * b[j], left to right.
  int minus_dot(int acc, const std::vector<std::pair<int, int>>& terms) {
    for (const auto& [x, y] : terms) acc = sub(acc, mul(x, y));
    return acc;
  }

 private:
  Lowerer& l_;
};

// n x n row-major access.
struct Sq {
  std::vector<int> c;
  int n = 0;
  int& at(int i, int j) { return c[i * n + j]; }
  int at(int i, int j) const { return c[i * n + j]; }
};

struct LuFactor {
  Sq lu;                // L's multipliers below the diagonal, U on and above it
  std::vector<int> piv; // I values: row k was swapped with row piv[k] (0-based, LAPACK's)
  int info = -1;        // I: 0, or the first zero pivot (1-based)
};

// P A = L U by Gaussian elimination with partial pivoting (the first largest |a_ik| wins, as
// LAPACK's idamax), rows swapped whole, as LAPACK's getrf: scipy.linalg.lu_factor's result.
LuFactor lu_factor(Ops& o, Sq a) {
  const int n = a.n;
  LuFactor f;
  f.info = o.ki(0);
  for (int k = 0; k < n; ++k) {
    // The pivot row: a chain over rows k+1..n-1, each replacing the best so far when larger.
    int best = o.abs(a.at(k, k));
    int idx = o.ki(k);
    std::vector<int> take(n, -1);  // B: row i is the pivot row
    for (int i = k + 1; i < n; ++i) {
      const int m = o.abs(a.at(i, k));
      const int wins = o.gt(m, best);
      best = o.sel(wins, m, best);
      const int ii = o.ki(i);
      idx = o.isel(wins, ii, idx);
    }
    f.piv.push_back(idx);
    for (int i = k + 1; i < n; ++i) {
      const int ii = o.ki(i);
      take[i] = o.eq(idx, ii);
    }
    // Swap rows k and idx (every column, L's multipliers included).
    for (int j = 0; j < n; ++j) {
      const int old_k = a.at(k, j);
      int row_k = old_k;
      for (int i = k + 1; i < n; ++i) {
        row_k = o.sel(take[i], a.at(i, j), row_k);
        a.at(i, j) = o.sel(take[i], old_k, a.at(i, j));
      }
      a.at(k, j) = row_k;
    }
    const int pivot = a.at(k, k);
    const int zero = o.is_zero(pivot);
    f.info = o.note_failure(f.info, zero, k + 1);
    const int d = o.safe_divisor(pivot);  // a zero pivot: its column below is zero too
    for (int i = k + 1; i < n; ++i) {
      const int l = o.div(a.at(i, k), d);
      a.at(i, k) = l;
      for (int j = k + 1; j < n; ++j) a.at(i, j) = o.sub(a.at(i, j), o.mul(l, a.at(k, j)));
    }
  }
  f.lu = std::move(a);
  return f;
}

// Whether any diagonal entry of `m` is exactly zero (a B value).
int any_zero_diagonal(Ops& o, const Sq& m) {
  int any = o.is_zero(m.at(0, 0));
  for (int i = 1; i < m.n; ++i) any = o.lor(any, o.is_zero(m.at(i, i)));
  return any;
}

// A x = b for one column b from getrf's factor and pivots; zeros when U is singular.
std::vector<int> lu_solve_column(Ops& o, const Sq& lu, const std::vector<int>& piv,
                                 std::vector<int> b, int singular) {
  const int n = lu.n;
  for (int k = 0; k < n; ++k) {  // b's rows in P's order: swap k with piv[k]
    const int old_k = b[k];
    int row_k = old_k;
    for (int i = k + 1; i < n; ++i) {
      const int ii = o.ki(i);
      const int t = o.eq(piv[k], ii);
      row_k = o.sel(t, b[i], row_k);
      b[i] = o.sel(t, old_k, b[i]);
    }
    b[k] = row_k;
  }
  for (int i = 1; i < n; ++i) {  // L y = P b, L unit lower triangular
    std::vector<std::pair<int, int>> terms;
    for (int j = 0; j < i; ++j) terms.emplace_back(lu.at(i, j), b[j]);
    b[i] = o.minus_dot(b[i], terms);
  }
  for (int i = n - 1; i >= 0; --i) {  // U x = y
    std::vector<std::pair<int, int>> terms;
    for (int j = i + 1; j < n; ++j) terms.emplace_back(lu.at(i, j), b[j]);
    const int r = o.minus_dot(b[i], terms);
    b[i] = o.div(r, o.safe_divisor(lu.at(i, i)));
  }
  return o.zero_where(singular, std::move(b));
}

struct Cholesky {
  Sq l;           // lower triangular, zeros above the diagonal (and everywhere on failure)
  int info = -1;  // I: 0, or the order of the first leading minor that is not positive
};

// A = L L^T for the symmetric part (A + A^T) / 2 of `a` (as jax.numpy.linalg.cholesky; for a
// symmetric A the very components of A). A diagonal that is not > 0 (or NaN) fails, as
// LAPACK's potrf.
Cholesky cholesky(Ops& o, const Sq& a) {
  const int n = a.n;
  Cholesky c;
  c.l = Sq{std::vector<int>(n * n, o.k(0.0)), n};
  c.info = o.ki(0);
  const int half = o.k(0.5);
  const auto sym = [&](int i, int j) {
    if (i == j) return a.at(i, i);
    const int s = o.add(a.at(i, j), a.at(j, i));
    return o.mul(half, s);
  };
  for (int j = 0; j < n; ++j) {
    std::vector<std::pair<int, int>> terms;
    for (int k = 0; k < j; ++k) terms.emplace_back(c.l.at(j, k), c.l.at(j, k));
    const int d = o.minus_dot(sym(j, j), terms);
    const int zero = o.k(0.0);
    const int bad = o.lnot(o.gt(d, zero));
    c.info = o.note_failure(c.info, bad, j + 1);
    const int one = o.k(1.0);
    const int ljj = o.sqrt(o.sel(bad, one, d));
    c.l.at(j, j) = ljj;
    for (int i = j + 1; i < n; ++i) {
      terms.clear();
      for (int k = 0; k < j; ++k) terms.emplace_back(c.l.at(i, k), c.l.at(j, k));
      const int v = o.minus_dot(sym(i, j), terms);
      c.l.at(i, j) = o.div(v, ljj);
    }
  }
  const int izero = o.ki(0);
  const int ok = o.eq(c.info, izero);
  c.l.c = o.zero_where(o.lnot(ok), std::move(c.l.c));
  return c;
}

// L L^T x = b for one column, reading L's lower triangle; zeros when L has a zero diagonal.
std::vector<int> cho_solve_column(Ops& o, const Sq& l, std::vector<int> b, int singular) {
  const int n = l.n;
  std::vector<int> d(n);
  for (int i = 0; i < n; ++i) d[i] = o.safe_divisor(l.at(i, i));
  for (int i = 0; i < n; ++i) {  // L y = b
    std::vector<std::pair<int, int>> terms;
    for (int j = 0; j < i; ++j) terms.emplace_back(l.at(i, j), b[j]);
    b[i] = o.div(o.minus_dot(b[i], terms), d[i]);
  }
  for (int i = n - 1; i >= 0; --i) {  // L^T x = y
    std::vector<std::pair<int, int>> terms;
    for (int j = i + 1; j < n; ++j) terms.emplace_back(l.at(j, i), b[j]);
    b[i] = o.div(o.minus_dot(b[i], terms), d[i]);
  }
  return o.zero_where(singular, std::move(b));
}

}  // namespace

std::optional<TV> Lowerer::call_linalg(const std::string& name, const std::vector<TV>& args,
                                       parse::Loc loc) {
  static const char* const names[] = {"eye",      "diag",     "diagonal", "tril",
                                      "triu",     "inv",      "solve",    "lu",
                                      "lu_solve", "cholesky", "cho_solve", "lstsq",
                                      "eigh"};
  bool known = false;
  for (const char* n : names) known |= name == n;
  if (!known) return std::nullopt;
  Ops o(*this);
  const auto arity = [&](size_t lo, size_t hi) {
    if (args.size() < lo || args.size() > hi)
      error(loc, name + "() takes " + std::to_string(lo) +
                     (hi > lo ? " or " + std::to_string(hi) : "") + " argument" +
                     (hi == 1 ? "" : "s") + ", got " + std::to_string(args.size()));
  };
  const auto matrix_arg = [&](const TV& v, const char* what) {
    if (v.kind != TV::Kind::Matrix)
      error(loc, name + "() takes " + (*what ? std::string(what) + " " : std::string()) +
                     "a Matrix, got " + describe(v) +
                     (v.kind == TV::Kind::Vector ? "; build one with mat(row, row, ...)" : ""));
    return v;
  };
  // A square Matrix of size 1..6, as an Sq.
  const auto square_arg = [&](const TV& v, const char* what) {
    const TV m = matrix_arg(v, what);
    if (m.rows != m.cols())
      error(loc, name + "() takes a square Matrix, got " + describe(m) +
                     (name == "solve" || name == "inv" ? "; for a least-squares solution use "
                                                         "lstsq(A, b)"
                                                       : ""));
    if (m.rows > kMaxSize)
      error(loc, name + "() of " + describe(m) + ": hawk.math writes it out for sizes 1 to " +
                     std::to_string(kMaxSize) +
                     "; for a larger system write the elimination with `for` loops over "
                     "components");
    return Sq{m.comps, m.rows};
  };
  // The right-hand side of an n x n system: a Vector[n] or a Matrix[n, k], as columns.
  const auto rhs_arg = [&](const TV& b, int n, const char* what) {
    std::vector<std::vector<int>> cols;
    if (b.kind == TV::Kind::Vector && b.width() == n) {
      cols.push_back(b.comps);
    } else if (b.kind == TV::Kind::Matrix && b.rows == n) {
      for (int j = 0; j < b.cols(); ++j) {
        cols.emplace_back();
        for (int i = 0; i < n; ++i) cols.back().push_back(b.comps[i * b.cols() + j]);
      }
    } else {
      const std::string sz = std::to_string(n);
      error(loc, name + "(): " + what + " is " + sz + "x" + sz + ", so b is a Vector[" + sz +
                     "] or a Matrix[" + sz + ", k], got " + describe(b));
    }
    return cols;
  };
  const auto as_rhs_shape = [&](const TV& b, const std::vector<std::vector<int>>& cols) {
    if (b.kind == TV::Kind::Vector) return TV::vec(cols[0]);
    const int n = static_cast<int>(cols[0].size()), k = static_cast<int>(cols.size());
    std::vector<int> comps(n * k);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < k; ++j) comps[i * k + j] = cols[j][i];
    return TV::mat(comps, n);
  };
  const auto tuple = [](std::vector<TV> items) {
    TV t;
    t.kind = TV::Kind::Tuple;
    t.items = std::move(items);
    return t;
  };
  const auto nonzero = [&](int info) {  // B: info != 0
    const int izero = o.ki(0);
    return o.lnot(o.eq(info, izero));
  };

  if (name == "eye") {
    arity(1, 1);
    return call_matrix_math("identity", args, loc);
  }
  if (name == "diag") {
    // NumPy's diag: a Vector[k] becomes the k x k diagonal Matrix, a Matrix gives its diagonal.
    arity(1, 1);
    const TV& v = args[0];
    if (v.kind == TV::Kind::Matrix) return call_linalg("diagonal", args, loc);
    if (v.kind != TV::Kind::Vector)
      error(loc, "diag() takes a Vector (to make a diagonal Matrix) or a Matrix (to read its "
                 "diagonal), got " +
                     describe(v));
    const int k = v.width();
    std::vector<int> comps(k * k, o.k(0.0));
    for (int i = 0; i < k; ++i) comps[i * k + i] = v.comps[i];
    return TV::mat(comps, k);
  }
  if (name == "diagonal") {  // numpy.diagonal: m[i, i] for i < min(rows, cols)
    arity(1, 1);
    const TV m = matrix_arg(args[0], "");
    std::vector<int> out;
    for (int i = 0; i < m.rows && i < m.cols(); ++i) out.push_back(m.comps[i * m.cols() + i]);
    return TV::vec(out);
  }
  if (name == "tril" || name == "triu") {  // numpy.tril / triu (m, k=0)
    arity(1, 2);
    const TV m = matrix_arg(args[0], "");
    const int64_t kk = args.size() > 1 ? const_int(args[1], loc, "the diagonal offset k") : 0;
    std::vector<int> comps = m.comps;
    const int zero = o.k(0.0);
    for (int i = 0; i < m.rows; ++i)
      for (int j = 0; j < m.cols(); ++j) {
        const bool keep = name == "tril" ? j - i <= kk : j - i >= kk;
        if (!keep) comps[i * m.cols() + j] = zero;
      }
    return TV::mat(comps, m.rows);
  }
  if (name == "lu") {  // (lu, piv), info: scipy.linalg.lu_factor's pair and LAPACK's info
    arity(1, 1);
    LuFactor f = lu_factor(o, square_arg(args[0], ""));
    const int n = f.lu.n;
    return tuple({tuple({TV::mat(f.lu.c, n), TV::ivec(f.piv)}), TV::iv(f.info)});
  }
  if (name == "lu_solve") {  // lu_solve((lu, piv), b), as scipy.linalg.lu_solve
    arity(2, 2);
    const TV& fac = args[0];
    if (fac.kind != TV::Kind::Tuple || fac.items.size() != 2 ||
        fac.items[0].kind != TV::Kind::Matrix || fac.items[1].kind != TV::Kind::IVector)
      error(loc, "lu_solve() takes the factor lu() returns, (lu, piv) with lu a Matrix[n, n] "
                 "and piv n ints, got " +
                     describe(fac) + "; write f, info = lu(A) and then lu_solve(f, b)");
    const Sq lu = square_arg(fac.items[0], "");
    if (fac.items[1].width() != lu.n)
      error(loc, "lu_solve(): the pivots are " + describe(fac.items[1]) + " but lu is " +
                     std::to_string(lu.n) + "x" + std::to_string(lu.n));
    const auto cols = rhs_arg(args[1], lu.n, "the factor");
    const int singular = any_zero_diagonal(o, lu);
    std::vector<std::vector<int>> out;
    for (const auto& c : cols) out.push_back(lu_solve_column(o, lu, fac.items[1].comps, c, singular));
    return as_rhs_shape(args[1], out);
  }
  if (name == "solve" || name == "inv") {
    arity(name == "inv" ? 1 : 2, name == "inv" ? 1 : 2);
    const Sq a = square_arg(args[0], "");
    const int n = a.n;
    std::vector<std::vector<int>> cols;
    if (name == "solve") {
      cols = rhs_arg(args[1], n, "A");
    } else {  // inv: the columns of the identity
      for (int j = 0; j < n; ++j) {
        cols.emplace_back();
        for (int i = 0; i < n; ++i) cols.back().push_back(o.k(i == j ? 1.0 : 0.0));
      }
    }
    const LuFactor f = lu_factor(o, a);
    const int failed = nonzero(f.info);
    std::vector<std::vector<int>> out;
    for (const auto& c : cols) out.push_back(lu_solve_column(o, f.lu, f.piv, c, failed));
    const TV x = name == "solve" ? as_rhs_shape(args[1], out) : [&] {
      std::vector<int> comps(n * n);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) comps[i * n + j] = out[j][i];
      return TV::mat(comps, n);
    }();
    return tuple({x, TV::iv(f.info)});
  }
  if (name == "cholesky") {
    arity(1, 1);
    const Cholesky c = cholesky(o, square_arg(args[0], ""));
    return tuple({TV::mat(c.l.c, c.l.n), TV::iv(c.info)});
  }
  if (name == "cho_solve") {  // cho_solve(L, b): L L^T x = b with L from cholesky()
    arity(2, 2);
    const Sq l = square_arg(args[0], "L as");
    const auto cols = rhs_arg(args[1], l.n, "L");
    const int singular = any_zero_diagonal(o, l);
    std::vector<std::vector<int>> out;
    for (const auto& c : cols) out.push_back(cho_solve_column(o, l, c, singular));
    return as_rhs_shape(args[1], out);
  }
  if (name == "lstsq") {
    // x minimising |J x - r| through the normal equations J^T J x = J^T r, by Cholesky.
    arity(2, 2);
    const TV j = matrix_arg(args[0], "J as");
    const int m = j.rows, n = j.cols();
    if (n > kMaxSize)
      error(loc, "lstsq() of " + describe(j) + ": hawk.math writes it out for up to " +
                     std::to_string(kMaxSize) + " unknowns (columns)");
    const TV& r = args[1];
    std::vector<std::vector<int>> rcols;
    if (r.kind == TV::Kind::Vector && r.width() == m) {
      rcols.push_back(r.comps);
    } else if (r.kind == TV::Kind::Matrix && r.rows == m) {
      for (int c = 0; c < r.cols(); ++c) {
        rcols.emplace_back();
        for (int i = 0; i < m; ++i) rcols.back().push_back(r.comps[i * r.cols() + c]);
      }
    } else {
      error(loc, "lstsq(): J is " + describe(j) + ", so r is a Vector[" + std::to_string(m) +
                     "] or a Matrix[" + std::to_string(m) + ", k], got " + describe(r));
    }
    const auto J = [&](int i, int c) { return j.comps[i * n + c]; };
    Sq g{std::vector<int>(n * n), n};
    for (int a = 0; a < n; ++a)
      for (int b = 0; b <= a; ++b) {
        std::vector<std::pair<int, int>> terms;
        for (int i = 0; i < m; ++i) terms.emplace_back(J(i, a), J(i, b));
        g.at(a, b) = g.at(b, a) = signed_sum(terms);
      }
    const Cholesky c = cholesky(o, g);
    const int failed = nonzero(c.info);
    std::vector<std::vector<int>> out;
    for (const auto& rc : rcols) {
      std::vector<int> rhs;
      for (int a = 0; a < n; ++a) {
        std::vector<std::pair<int, int>> terms;
        for (int i = 0; i < m; ++i) terms.emplace_back(J(i, a), rc[i]);
        rhs.push_back(signed_sum(terms));
      }
      out.push_back(cho_solve_column(o, c.l, rhs, failed));
    }
    TV x;
    if (r.kind == TV::Kind::Vector) {
      x = TV::vec(out[0]);
    } else {
      const int k = static_cast<int>(out.size());
      std::vector<int> comps(n * k);
      for (int i = 0; i < n; ++i)
        for (int q = 0; q < k; ++q) comps[i * k + q] = out[q][i];
      x = TV::mat(comps, n);
    }
    return tuple({x, TV::iv(c.info)});
  }
  // eigh: w, V, info for the symmetric part of A, by cyclic Jacobi rotations.
  arity(1, 1);
  const Sq in = square_arg(args[0], "");
  const int n = in.n;
  const int zero = o.k(0.0), one = o.k(1.0), two = o.k(2.0), half = o.k(0.5);
  Sq a{in.c, n};  // the symmetric part; only the upper triangle (i <= j) is kept up to date
  for (int i = 0; i < n; ++i)
    for (int q = i + 1; q < n; ++q) {
      const int s = o.add(in.at(i, q), in.at(q, i));
      a.at(i, q) = o.mul(half, s);
    }
  const auto A = [&](int i, int q) -> int& { return i <= q ? a.at(i, q) : a.at(q, i); };
  Sq v{std::vector<int>(n * n, zero), n};
  for (int i = 0; i < n; ++i) v.at(i, i) = one;
  const int minus_one = o.k(-1.0);
  for (int sweep = 0; sweep < jacobi_sweeps(n); ++sweep)
    for (int p = 0; p < n; ++p)
      for (int q = p + 1; q < n; ++q) {
        // The rotation zeroing a_pq: t = tan(angle), the smaller root of t^2 + 2 t theta - 1,
        // theta = (a_qq - a_pp) / (2 a_pq), written as sign(d) 2 a_pq / (|d| + hypot(d, 2 a_pq))
        // with d = a_qq - a_pp: smooth in a_pq through 0 (so an already diagonal A still
        // differentiates right) and free of overflow; d = a_pq = 0 gives t = 0.
        const int apq = A(p, q);
        const int d = o.sub(A(q, q), A(p, p));
        const int dz = o.is_zero(d);
        const int az = o.is_zero(apq);
        const int both = o.land(dz, az);
        const int dsafe = o.sel(both, one, d);
        const int tw = o.mul(two, apq);
        const int h = o.hypot(dsafe, tw);
        const int den = o.add(o.abs(d), h);
        const int sg = o.sel(o.lt(d, zero), minus_one, one);
        const int t = o.div(o.mul(sg, tw), den);
        const int tt = o.mul(t, t);
        const int c = o.div(one, o.sqrt(o.add(one, tt)));
        const int s = o.mul(t, c);
        const int ta = o.mul(t, apq);
        const int app = o.sub(A(p, p), ta);
        const int aqq = o.add(A(q, q), ta);
        for (int r = 0; r < n; ++r) {
          if (r == p || r == q) continue;
          const int arp = A(r, p), arq = A(r, q);
          const int cp = o.mul(c, arp), sq = o.mul(s, arq);  // declarators run in order
          const int np = o.sub(cp, sq);
          const int sp = o.mul(s, arp), cq = o.mul(c, arq);
          const int nq = o.add(sp, cq);
          A(r, p) = np;
          A(r, q) = nq;
        }
        A(p, p) = app;
        A(q, q) = aqq;
        A(p, q) = zero;
        for (int r = 0; r < n; ++r) {
          const int vp = v.at(r, p), vq = v.at(r, q);
          const int cp = o.mul(c, vp), sq = o.mul(s, vq);
          const int np = o.sub(cp, sq);
          const int sp = o.mul(s, vp), cq = o.mul(c, vq);
          const int nq = o.add(sp, cq);
          v.at(r, p) = np;
          v.at(r, q) = nq;
        }
      }
  // info 1: the off-diagonal left is more than 1e-5 of |A| (a NaN or infinite A).
  std::vector<std::pair<int, int>> off, all;
  for (int i = 0; i < n; ++i)
    for (int q = i; q < n; ++q) (i == q ? all : off).emplace_back(A(i, q), A(i, q));
  const int info0 = o.ki(0);
  int info = info0;
  if (!off.empty()) {
    const int off2 = signed_sum(off);
    const int diag2 = signed_sum(all);
    const int tot = o.add(diag2, o.mul(two, off2));
    const int tol = o.k(1e-10);
    const int ok = o.le(off2, o.mul(tol, tot));
    const int ione = o.ki(1);
    info = o.isel(ok, info0, ione);
  } else {  // 1 x 1: a NaN is not converged either
    const int d = A(0, 0);
    const int ok = o.eq(d, d);
    const int ione = o.ki(1);
    info = o.isel(ok, info0, ione);
  }
  // Ascending order: an odd-even transposition network of compare-exchanges, V's columns along.
  std::vector<int> w(n);
  for (int i = 0; i < n; ++i) w[i] = A(i, i);
  for (int round = 0; round < n; ++round)
    for (int i = round % 2; i + 1 < n; i += 2) {
      const int sw = o.gt(w[i], w[i + 1]);
      const int lo = o.sel(sw, w[i + 1], w[i]);
      const int hi = o.sel(sw, w[i], w[i + 1]);
      w[i] = lo;
      w[i + 1] = hi;
      for (int r = 0; r < n; ++r) {
        const int x = o.sel(sw, v.at(r, i + 1), v.at(r, i));
        const int y = o.sel(sw, v.at(r, i), v.at(r, i + 1));
        v.at(r, i) = x;
        v.at(r, i + 1) = y;
      }
    }
  // Each eigenvector signed so that its largest-magnitude component (the first of equals) is
  // positive.
  for (int col = 0; col < n; ++col) {
    int best = o.abs(v.at(0, col));
    int neg = o.lt(v.at(0, col), zero);
    for (int r = 1; r < n; ++r) {
      const int m = o.abs(v.at(r, col));
      const int wins = o.gt(m, best);
      best = o.sel(wins, m, best);
      const int rneg = o.lt(v.at(r, col), zero);
      neg = emit(Op::Select, Type::B, wins, rneg, neg);
    }
    for (int r = 0; r < n; ++r) {
      const int flipped = o.neg(v.at(r, col));
      v.at(r, col) = o.sel(neg, flipped, v.at(r, col));
    }
  }
  const int failed = nonzero(info);
  return tuple({TV::vec(o.zero_where(failed, w)), TV::mat(o.zero_where(failed, v.c), n),
                TV::iv(info)});
}

}  // namespace raptor::ir::front
