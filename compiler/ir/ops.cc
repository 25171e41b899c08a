// Op-set predicates declared in ops.h.
#include "compiler/ir/ops.h"

#include <set>

namespace kiln::ir {

bool IsElementwiseOp(const std::string& name) {
  static const std::set<std::string> kOps = {
      // Unary.
      "tensor.neg", "tensor.abs", "tensor.relu", "tensor.sigmoid", "tensor.tanh", "tensor.exp",
      "tensor.log", "tensor.sqrt", "tensor.reciprocal", "tensor.floor", "tensor.ceil",
      "tensor.round", "tensor.erf", "tensor.sin", "tensor.cos", "tensor.not", "tensor.cast",
      "tensor.leaky_relu", "tensor.hard_sigmoid", "tensor.hard_swish", "tensor.elu",
      "tensor.softplus", "tensor.clamp", "tensor.tan", "tensor.asin", "tensor.acos",
      "tensor.atan", "tensor.sinh", "tensor.cosh", "tensor.asinh", "tensor.acosh", "tensor.atanh",
      "tensor.sign", "tensor.isnan", "tensor.isinf",
      // Binary.
      "tensor.add", "tensor.sub", "tensor.mul", "tensor.div", "tensor.pow", "tensor.max",
      "tensor.min", "tensor.mod", "tensor.equal", "tensor.greater", "tensor.less",
      "tensor.greater_equal", "tensor.less_equal", "tensor.and", "tensor.or", "tensor.xor",
      "tensor.shift_left", "tensor.shift_right",
      // Ternary.
      "tensor.select"};
  return kOps.count(name) != 0;
}

}  // namespace kiln::ir
