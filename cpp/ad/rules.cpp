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
//   NumPy-named functions (ir/math_fns.hpp), as jax.numpy's (lax's jvp rules):
//   asin x         1 / sqrt(1 - x*x)             (applied as ct / sqrt(..), as all "1 / d" below)
//   acos x         1 / -sqrt(1 - x*x)
//   atan x         1 / (1 + x*x)
//   sinh x, cosh x cosh x, sinh x
//   asinh x        1 / sqrt(x*x + 1)
//   acosh x        1 / sqrt((x - 1) * (x + 1))
//   atanh x        1 / ((1 + x) * (1 - x))
//   erf x, erfc x  +-2/sqrt(pi) * exp(-(x*x))
//   exp2 x         r * ln 2
//   expm1 x        r + 1
//   log1p x        1 / (x + 1)
//   log2, log10 x  1 / (x * ln 2), 1 / (x * ln 10)
//   cbrt x         1/3 * powi(r, -2)             (inf at 0, as JAX)
//   ceil, rint, trunc, isnan, isinf, isfinite: no derivative (0, as jax.grad of jnp.ceil ...)
//   hypot(x, y)    x / r, y / r                  (NaN at (0, 0): 0 / 0)
//   fmod(a, b)     1, -trunc(a / b)              (lax.rem: -sign(a/b) * floor(|a/b|))
//   remainder(a,b) 1, -trunc(a / b) + (p ? 1 : 0), p = fmod(a, b) != 0 and
//                  (fmod(a, b) < 0) != (b < 0): jnp.remainder's select(p, rem + b, rem)
//                  (that is -floor(a / b) where a / b rounds as the remainder does)
//   copysign(x, y) signbit(y) ? -abs'(x) : abs'(x), abs' as above; none for y (jnp.copysign
//                  is where(signbit(y), -abs(x), abs(x)))
//   fdim(a, b)     a > b ? (1, -1) : (0, 0)      (jax has no fdim: the derivative of the
//                  branch taken, a - b or the constant 0)
//   fma(a, b, c)   b, a, 1
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
    // NumPy-named functions with a derivative (the others are exact steps or predicates)
    case Op::Asin:
    case Op::Acos:
    case Op::Atan:
    case Op::Sinh:
    case Op::Cosh:
    case Op::Asinh:
    case Op::Acosh:
    case Op::Atanh:
    case Op::Erf:
    case Op::Erfc:
    case Op::Exp2:
    case Op::Expm1:
    case Op::Log1p:
    case Op::Log2:
    case Op::Log10:
    case Op::Cbrt:
    case Op::Hypot:
    case Op::Fmod:
    case Op::Remainder:
    case Op::Copysign:
    case Op::Fdim:
    case Op::Fma:
    case Op::RandTruncNormal:
    case Op::RandGamma:
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
  const bool n2 = ir::op_arity(val.op) > 2 && need(2);
  auto div = [&](int arg, int divisor) { out.push_back({Kind::Div, arg, divisor}); };
  auto sq = [&](int a) { return op(Op::Mul, {a, a}); };
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
    case Op::Asin:
      if (n0) div(0, op(Op::Sqrt, {op(Op::Sub, {c(1.0), sq(x)})}));
      break;
    case Op::Acos:
      if (n0) div(0, op(Op::Neg, {op(Op::Sqrt, {op(Op::Sub, {c(1.0), sq(x)})})}));
      break;
    case Op::Atan:
      if (n0) div(0, op(Op::Add, {c(1.0), sq(x)}));
      break;
    case Op::Sinh:
      if (n0) mul(0, op(Op::Cosh, {x}));
      break;
    case Op::Cosh:
      if (n0) mul(0, op(Op::Sinh, {x}));
      break;
    case Op::Asinh:
      if (n0) div(0, op(Op::Sqrt, {op(Op::Add, {sq(x), c(1.0)})}));
      break;
    case Op::Acosh:
      if (n0)
        div(0, op(Op::Sqrt, {op(Op::Mul, {op(Op::Sub, {x, c(1.0)}), op(Op::Add, {x, c(1.0)})})}));
      break;
    case Op::Atanh:
      if (n0) div(0, op(Op::Mul, {op(Op::Add, {c(1.0), x}), op(Op::Sub, {c(1.0), x})}));
      break;
    case Op::Erf:
    case Op::Erfc:
      if (n0) {
        const double k = (val.op == Op::Erf ? 2.0 : -2.0) / 1.7724538509055160273;  // sqrt(pi)
        mul(0, op(Op::Mul, {c(k), op(Op::Exp, {op(Op::Neg, {sq(x)})})}));
      }
      break;
    case Op::RandGamma:
      // jax's implicit reparameterization: d x / d a = random_gamma_grad(a, x).
      if (n1) mul(1, op(Op::RandGammaGrad, {y, v}));
      break;
    case Op::RandTruncNormal:
      // out = sqrt2 erfinv(A + f (B - A)), A = erf(lo / sqrt2), B = erf(hi / sqrt2), f the
      // draw's uniform (the same subkey: a RandUniformAt of this draw's index), as jax
      // differentiates truncated_normal: d out / d lo = exp((out^2 - lo^2) / 2) (1 - f),
      // d out / d hi = exp((out^2 - hi^2) / 2) f. The draw itself carries none.
      if (n1 || n2) {
        ir::Value u;
        u.op = Op::RandUniformAt;
        u.type = ir::Type::F;
        u.slot = val.slot;
        u.comp = val.comp;
        u.iimm = val.iimm;
        u.args[0] = x;
        u.pred = p;
        u.loc = val.loc;
        const int f = b.copy(u);
        const int out2 = sq(v);
        auto weight = [&](int bound) {
          return op(Op::Exp, {op(Op::Mul, {c(0.5), op(Op::Sub, {out2, sq(bound)})})});
        };
        if (n1) mul(1, op(Op::Mul, {weight(y), op(Op::Sub, {c(1.0), f})}));
        if (n2) mul(2, op(Op::Mul, {weight(val.args[2]), f}));
      }
      break;
    case Op::Exp2:
      if (n0) mul(0, op(Op::Mul, {v, c(0.69314718055994530942)}));
      break;
    case Op::Expm1:
      if (n0) mul(0, op(Op::Add, {v, c(1.0)}));
      break;
    case Op::Log1p:
      if (n0) div(0, op(Op::Add, {x, c(1.0)}));
      break;
    case Op::Log2:
      if (n0) div(0, op(Op::Mul, {x, c(0.69314718055994530942)}));
      break;
    case Op::Log10:
      if (n0) div(0, op(Op::Mul, {x, c(2.30258509299404568402)}));
      break;
    case Op::Cbrt:
      if (n0) mul(0, op(Op::Mul, {c(1.0 / 3.0), b.powi(v, -2, p)}));
      break;
    case Op::Hypot:
      if (n0) mul(0, op(Op::Div, {x, v}));
      if (n1) mul(1, op(Op::Div, {y, v}));
      break;
    case Op::Fmod:
    case Op::Remainder: {
      if (n0) one(0);
      if (!n1) break;
      const int q = op(Op::Trunc, {op(Op::Div, {x, y})});
      if (val.op == Op::Fmod) {
        mul(1, op(Op::Neg, {q}));
        break;
      }
      const int m = op(Op::Fmod, {x, y});
      const int y_neg = op(Op::Lt, {y, c(0.0)});
      const int differ = op(Op::Select, {op(Op::Lt, {m, c(0.0)}), op(Op::Not, {y_neg}), y_neg});
      const int plus = op(Op::And, {op(Op::Ne, {m, c(0.0)}), differ});
      mul(1, op(Op::Sub, {op(Op::Select, {plus, c(1.0), c(0.0)}), q}));
      break;
    }
    case Op::Copysign:
      if (n0) {
        const int flip = op(Op::Lt, {op(Op::Copysign, {c(1.0), y}), c(0.0)});  // signbit(y)
        const int up = op(Op::Ge, {x, c(0.0)});
        mul(0, op(Op::Select, {flip, op(Op::Select, {up, c(-1.0), c(1.0)}),
                               op(Op::Select, {up, c(1.0), c(-1.0)})}));
      }
      break;
    case Op::Fdim: {
      const int above = n0 || n1 ? op(Op::Gt, {x, y}) : -1;
      if (n0) mul(0, op(Op::Select, {above, c(1.0), c(0.0)}));
      if (n1) mul(1, op(Op::Select, {above, c(-1.0), c(0.0)}));
      break;
    }
    case Op::Fma:
      if (n0) mul(0, y);
      if (n1) mul(1, x);
      if (n2) one(2);
      break;
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
