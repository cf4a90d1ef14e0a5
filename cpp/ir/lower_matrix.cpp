// Matrices and quaternions in the front end (docs/language.md "Matrices and quaternions").
// A Matrix[r, c] is r * c scalar components in row-major order (comp = i * c + j), like a
// Vector[k] is k components: passes, AD and codegen never see matrices, so every function here
// expands into scalar IR and is derivable. Quaternions are Vector[4] in (x, y, z, w) order,
// scalar last (SciPy's and Warp's). Start at `Lowerer::call_matrix_math`; `a @ b` is `matmul`.
#include <functional>
#include <utility>

#include "ir/lower.hpp"
#include "ir/lower_ctx.hpp"

namespace raptor::ir::front {

// Never as nested calls (`sub(add(mul(a, b), ...), ...)`): a call's arguments are evaluated in
// an unspecified order (GCC right to left, Clang left to right), which would number the IR, and
// so the emitted text and the cache key, per compiler.
int Lowerer::signed_sum(const std::vector<std::pair<int, int>>& products,
                        const std::vector<bool>& plus) {
  int acc = -1;
  for (size_t k = 0; k < products.size(); ++k) {
    const int p = emit(Op::Mul, Type::F, products[k].first, products[k].second);
    const bool add = k == 0 || k - 1 >= plus.size() || plus[k - 1];
    acc = k == 0 ? p : emit(add ? Op::Add : Op::Sub, Type::F, acc, p);
  }
  return acc;
}

TV Lowerer::matmul(const TV& a, const TV& b, parse::Loc loc) {
  // rows x inner times inner x cols, each operand read through an accessor.
  const auto product = [&](int rows, int inner, int cols, const std::function<int(int, int)>& A,
                           const std::function<int(int, int)>& B) {
    std::vector<int> out;
    std::vector<std::pair<int, int>> terms;
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) {
        terms.clear();
        for (int l = 0; l < inner; ++l) terms.emplace_back(A(i, l), B(l, j));
        out.push_back(signed_sum(terms));
      }
    return out;
  };
  const bool ma = a.kind == TV::Kind::Matrix, mb = b.kind == TV::Kind::Matrix;
  const bool va = a.kind == TV::Kind::Vector, vb = b.kind == TV::Kind::Vector;
  if (!(ma || va) || !(mb || vb))
    error(loc, "'@' multiplies matrices and vectors, got " + describe(a) + " and " + describe(b) +
                   "; use '*' to scale by a Scalar");
  const int ar = ma ? a.rows : 1, ac = ma ? a.cols() : a.width();  // a vector on the left: a row
  const int br = mb ? b.rows : b.width(), bc = mb ? b.cols() : 1;  // on the right: a column
  if (ac != br)
    error(loc, "'@' of " + describe(a) + " and " + describe(b) + ": the left operand has " +
                   std::to_string(ac) + " columns but the right one has " + std::to_string(br) +
                   " rows; transpose(m) or reorder the operands");
  const auto A = [&](int i, int j) { return a.comps[i * ac + j]; };
  const auto B = [&](int i, int j) { return b.comps[i * bc + j]; };
  const std::vector<int> out = product(ar, ac, bc, A, B);
  if (ma && mb) return TV::mat(out, ar);
  if (ma || mb) return TV::vec(out);  // matrix @ vector, vector @ matrix
  return TV::f(out[0]);               // vector @ vector: the dot product, as NumPy
}

