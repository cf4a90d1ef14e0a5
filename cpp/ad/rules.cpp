// Derivative rules of the IR operators (see rules.hpp). `partials` is one switch over the
// operators.
//
// Conventions, chosen to give the same numbers as jax.grad / jax.jvp of the same jax.numpy
// code (checked with JAX 0.12 in float64; r is the op's own result, reused):
//   neg x          -1
//   sqrt x         0.5 / r                       (inf at 0, as JAX)
//   exp x          r
//   log x          1 / x  (applied as ct / x)
//   sin x          cos x
//   cos x          -sin x
//   tan x          1 + r*r
//   tanh x         1 - r*r
//   abs x          x >= 0 ? 1 : -1               (1 at 0 and -1 at NaN: lax.abs's jvp is
//                                                 select(x >= 0, g, -g), NOT sign(x))
//   floor, sign    0 (no tangent)
//   x + y, x - y   1, 1 / 1, -1
//   x * y          y, x
//   x / y          1/y (applied as ct / y), -(r / y)
//   pow(x, y)      d/dx = y * pow(x, y - 1)      (NaN at x = 0, y = 0, as JAX)
//                  d/dy = log(x == 0 ? 1 : x) * r (0 at x = 0 unless r is inf, as JAX)
//   powi(x, n)     n * powi(x, n - 1); n = 0: 0; n = 1: 1
//   atan2(y, x)    d/dy = x / (x*x + y*y), d/dx = -(y / (x*x + y*y))
//   min(a, b)      d/da = a < b ? 1 : (a == b ? 0.5 : 0), d/db likewise with b < a
//   max(a, b)      d/da = a > b ? 1 : (a == b ? 0.5 : 0), d/db likewise with b > a
//                  (ties split the tangent in half: jax.grad(jnp.maximum)(1., 1.) = 0.5;
//                  NaN operands get 0)
//   select(c,a,b)  a where c, b elsewhere (handled by the transforms, not here); the
//                  condition has no derivative
//   stop_grad x    0 (hawk.math.stop_gradient)
//   custom_jvp(a, x, c)  1 for a, c for x, none for c: a @helper.defjvp rule's term
//                  c * dx (c is the rule's tangent_out at tangent e_x; lower.cpp)
//   comparisons, and/or/not, to_index, load_mask, constants: no derivative
//   load_table     the index has no derivative; the entry's tangent is the tangent table's
//                  entry, its cotangent a TableSum at the same index (in the transforms)
// Differences from JAX, on purpose: a value whose predicate is false contributes exactly 0
// to its operands' cotangents (adjoint.cpp wraps each contribution whose partial is not a
// constant in select(pred, ct * partial, 0)), where JAX's jnp.where(x > 0, jnp.sqrt(x), 0.) has a
// NaN gradient at x < 0.
#include "ad/rules.hpp"

#include <stdexcept>

