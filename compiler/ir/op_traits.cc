// Op traits (op_traits.h): the rows of ops.def and the name -> OpCode map.
#include "compiler/ir/op_traits.h"

#include <string>
#include <unordered_map>

#include "compiler/ir/ir.h"

namespace kiln::ir {
namespace {

constexpr OpInfo kInfos[] = {
#define KILN_IR_OP(id, name, level, storage, tie, size, reads, writes, flags)                      \
  {OpCode::k##id,        name,          OpLevel::k##level,       ResultStorage::k##storage, \
   Tie::k##tie,          SizeAttr::k##size, OperandSet::k##reads, OperandSet::k##writes,   \
   static_cast<uint32_t>(flags)},
#include "compiler/ir/ops.def"
#undef KILN_IR_OP
    // kUnknown: conservative.
    {OpCode::kUnknown, "", OpLevel::kUnknown, ResultStorage::kNone, Tie::kNone, SizeAttr::kNone,
     OperandSet::kNone, OperandSet::kNone, kSideEffects},
};
static_assert(sizeof(kInfos) / sizeof(kInfos[0]) == kNumOpCodes, "one row per OpCode");

// Rows must be in enumerator order (Traits indexes by code).
constexpr bool RowsInOrder() {
  for (size_t i = 0; i < kNumOpCodes; ++i)
    if (static_cast<size_t>(kInfos[i].code) != i) return false;
  return true;
}
static_assert(RowsInOrder(), "ops.def rows and OpCode disagree");

}  // namespace

const OpInfo& Traits(OpCode code) {
  size_t i = static_cast<size_t>(code);
  return kInfos[i < kNumOpCodes ? i : kNumOpCodes - 1];
}
const OpInfo& Traits(const Operation& op) { return Traits(op.code()); }

OpCode LookupOpCode(std::string_view name) {
  static const auto* const kByName = [] {
    auto* m = new std::unordered_map<std::string_view, OpCode>();
    for (size_t i = 0; i + 1 < kNumOpCodes; ++i) (*m)[kInfos[i].name] = kInfos[i].code;
    return m;
  }();
  auto it = kByName->find(name);
  return it == kByName->end() ? OpCode::kUnknown : it->second;
}

const char* OpName(OpCode code) { return Traits(code).name; }

int TiedOperandIndex(const Operation& op, unsigned result) {
  switch (Traits(op).tie) {
    case Tie::kNone:
      return -1;
    case Tie::kOperand0:
      return result == 0 && op.num_operands() > 0 ? 0 : -1;
    case Tie::kAttr: {
      std::vector<int64_t> tied = op.ints_attr("tied_operands");
      if (result >= tied.size() || tied[result] < 0 || tied[result] >= op.num_operands()) return -1;
      return static_cast<int>(tied[result]);
    }
  }
  return -1;
}

bool AllocatesFresh(const Operation& op, unsigned result) {
  return Traits(op).storage == ResultStorage::kFresh && TiedOperandIndex(op, result) < 0;
}

int64_t ResultSizeAttr(const Operation& op, unsigned result) {
  switch (Traits(op).size) {
    case SizeAttr::kNone:
      return -1;
    case SizeAttr::kSize:
      return op.has_attr("size") ? op.int_attr("size", -1) : -1;
    case SizeAttr::kLength:
      return op.has_attr("length") ? op.int_attr("length", -1) : -1;
    case SizeAttr::kSizes: {
      std::vector<int64_t> sizes = op.ints_attr("sizes");
      return result < sizes.size() ? sizes[result] : -1;
    }
  }
  return -1;
}

}  // namespace kiln::ir