TV Lowerer::matrix_index(const TV& m, const TV& idx, const parse::Expr& at) {
  const int r = m.rows, c = m.cols();
  const auto fix = [&](const TV& i, int n, const char* what) {
    const int64_t given = const_int(i, at.loc, "a matrix index");
    const int64_t v = given < 0 ? given + n : given;
    if (v < 0 || v >= n)
      error(at.loc, std::string(what) + " index " + std::to_string(given) +
                        " is out of range for " + describe(m) + " (0.." + std::to_string(n - 1) +
                        ")");
    return static_cast<int>(v);
  };
  if (idx.kind == TV::Kind::Tuple) {
    if (idx.items.size() != 2)
      error(at.loc, "a matrix is indexed m[i, j] (a component) or m[i] (a row), not with " +
                        std::to_string(idx.items.size()) + " indices");
    const int i = fix(idx.items[0], r, "row"), j = fix(idx.items[1], c, "column");
    return TV::f(m.comps[i * c + j]);
  }
  const int i = fix(idx, r, "row");
  return TV::vec(std::vector<int>(m.comps.begin() + i * c, m.comps.begin() + (i + 1) * c));
}

std::optional<TV> Lowerer::call_matrix_math(const std::string& name, const std::vector<TV>& args,
                                            parse::Loc loc) {
  const auto arity = [&](size_t n) {
    if (args.size() != n)
      error(loc, name + "() takes " + std::to_string(n) + " argument" + (n == 1 ? "" : "s") +
                     ", got " + std::to_string(args.size()));
  };
  const auto mul = [&](int x, int y) { return emit(Op::Mul, Type::F, x, y); };
  const auto add = [&](int x, int y) { return emit(Op::Add, Type::F, x, y); };
  const auto sub = [&](int x, int y) { return emit(Op::Sub, Type::F, x, y); };
  const auto neg = [&](int x) { return emit(Op::Neg, Type::F, x); };
  const auto matrix_arg = [&](const TV& v) {
    if (v.kind != TV::Kind::Matrix)
      error(loc, name + "() takes a Matrix, got " + describe(v) +
                     (v.kind == TV::Kind::Vector ? "; build one with mat(row, row, ...)" : ""));
    return v;
  };
  const auto square_arg = [&](const TV& v, int max_n) {
    const TV m = matrix_arg(v);
    if (m.rows != m.cols()) error(loc, name + "() takes a square Matrix, got " + describe(m));
    if (m.rows > max_n)
      error(loc, name + "() of " + describe(m) + ": hawk.math writes it out for sizes 1 to " +
                     std::to_string(max_n) +
                     "; for a larger system write the elimination with `for` loops over "
                     "components");
    return m;
  };
  const auto quat_arg = [&](const TV& v) {
    if (v.kind != TV::Kind::Vector || v.width() != 4)
      error(loc, name + "() takes quaternions as Vector[4] (x, y, z, w), got " + describe(v));
    return v.comps;
  };
  const auto vec3_arg = [&](const TV& v) {
    if (v.kind != TV::Kind::Vector || v.width() != 3)
      error(loc, name + "() takes a Vector[3] here, got " + describe(v));
    return v.comps;
  };
  // The determinant of the n x n matrix whose (i, j) component is at(i, j), by cofactor
  // expansion along the first row (n <= 4; CSE shares the minors).
  std::function<int(int, const std::function<int(int, int)>&)> det =
      [&](int n, const std::function<int(int, int)>& at) -> int {
    if (n == 1) return at(0, 0);
    if (n == 2) return signed_sum({{at(0, 0), at(1, 1)}, {at(0, 1), at(1, 0)}}, {false});
    int acc = -1;
    for (int j = 0; j < n; ++j) {
      const auto minor = [&, j](int r, int c) { return at(r + 1, c < j ? c : c + 1); };
      const int term = mul(at(0, j), det(n - 1, minor));
      acc = acc < 0 ? term : (j % 2 ? sub(acc, term) : add(acc, term));
    }
    return acc;
  };

  if (name == "mat") {
    // mat(row0, row1, ...): each row a Vector (vec(...)) or a tuple of numbers, all one size.
    if (args.empty())
      error(loc, "mat() takes its rows: mat(vec(a, b), vec(c, d)) or mat((a, b), (c, d))");
    std::vector<int> comps;
    int cols = -1;
    for (const TV& row : args) {
      std::vector<int> r;
      if (row.kind == TV::Kind::Vector)
        r = row.comps;
      else if (row.kind == TV::Kind::Tuple)
        for (const TV& x : row.items) r.push_back(to_float(x, loc, "each entry of a mat() row"));
      else
        error(loc, "mat() takes its rows, each a Vector or a tuple of numbers, got " +
                       describe(row) + "; write mat(vec(a, b), vec(c, d)) or mat((a, b), (c, d))");
      if (cols >= 0 && static_cast<int>(r.size()) != cols)
        error(loc, "mat() rows have different sizes: " + std::to_string(cols) + " and " +
                       std::to_string(r.size()));
      cols = static_cast<int>(r.size());
      comps.insert(comps.end(), r.begin(), r.end());
    }
    return TV::mat(comps, static_cast<int>(args.size()));
  }
  if (name == "identity") {
    arity(1);
    const int64_t n = const_int(args[0], loc, "identity()'s size");
    if (n < 1 || n > 64) error(loc, "identity(n) takes n from 1 to 64, got " + std::to_string(n));
    std::vector<int> comps;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) comps.push_back(konst(i == j ? 1.0 : 0.0));
    return TV::mat(comps, static_cast<int>(n));
  }
  if (name == "transpose") {
    arity(1);
    const TV m = matrix_arg(args[0]);
    const int r = m.rows, c = m.cols();
    std::vector<int> comps;
    for (int j = 0; j < c; ++j)
      for (int i = 0; i < r; ++i) comps.push_back(m.comps[i * c + j]);
    return TV::mat(comps, c);
  }
  if (name == "outer") {
    arity(2);
    if (args[0].kind != TV::Kind::Vector || args[1].kind != TV::Kind::Vector)
      error(loc,
            "outer() takes two Vectors, got " + describe(args[0]) + " and " + describe(args[1]));
    std::vector<int> comps;
    for (int x : args[0].comps)
      for (int y : args[1].comps) comps.push_back(mul(x, y));
    return TV::mat(comps, args[0].width());
  }
  if (name == "trace") {
    arity(1);
    const TV m = square_arg(args[0], 1 << 20);
    int acc = m.comps[0];
    for (int i = 1; i < m.rows; ++i) acc = add(acc, m.comps[i * m.rows + i]);
    return TV::f(acc);
  }
  if (name == "det" || name == "inverse") {
    arity(1);
    const TV m = square_arg(args[0], 4);
    const int n = m.rows;
    const auto at = [&](int i, int j) { return m.comps[i * n + j]; };
    const int d = det(n, at);
    if (name == "det") return TV::f(d);
    // The adjugate over the determinant: inverse[i][j] = cofactor(j, i) / det.
    std::vector<int> comps;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        int cof;
        if (n == 1) {
          cof = konst(1.0);
        } else {
          const auto minor = [&](int r, int c) { return at(r < j ? r : r + 1, c < i ? c : c + 1); };
          cof = det(n - 1, minor);
          if ((i + j) % 2) cof = neg(cof);
        }
        comps.push_back(emit(Op::Div, Type::F, cof, d));
      }
    return TV::mat(comps, n);
  }
  if (name == "quat_mul") {
    arity(2);
    const std::vector<int> a = quat_arg(args[0]), b = quat_arg(args[1]);
    const int ax = a[0], ay = a[1], az = a[2], aw = a[3];
    const int bx = b[0], by = b[1], bz = b[2], bw = b[3];
    // The Hamilton product (a * b rotates by b, then by a): each component p0 +- p1 +- p2 +- p3.
    const int x = signed_sum({{aw, bx}, {ax, bw}, {ay, bz}, {az, by}}, {true, true, false});
    const int y = signed_sum({{aw, by}, {ax, bz}, {ay, bw}, {az, bx}}, {false, true, true});
    const int z = signed_sum({{aw, bz}, {ax, by}, {ay, bx}, {az, bw}}, {true, false, true});
    const int w = signed_sum({{aw, bw}, {ax, bx}, {ay, by}, {az, bz}}, {false, false, false});
    return TV::vec({x, y, z, w});
  }
  if (name == "quat_conj") {
    arity(1);
    const std::vector<int> q = quat_arg(args[0]);
    return TV::vec({neg(q[0]), neg(q[1]), neg(q[2]), q[3]});
  }
  if (name == "quat_rotate") {
    // v rotated by the unit quaternion q: v (2w^2 - 1) + 2w (u x v) + 2u (u . v), u = q's
    // vector part (Warp's formula; equal to q v q* for a unit q).
    arity(2);
    const std::vector<int> q = quat_arg(args[0]);
    const std::vector<int> v = vec3_arg(args[1]);
    const int w = q[3];
    const int two = konst(2.0);
    // One operation per statement (or per braced initializer, which C++ sequences): see
    // signed_sum on the order of nested calls' arguments.
    const int ww = mul(w, w);
    const int two_ww = mul(two, ww);
    const int s = sub(two_ww, konst(1.0));
    const int d = signed_sum({{q[0], v[0]}, {q[1], v[1]}, {q[2], v[2]}});
    const auto cross = [&](int i, int j) {  // q[i] v[j] - q[j] v[i]
      return signed_sum({{q[i], v[j]}, {q[j], v[i]}}, {false});
    };
    const int c[3] = {cross(1, 2), cross(2, 0), cross(0, 1)};
    const int tw = mul(two, w), td = mul(two, d);
    std::vector<int> out;
    for (int i = 0; i < 3; ++i) {
      const int vs = mul(v[i], s);
      const int ct = mul(c[i], tw);
      const int qt = mul(q[i], td);
      const int sum = add(vs, ct);
      out.push_back(add(sum, qt));
    }
    return TV::vec(out);
  }
  if (name == "quat_to_matrix") {
    // The rotation matrix of a unit quaternion (SciPy's Rotation.as_matrix for (x, y, z, w)).
    arity(1);
    const std::vector<int> q = quat_arg(args[0]);
    const int x = q[0], y = q[1], z = q[2], w = q[3];
    const int one = konst(1.0), two = konst(2.0);
    const auto twice = [&](int a) { return mul(two, a); };
    const int xx = mul(x, x), yy = mul(y, y), zz = mul(z, z);
    const int xy = mul(x, y), xz = mul(x, z), yz = mul(y, z);
    const int xw = mul(x, w), yw = mul(y, w), zw = mul(z, w);
    return TV::mat({sub(one, twice(add(yy, zz))), twice(sub(xy, zw)), twice(add(xz, yw)),
                    twice(add(xy, zw)), sub(one, twice(add(xx, zz))), twice(sub(yz, xw)),
                    twice(sub(xz, yw)), twice(add(yz, xw)), sub(one, twice(add(xx, yy)))},
                   3);
  }
  if (name == "quat_from_axis_angle") {
    // (normalize(axis) * sin(angle / 2), cos(angle / 2)), as Warp.
    arity(2);
    const std::vector<int> axis = vec3_arg(args[0]);
    const int angle = to_float(args[1], loc, "quat_from_axis_angle()'s angle");
    const int len2 = signed_sum({{axis[0], axis[0]}, {axis[1], axis[1]}, {axis[2], axis[2]}});
    const int len = emit(Op::Sqrt, Type::F, len2);
    const int half = mul(angle, konst(0.5));
    const int s = emit(Op::Sin, Type::F, half);
    std::vector<int> out;
    for (int i = 0; i < 3; ++i) out.push_back(mul(emit(Op::Div, Type::F, axis[i], len), s));
    out.push_back(emit(Op::Cos, Type::F, half));
    return TV::vec(out);
  }
  return call_linalg(name, args, loc);
}

}  // namespace raptor::ir::front