namespace raptor::ad {

using ir::Op;
using Kind = Partial::Kind;

bool has_partials(Op op) {
  switch (op) {
    case Op::Neg:
    case Op::Sqrt:
    case Op::Exp:
    case Op::Log:
    case Op::Sin:
    case Op::Cos:
    case Op::Tan:
    case Op::Tanh:
    case Op::Abs:
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Pow:
    case Op::Atan2:
    case Op::Min:
    case Op::Max:
    case Op::PowI:
    case Op::StopGrad:
    case Op::CustomJvp:
      return true;
    default:
      return false;
  }
}

std::vector<Partial> partials(Builder& b, int v, const std::function<bool(int)>& need) {
  const ir::Value val = b.value(v);  // a copy: the builder's vector grows below
  const int p = val.pred;
  const int x = val.args[0];
  const int y = val.args[1];
  b.set_origin(val.loc);
  std::vector<Partial> out;
  auto mul = [&](int arg, int factor) { out.push_back({Kind::Mul, arg, factor}); };
  auto one = [&](int arg) { out.push_back({Kind::One, arg, -1}); };
  auto minus_one = [&](int arg) { out.push_back({Kind::MinusOne, arg, -1}); };
  auto op = [&](Op o, std::initializer_list<int> args) { return b.op(o, args, p); };
  auto c = [&](double d) { return b.constant(d); };
  const bool n0 = need(0);
  const bool n1 = ir::op_arity(val.op) > 1 && need(1);
  switch (val.op) {
    case Op::Neg:
      if (n0) minus_one(0);
      break;
    case Op::Sqrt:
      if (n0) mul(0, op(Op::Div, {c(0.5), v}));
      break;
    case Op::Exp:
      if (n0) mul(0, v);
      break;
    case Op::Log:
      if (n0) out.push_back({Kind::Div, 0, x});
      break;
    case Op::Sin:
      if (n0) mul(0, op(Op::Cos, {x}));
      break;
    case Op::Cos:
      if (n0) mul(0, op(Op::Neg, {op(Op::Sin, {x})}));
      break;
    case Op::Tan:
      if (n0) mul(0, op(Op::Add, {c(1.0), op(Op::Mul, {v, v})}));
      break;
    case Op::Tanh:
      if (n0) mul(0, op(Op::Sub, {c(1.0), op(Op::Mul, {v, v})}));
      break;
    case Op::Abs:
      if (n0) mul(0, op(Op::Select, {op(Op::Ge, {x, c(0.0)}), c(1.0), c(-1.0)}));
      break;
    case Op::Add:
      if (n0) one(0);
      if (n1) one(1);
      break;
    case Op::Sub:
      if (n0) one(0);
      if (n1) minus_one(1);
      break;
    case Op::Mul:
      if (n0) mul(0, y);
      if (n1) mul(1, x);
      break;
    case Op::Div:
      if (n0) out.push_back({Kind::Div, 0, y});
      if (n1) mul(1, op(Op::Neg, {op(Op::Div, {v, y})}));
      break;
    case Op::Pow:
      if (n0) mul(0, op(Op::Mul, {y, op(Op::Pow, {x, op(Op::Sub, {y, c(1.0)})})}));
      if (n1) {
        const int safe_x = op(Op::Select, {op(Op::Eq, {x, c(0.0)}), c(1.0), x});
        mul(1, op(Op::Mul, {op(Op::Log, {safe_x}), v}));
      }
      break;
    case Op::Atan2:
      if (n0 || n1) {
        const int d = op(Op::Add, {op(Op::Mul, {x, x}), op(Op::Mul, {y, y})});
        if (n0) mul(0, op(Op::Div, {y, d}));
        if (n1) mul(1, op(Op::Neg, {op(Op::Div, {x, d})}));
      }
      break;
    case Op::Min:
    case Op::Max: {
      const Op wins = val.op == Op::Min ? Op::Lt : Op::Gt;
      int half = -1;
      auto partial = [&](int a, int other) {
        if (half == -1) half = op(Op::Select, {op(Op::Eq, {x, y}), c(0.5), c(0.0)});
        return op(Op::Select, {op(wins, {a, other}), c(1.0), half});
      };
      if (n0) mul(0, partial(x, y));
      if (n1) mul(1, partial(y, x));
      break;
    }
    case Op::PowI: {
      const int64_t n = val.iimm;
      if (!n0 || n == 0) break;
      if (n == 1)
        one(0);
      else if (n == 2)
        mul(0, op(Op::Mul, {c(2.0), x}));
      else
        mul(0, op(Op::Mul, {c(static_cast<double>(n)), b.powi(x, n - 1, p)}));
      break;
    }
    case Op::StopGrad:  // no derivative
      break;
    case Op::CustomJvp:  // d args[0] + args[2] * d args[1]; args[2] is the rule's coefficient
      if (n0) one(0);
      if (n1) mul(1, val.args[2]);
      break;
    default:
      throw std::logic_error(std::string("raptor AD: no partials for ") + ir::op_name(val.op));
  }
  return out;
}

int apply(Builder& b, const Partial& p, int x, int pred) {
  switch (p.kind) {
    case Kind::One:
      return x;
    case Kind::MinusOne:
      return b.op(Op::Neg, {x}, pred);
    case Kind::Mul:
      return b.op(Op::Mul, {x, p.value}, pred);
    case Kind::Div:
      return b.op(Op::Div, {x, p.value}, pred);
  }
  return x;
}

}  // namespace raptor::ad
