// The derivative of each IR operator as partial derivatives, shared by the tangent and the
// adjoint transforms. The conventions (which follow jax.numpy / lax, checked against the
// installed JAX) are listed at the top of rules.cpp. Start at `partials`.
#pragma once

#include <functional>
#include <vector>

#include "ad/common.hpp"

namespace raptor::ad {

// d value / d operand `arg`: 1, -1, times `value` or divided by `value`. A tangent is
// dot(arg) * partial; a cotangent contribution is ct * partial.
struct Partial {
  enum class Kind { One, MinusOne, Mul, Div };
  Kind kind = Kind::One;
  int arg = 0;     // operand position
  int value = -1;  // Mul, Div: the factor or divisor, a value of the builder's kernel
};

// Whether `op` is an arithmetic operator `partials` handles (not a load, a constant, Select,
// or an operator without derivative such as a comparison, Floor, Sign or ToIndex).
bool has_partials(ir::Op op);

// The partials of value `v` of b.kernel() (already in that kernel) with respect to the
// operand positions `need` accepts. The values they need are appended to the kernel with
// `v`'s predicate and location; the primal result of `v` is reused where it can be (exp,
// sqrt, tan, tanh, pow). An empty result: no derivative (e.g. PowI with exponent 0).
std::vector<Partial> partials(Builder& b, int v, const std::function<bool(int arg)>& need);

// dot * partial (tangent) or ct * partial (cotangent contribution), with `pred`.
int apply(Builder& b, const Partial& p, int x, int pred);

}  // namespace raptor::ad
