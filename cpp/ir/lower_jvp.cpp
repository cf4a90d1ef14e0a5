// Helpers with their own derivative (@helper.defjvp, jax.custom_jvp's convention) in the front
// end (docs/language.md "Custom derivatives"). Start at `Lowerer::call_custom_jvp`.
//
// The rule `rule(primals, tangents) -> (primal_out, tangent_out)` is linear in the tangents, so
// tangent_out at tangents = e_k (1 for float input component k, 0 elsewhere) is the coefficient
// c_k of d x_k. The call's value is the helper's body with its derivative cut (Op::StopGrad),
// and each output component carries its coefficients with Op::CustomJvp(value, x_k, c_k):
// d out = sum_k c_k d x_k in tangent and adjoint kernels alike (ad/rules.cpp). The c_k are
// ordinary IR values of the primals, so a second derivative differentiates the rule, as JAX
// does. Inside its own rule, a call to the helper is its plain body.
#include <cmath>
#include <functional>

#include "ir/lower.hpp"
#include "ir/lower_ctx.hpp"

namespace raptor::ir::front {

namespace {

// The float components of a value, in order (a tuple's items one after another).
void leaves(const TV& v, std::vector<int>& out) {
  if (v.kind == TV::Kind::Float || v.shaped())
    out.insert(out.end(), v.comps.begin(), v.comps.end());
  else if (v.kind == TV::Kind::Tuple)
    for (const TV& item : v.items) leaves(item, out);
}

// `v` with its float components replaced by `vals[pos...]`.
TV rebuild(const TV& v, const std::vector<int>& vals, size_t& pos) {
  TV out = v;
  if (v.kind == TV::Kind::Float || v.shaped()) {
    for (int& c : out.comps) c = vals[pos++];
  } else if (v.kind == TV::Kind::Tuple) {
    for (TV& item : out.items) item = rebuild(item, vals, pos);
  }
  return out;
}

// The structure of a value for messages and checks: "Scalar", "Vector[3]", "(Scalar, int)".
std::string structure(const TV& v) {
  if (v.kind == TV::Kind::Tuple) {
    std::string s = "(";
    for (size_t i = 0; i < v.items.size(); ++i) s += (i ? ", " : "") + structure(v.items[i]);
    return s + ")";
  }
  if (v.kind == TV::Kind::Int) return "an integer";
  return describe(v);
}

}  // namespace

TV Lowerer::call_custom_jvp(int helper, const std::vector<TV>& args, parse::Loc loc) {
  const FunctionSource& fn = spec_.helpers[helper];
  const FunctionSource& rule = spec_.helpers[fn.jvp];

  // The tangent of each argument, `scale` at float component `hot` (counted over all
  // arguments) and 0 elsewhere; integers and bools get a zero Scalar (they have no tangent).
  int counter = 0;
  std::function<TV(const TV&, int, double)> tangent_like = [&](const TV& v, int hot,
                                                               double scale) -> TV {
    switch (v.kind) {
      case TV::Kind::Float:
      case TV::Kind::Vector:
      case TV::Kind::Matrix: {
        std::vector<int> c;
        for (size_t i = 0; i < v.comps.size(); ++i)
          c.push_back(konst(counter++ == hot ? scale : 0.0));
        return v.kind == TV::Kind::Float ? TV::f(c[0]) : v.like(c);
      }
      case TV::Kind::Int:
      case TV::Kind::Bool:
        return TV::f(konst(0.0));
      case TV::Kind::Tuple: {
        TV t = v;
        for (TV& item : t.items) item = tangent_like(item, hot, scale);
        return t;
      }
      default:
        error(loc, "helper '" + fn.name + "' has a custom derivative (@" + fn.name +
                       ".defjvp), so its arguments must be numbers, vectors, matrices or tuples "
                       "of them; got " +
                       describe(v));
    }
  };
  const auto tuple_of = [](std::vector<TV> items) {
    TV t;
    t.kind = TV::Kind::Tuple;
    t.items = std::move(items);
    return t;
  };
  std::vector<int> xs;
  for (const TV& a : args) leaves(a, xs);

  // The primal value: the body, its derivative cut below.
  const TV primal = inline_helper(helper, args, loc);
  std::vector<int> outs;
  leaves(primal, outs);

  // The rule at tangents = scale * e_hot (hot = -1: all zero): its tangent_out's components.
  const auto rule_at = [&](int hot, double scale) {
    std::vector<TV> tangents;
    counter = 0;
    for (const TV& a : args) tangents.push_back(tangent_like(a, hot, scale));
    rules_active_.push_back(helper);
    const TV r = inline_helper(fn.jvp, {tuple_of(args), tuple_of(tangents)}, loc);
    rules_active_.pop_back();
    if (r.kind != TV::Kind::Tuple || r.items.size() != 2)
      error(loc, "the derivative rule '" + rule.name + "' of helper '" + fn.name +
                     "' must return (primal_out, tangent_out), as jax.custom_jvp's rules do; it "
                     "returned " +
                     structure(r));
    const TV& t_out = r.items[1];
    std::vector<int> t;
    leaves(t_out, t);
    if (structure(t_out) != structure(primal) || t.size() != outs.size())
      error(loc, "the derivative rule '" + rule.name + "' of helper '" + fn.name +
                     "' returns a tangent_out of shape " + structure(t_out) +
                     " but the helper returns " + structure(primal) +
                     "; tangent_out must have the helper's output shape");
    return t;
  };
  const auto constant = [&](int v) { return const_value(v); };
  // Linearity, where it shows in constants: tangent_out(0) = 0, tangent_out(2 e_k) = 2 c_k.
  for (const int t : rule_at(-1, 0.0))
    if (const auto c = constant(t); c && *c != 0.0)
      error(loc, "the derivative rule '" + rule.name + "' of helper '" + fn.name +
                     "' is not linear in the tangents: its tangent_out is " + std::to_string(*c) +
                     " when every tangent is 0; tangent_out must be a linear function of the "
                     "tangents (as jax.custom_jvp requires)");
  std::vector<std::vector<int>> coeff(xs.size());
  for (size_t k = 0; k < xs.size(); ++k) {
    coeff[k] = rule_at(static_cast<int>(k), 1.0);
    const std::vector<int> twice = rule_at(static_cast<int>(k), 2.0);
    for (size_t j = 0; j < outs.size(); ++j) {
      const auto a = constant(coeff[k][j]), b = constant(twice[j]);
      if (a && b && !(*b == 2.0 * *a || (std::isnan(*a) && std::isnan(*b))))
        error(loc, "the derivative rule '" + rule.name + "' of helper '" + fn.name +
                       "' is not linear in the tangents: doubling a tangent turns " +
                       std::to_string(*a) + " into " + std::to_string(*b) +
                       "; tangent_out must be a linear function of the tangents (as "
                       "jax.custom_jvp requires)");
    }
  }

  // Each output component: the body's value, derivative sum_k c_k d x_k.
  std::vector<int> wrapped;
  for (size_t j = 0; j < outs.size(); ++j) {
    int v = emit(Op::StopGrad, Type::F, outs[j]);
    for (size_t k = 0; k < xs.size(); ++k) {
      const int c = coeff[k][j];
      if (const auto cv = constant(c); cv && *cv == 0.0) continue;  // no term
      if (constant(xs[k])) continue;                                // a constant input
      v = emit(Op::CustomJvp, Type::F, v, xs[k], c);
    }
    wrapped.push_back(v);
  }
  size_t pos = 0;
  return rebuild(primal, wrapped, pos);
}

}  // namespace raptor::ir::front
