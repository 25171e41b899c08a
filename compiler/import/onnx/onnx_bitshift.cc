// ONNX BitShift → tensor.shift_left / tensor.shift_right (compiler/ir/ops.h).
//
// BitShift(X, Y) shifts each element of X by the matching element of Y
// (numpy broadcasting); attribute `direction` is "LEFT" or "RIGHT" (required).
// ONNX defines it for uint8, uint16, uint32 and uint64; X and Y share the
// dtype. Bits shifted out are lost (the result wraps to the dtype's width) and
// a shift by the dtype's bit width or more gives 0, as numpy's left_shift /
// right_shift on unsigned types do.
//
// Example: X = [16, 4, 1] (u32), Y = [1, 2, 3], direction "RIGHT" → [8, 1, 0].
#include "compiler/import/onnx/onnx_importer_internal.h"

namespace kiln::onnx_import::detail {

Status Importer::BitShift(const onnx::NodeProto& n, const std::vector<Value*>& in,
                          std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  if (!HasAttr("direction")) return Invalid("attribute 'direction' is required (\"LEFT\" or \"RIGHT\")");
  const std::string direction = AttrStr("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    return Invalid("attribute 'direction' must be \"LEFT\" or \"RIGHT\", got \"" + direction + "\"");
  const DType dt = in[0]->type().dtype;
  if (!IsUnsignedType(dt))
    return Invalid(std::string("BitShift is defined for unsigned integers, got ") + DTypeName(dt));
  KILN_ASSIGN_OR_RETURN(out[0], Binary(direction == "LEFT" ? "tensor.shift_left" : "tensor.shift_right",
                                       in[0], in[1]));
  return OkStatus();
}

}  // namespace kiln::onnx_import::detail
