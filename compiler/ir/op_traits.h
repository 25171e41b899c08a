// Op traits: what each op of the IR *is* (level, tied operands, where its
// results' storage comes from, its size attribute, terminator, effects),
// derived from the one table in compiler/ir/ops.def (DESIGN.md house style 2,
// like vm/isa.def). The verifier, compiler/analysis/, compiler/backend/,
// compiler/transforms/ and compiler/codegen/ query these traits (or compare
// OpCodes) instead of comparing op names.
//
// Interning: Operation::Create (so also the parser and Clone) maps the op's
// name to its OpCode once (one hash lookup per op created); op->code() and
// Traits(op) are then an array index. A name the table does not list (test
// ops, ops of a future level) gets OpCode::kUnknown, whose traits are the
// conservative defaults (no storage rule, no tie, reads and writes nothing
// known, not a terminator, side effects).
//
// To add an op: a row in ops.def, its description in ops.h, and a case in
// op_traits_test.cc when it has a storage, tie or effect rule.
#ifndef KILN_COMPILER_IR_OP_TRAITS_H_
#define KILN_COMPILER_IR_OP_TRAITS_H_

#include <cstdint>
#include <string_view>

namespace kiln::ir {

class Operation;

// One enumerator per row of ops.def, in table order (OpCode::kStreamAsyncClone,
// ...), then kUnknown. Not serialized: values may change when rows are added.
enum class OpCode : uint16_t {
#define KILN_IR_OP(id, name, level, storage, tie, size, reads, writes, flags) k##id,
#include "compiler/ir/ops.def"
#undef KILN_IR_OP
  kUnknown,
};
constexpr size_t kNumOpCodes = static_cast<size_t>(OpCode::kUnknown) + 1;

// The level an op belongs to (compiler/ir/ops.h sections).
enum class OpLevel : uint8_t { kStructural, kTensor, kDispatch, kStream, kControl, kVm, kUnknown };

// Where an op's results live (ops.def "Storage" has the full text).
enum class ResultStorage : uint8_t {
  kNone,      // no result, or host values / timepoints only
  kFresh,     // a new allocation per execution (unless tied, see Tie)
  kTied,      // written in place into the tied operand
  kView,      // a view of operand 0's bytes (slice: a subrange; reshape)
  kAlias,     // the storage of a pass-through operand (await, export)
  kConstant,  // the module's constant data
  kExternal,  // not allocated by the function (argument, callee, global)
  kRegion,    // what the op's regions yield (scf.*, stream.async.execute)
};

// How results are tied to operands (written in place).
enum class Tie : uint8_t {
  kNone,
  kOperand0,  // result 0 is written into operand 0 (update, copy, fill)
  kAttr,      // result i into operand `tied_operands[i]` (-1: untied)
};

// Which attribute gives a result's byte size.
enum class SizeAttr : uint8_t { kNone, kSize, kSizes, kLength };

// A set of operands (effects).
enum class OperandSet : uint8_t {
  kNone,
  kAll,
  kFirst,     // operand 0
  kRest,      // operands 1..
  kTied,      // the operands the results are tied to
  kConsumed,  // func.call: operands passed to `consume` parameters
};

// Flag bits of OpInfo::flags (ops.def "flags").
enum OpFlag : uint32_t {
  kTerminator = 1u << 0,
  kSideEffects = 1u << 1,
  kHasRegions = 1u << 2,
  kSymbol = 1u << 3,
  kElementwise = 1u << 4,
  kUnary = 1u << 5,
  kBinary = 1u << 6,
  kTernary = 1u << 7,
  kCompare = 1u << 8,
  kLogical = 1u << 9,
  kClassify = 1u << 10,
  kHostSide = 1u << 11,
  kLifetime = 1u << 12,
  kHostArith = 1u << 13,
  kBranch = 1u << 14,
  kStructured = 1u << 15,
  kDeviceWork = 1u << 16,
};

// One row of ops.def. Plain data with static storage; never freed.
struct OpInfo {
  OpCode code;
  const char* name;  // "stream.async.clone"; "" for kUnknown
  OpLevel level;
  ResultStorage storage;
  Tie tie;
  SizeAttr size;
  OperandSet reads;
  OperandSet writes;
  uint32_t flags;

  bool is_terminator() const { return flags & kTerminator; }
  bool has_side_effects() const { return flags & kSideEffects; }
  bool is_elementwise() const { return flags & kElementwise; }
  bool has(OpFlag f) const { return (flags & f) != 0; }
};

// The row of `code` (kUnknown: the conservative defaults above).
const OpInfo& Traits(OpCode code);
// The row of `op` (op->code(), interned at creation).
const OpInfo& Traits(const Operation& op);
inline const OpInfo& Traits(const Operation* op) { return Traits(*op); }
// The OpCode of an op name; kUnknown if ops.def does not list it. One hash
// lookup (Operation::Create calls it once per op).
OpCode LookupOpCode(std::string_view name);
// The op name of `code` ("" for kUnknown).
const char* OpName(OpCode code);

// ---------------------------------------------------------------------------
// Queries combining a row with the op's attributes
// ---------------------------------------------------------------------------
// The operand index result `result` of `op` is written in place into, or -1:
// Tie::kOperand0 -> 0; Tie::kAttr -> `tied_operands[result]` when it names
// an operand (out of range or absent: -1).
int TiedOperandIndex(const Operation& op, unsigned result);
// True when result `result` is a new allocation: ResultStorage::kFresh and
// not tied (stream.async.clone / alloca / splat / transfer, an untied
// stream.async.dispatch result). Computing tensor-level ops are kFresh too
// (a newly computed value, no storage yet): callers asking about storage
// check Traits(op).level == OpLevel::kStream.
bool AllocatesFresh(const Operation& op, unsigned result);
// Byte size of result `result` from the op's size attribute (SizeAttr); -1
// when the op has no size attribute or the attribute is absent / too short.
int64_t ResultSizeAttr(const Operation& op, unsigned result);

}  // namespace kiln::ir

#endif  // KILN_COMPILER_IR_OP_TRAITS_H_
