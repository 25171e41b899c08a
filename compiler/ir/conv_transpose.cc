// tensor.conv_transpose geometry (conv_transpose.h).
#include "compiler/ir/conv_transpose.h"

namespace kiln::ir {
namespace {

std::string DimsStr(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// Bound on strides, dilations, pads and kernel extents, so that the shape
// arithmetic cannot overflow (the importer's kMaxDim is the same order).
constexpr int64_t kMaxExtent = int64_t{1} << 30;

}  // namespace

int64_t ConvTransposeOutputSize(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                                int64_t pad_begin, int64_t pad_end, int64_t output_padding) {
  return stride * (in - 1) + output_padding + ((kernel - 1) * dilation + 1) - pad_begin - pad_end;
}

bool GetConvTransposeParams(const Operation& op, ConvTransposeParams* p, std::string* error) {
  auto fail = [&](const std::string& m) {
    *error = m;
    return false;
  };
  if (op.num_operands() != 2 && op.num_operands() != 3)
    return fail("expects 2 or 3 operands (input, filter, bias), got " + std::to_string(op.num_operands()));
  if (op.num_results() != 1) return fail("expects 1 result, got " + std::to_string(op.num_results()));
  for (Value* v : op.operands())
    if (!v->type().is_tensor()) return fail("expects tensor operands");
  if (!op.result()->type().is_tensor()) return fail("expects a tensor result");
  const Type& x = op.operand(0)->type();
  const Type& w = op.operand(1)->type();
  const Type& y = op.result()->type();
  int64_t r = x.rank();
  if (r < 3 || r > 5) return fail("expects 1 to 3 spatial dims, input is rank " + std::to_string(r));
  if (w.rank() != r || y.rank() != r)
    return fail("input, filter and result ranks differ (" + std::to_string(r) + ", " +
                std::to_string(w.rank()) + ", " + std::to_string(y.rank()) + ")");
  int k = static_cast<int>(r - 2);
  p->spatial = k;
  auto list = [&](const char* name, size_t n, int64_t def, std::vector<int64_t>* out) {
    *out = op.ints_attr(name);
    if (out->empty() && !op.has_attr(name)) out->assign(n, def);
    if (out->size() != n) return fail(std::string(name) + " has " + std::to_string(out->size()) +
                                      " entries, expected " + std::to_string(n));
    return true;
  };
  if (!list("strides", k, 1, &p->strides) || !list("dilations", k, 1, &p->dilations) ||
      !list("pads", 2 * k, 0, &p->pads) || !list("output_padding", k, 0, &p->output_padding))
    return false;
  for (int i = 0; i < k; ++i) {
    if (p->strides[i] < 1 || p->strides[i] > kMaxExtent || p->dilations[i] < 1 ||
        p->dilations[i] > kMaxExtent)
      return fail("strides and dilations must be in [1, 2^30]");
    if (p->output_padding[i] < 0 || p->output_padding[i] > kMaxExtent)
      return fail("output_padding must be in [0, 2^30]");
  }
  for (int64_t v : p->pads)
    if (v < 0 || v > kMaxExtent) return fail("pads must be in [0, 2^30]");
  p->group = op.int_attr("group", 1);
  const int64_t C = x.shape[1];
  if (p->group < 1 || C % p->group != 0 || w.shape[0] != C)
    return fail("input channels " + std::to_string(C) + " do not match filter " + DimsStr(w.shape) +
                " with group " + std::to_string(p->group));
  const int64_t M = w.shape[1] * p->group;
  if (op.num_operands() == 3 && op.operand(2)->type().shape != std::vector<int64_t>{M})
    return fail("bias shape " + DimsStr(op.operand(2)->type().shape) + " should be [" +
                std::to_string(M) + "]");
  std::vector<int64_t> want = {x.shape[0], M};
  for (int i = 0; i < k; ++i) {
    if (w.shape[2 + i] < 1 || w.shape[2 + i] > kMaxExtent) return fail("filter extents must be positive");
    want.push_back(ConvTransposeOutputSize(x.shape[2 + i], w.shape[2 + i], p->strides[i],
                                           p->dilations[i], p->pads[i], p->pads[k + i],
                                           p->output_padding[i]));
  }
  for (int i = 0; i < k; ++i)
    if (want[2 + i] < 1) return fail("output extent " + std::to_string(want[2 + i]) + " of spatial dim " +
                                     std::to_string(i) + " is not positive");
  if (y.shape != want) return fail("result shape " + DimsStr(y.shape) + " should be " + DimsStr(want));
  return true;
}

}  // namespace kiln::ir
