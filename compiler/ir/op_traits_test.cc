// Unit tests for the op traits table (op_traits.h / ops.def): hand-derived
// cases from the op contracts in ops.h, interning at creation and through the
// parser, and the attribute-dependent queries.
#include "compiler/ir/op_traits.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "compiler/ir/ir.h"
#include "compiler/ir/ops.h"
#include "compiler/ir/parser.h"

namespace kiln::ir {
namespace {

Type R() { return Type::Resource(Lifetime::kTransient); }

// Creates a detached op with `n_operands` resource operands (block arguments
// of a scratch block) and `n_results` resource results.
struct Scratch {
  Block block;
  std::vector<Value*> Args(unsigned n) {
    std::vector<Value*> v;
    for (unsigned i = 0; i < n; ++i) v.push_back(block.AddArgument(R()));
    return v;
  }
  std::unique_ptr<Operation> Op(const std::string& name, unsigned n_operands, unsigned n_results,
                                std::map<std::string, Attribute> attrs = {}) {
    return Operation::Create(name, Args(n_operands), std::vector<Type>(n_results, R()), std::move(attrs));
  }
};

TEST(OpTraitsTest, InternedAtCreation) {
  Scratch s;
  auto clone = s.Op("stream.async.clone", 1, 1);
  EXPECT_EQ(clone->code(), OpCode::kStreamAsyncClone);
  EXPECT_TRUE(clone->is(OpCode::kStreamAsyncClone));
  EXPECT_STREQ(OpName(OpCode::kStreamAsyncClone), "stream.async.clone");
  EXPECT_EQ(LookupOpCode("scf.yield"), OpCode::kScfYield);
  // A name the table does not list: conservative defaults.
  auto unknown = s.Op("test.frob", 1, 1);
  EXPECT_EQ(unknown->code(), OpCode::kUnknown);
  EXPECT_EQ(LookupOpCode("stream.async"), OpCode::kUnknown);
  EXPECT_EQ(LookupOpCode(""), OpCode::kUnknown);
  const OpInfo& u = Traits(*unknown);
  EXPECT_FALSE(u.is_terminator());
  EXPECT_TRUE(u.has_side_effects());
  EXPECT_EQ(u.storage, ResultStorage::kNone);
  EXPECT_EQ(TiedOperandIndex(*unknown, 0), -1);
  EXPECT_FALSE(AllocatesFresh(*unknown, 0));
  // A clone keeps the code.
  std::map<Value*, Value*> mapping;
  EXPECT_EQ(clone->Clone(mapping)->code(), OpCode::kStreamAsyncClone);
}

// The allocated level's barrier (--place-barriers): no operands, results or
// storage; a side effect, so nothing removes or reorders it past a command.
TEST(OpTraitsTest, BarrierIsASideEffectWithoutStorage) {
  Scratch s;
  auto barrier = s.Op("stream.cmd.barrier", 0, 0, {{"ranges", Attribute(std::vector<int64_t>{1, 0, 16})}});
  EXPECT_EQ(barrier->code(), OpCode::kStreamCmdBarrier);
  const OpInfo& b = Traits(*barrier);
  EXPECT_EQ(b.level, OpLevel::kStream);
  EXPECT_TRUE(b.has_side_effects());
  EXPECT_FALSE(b.is_terminator());
  EXPECT_EQ(b.storage, ResultStorage::kNone);
}

TEST(OpTraitsTest, EveryRowRoundTripsItsName) {
  std::set<std::string> names;
  for (size_t i = 0; i + 1 < kNumOpCodes; ++i) {
    OpCode c = static_cast<OpCode>(i);
    std::string n = OpName(c);
    EXPECT_TRUE(names.insert(n).second) << "duplicate row " << n;
    EXPECT_EQ(LookupOpCode(n), c) << n;
    EXPECT_EQ(Traits(c).code, c) << n;
    // A tie needs a storage rule that says so, and only stream ops tie.
    if (Traits(c).tie != Tie::kNone) {
      EXPECT_EQ(Traits(c).level, OpLevel::kStream) << n;
    }
    if (Traits(c).tie == Tie::kOperand0) {
      EXPECT_EQ(Traits(c).storage, ResultStorage::kTied) << n;
    }
    // The dialect prefix matches the level.
    std::string dialect = n.substr(0, n.find('.'));
    OpLevel want = dialect == "tensor" ? OpLevel::kTensor
                   : dialect == "flow" ? OpLevel::kDispatch
                   : dialect == "func" ? OpLevel::kStructural
                   : dialect == "stream" || dialect == "util" ? OpLevel::kStream
                   : dialect == "vm" ? OpLevel::kVm
                                     : OpLevel::kControl;
    EXPECT_EQ(Traits(c).level, want) << n;
  }
  EXPECT_EQ(Traits(OpCode::kUnknown).name, std::string());
}

TEST(OpTraitsTest, CloneTiesNothingAndAllocatesFresh) {
  Scratch s;
  auto op = s.Op("stream.async.clone", 1, 1, {{"size", int64_t{64}}});
  EXPECT_EQ(Traits(*op).level, OpLevel::kStream);
  EXPECT_EQ(TiedOperandIndex(*op, 0), -1);
  EXPECT_TRUE(AllocatesFresh(*op, 0));
  EXPECT_EQ(Traits(*op).reads, OperandSet::kAll);
  EXPECT_EQ(Traits(*op).writes, OperandSet::kNone);
  EXPECT_EQ(ResultSizeAttr(*op, 0), 64);
}

TEST(OpTraitsTest, TransferAllocatesFreshLikeClone) {
  // A transfer copies its source into a new allocation on the target device
  // (the emitter records it as a copy, like a clone): fresh, untied, and the
  // function owns the new storage.
  Scratch s;
  auto op = s.Op("stream.async.transfer", 1, 1, {{"size", int64_t{16}}});
  EXPECT_TRUE(AllocatesFresh(*op, 0));
  EXPECT_EQ(TiedOperandIndex(*op, 0), -1);
  EXPECT_EQ(Traits(*op).reads, OperandSet::kAll);
}

TEST(OpTraitsTest, UpdateCopyFillAreTiedToTheirTarget) {
  Scratch s;
  for (const char* n : {"stream.async.update", "stream.async.copy", "stream.async.fill"}) {
    auto op = s.Op(n, std::string(n) == "stream.async.fill" ? 1 : 2, 1, {{"size", int64_t{32}}});
    EXPECT_EQ(TiedOperandIndex(*op, 0), 0) << n;
    EXPECT_FALSE(AllocatesFresh(*op, 0)) << n;
    EXPECT_EQ(Traits(*op).storage, ResultStorage::kTied) << n;
    EXPECT_EQ(Traits(*op).writes, OperandSet::kFirst) << n;
    EXPECT_EQ(ResultSizeAttr(*op, 0), 32) << n;
  }
  // update(%target, %update) reads the update, not the target.
  EXPECT_EQ(Traits(OpCode::kStreamAsyncUpdate).reads, OperandSet::kRest);
  EXPECT_EQ(Traits(OpCode::kStreamAsyncFill).reads, OperandSet::kNone);
  // A tied op without operands ties nothing (malformed IR, no crash).
  auto bare = s.Op("stream.async.update", 0, 1);
  EXPECT_EQ(TiedOperandIndex(*bare, 0), -1);
}

TEST(OpTraitsTest, DispatchTiesPerTiedOperandsAttr) {
  Scratch s;
  // Results: #0 written into operand 1, #1 fresh, #2 names operand 5 of 2
  // (out of range: untied), #3 has no entry.
  auto op = s.Op("stream.async.dispatch", 2, 4,
                 {{"tied_operands", std::vector<int64_t>{1, -1, 5}}, {"sizes", std::vector<int64_t>{8, 12, 4}}});
  EXPECT_EQ(TiedOperandIndex(*op, 0), 1);
  EXPECT_FALSE(AllocatesFresh(*op, 0));
  EXPECT_EQ(TiedOperandIndex(*op, 1), -1);
  EXPECT_TRUE(AllocatesFresh(*op, 1));
  EXPECT_EQ(TiedOperandIndex(*op, 2), -1);
  EXPECT_EQ(TiedOperandIndex(*op, 3), -1);
  EXPECT_EQ(ResultSizeAttr(*op, 1), 12);
  EXPECT_EQ(ResultSizeAttr(*op, 3), -1);
  EXPECT_EQ(Traits(*op).writes, OperandSet::kTied);
}

TEST(OpTraitsTest, SliceIsAViewSizedByLength) {
  Scratch s;
  auto op = s.Op("stream.async.slice", 1, 1, {{"offset", int64_t{256}}, {"length", int64_t{40}}});
  EXPECT_EQ(Traits(*op).storage, ResultStorage::kView);
  EXPECT_FALSE(AllocatesFresh(*op, 0));
  EXPECT_EQ(TiedOperandIndex(*op, 0), -1);  // a view, not an in-place write
  EXPECT_EQ(ResultSizeAttr(*op, 0), 40);
  EXPECT_EQ(Traits(OpCode::kTensorReshape).storage, ResultStorage::kView);
}

TEST(OpTraitsTest, StorageOfOtherStreamOps) {
  EXPECT_EQ(Traits(OpCode::kStreamAsyncAlloca).storage, ResultStorage::kFresh);
  EXPECT_EQ(Traits(OpCode::kStreamAsyncSplat).storage, ResultStorage::kFresh);
  EXPECT_EQ(Traits(OpCode::kStreamAsyncConstant).storage, ResultStorage::kConstant);
  EXPECT_EQ(Traits(OpCode::kStreamTensorImport).storage, ResultStorage::kExternal);
  EXPECT_EQ(Traits(OpCode::kUtilGlobalLoad).storage, ResultStorage::kExternal);
  EXPECT_EQ(Traits(OpCode::kFuncCall).storage, ResultStorage::kExternal);
  EXPECT_EQ(Traits(OpCode::kFuncCall).size, SizeAttr::kSizes);
  EXPECT_EQ(Traits(OpCode::kFuncCall).writes, OperandSet::kConsumed);
  EXPECT_EQ(Traits(OpCode::kStreamTimepointAwait).storage, ResultStorage::kAlias);
  EXPECT_EQ(Traits(OpCode::kScfIf).storage, ResultStorage::kRegion);
  EXPECT_EQ(Traits(OpCode::kStreamAsyncExecute).storage, ResultStorage::kRegion);
  // Effects that must not be dropped or reordered.
  for (OpCode c : {OpCode::kUtilGlobalStore, OpCode::kStreamResourceDealloca, OpCode::kFuncCall})
    EXPECT_TRUE(Traits(c).has_side_effects()) << OpName(c);
  EXPECT_FALSE(Traits(OpCode::kStreamAsyncClone).has_side_effects());
  EXPECT_TRUE(Traits(OpCode::kStreamResourceRetain).has(kLifetime));
}

TEST(OpTraitsTest, Terminators) {
  for (OpCode c : {OpCode::kFuncReturn, OpCode::kFlowReturn, OpCode::kScfYield, OpCode::kScfCondition,
                   OpCode::kStreamYield, OpCode::kCfBr, OpCode::kCfCondBr, OpCode::kVmReturn})
    EXPECT_TRUE(Traits(c).is_terminator()) << OpName(c);
  for (OpCode c : {OpCode::kFuncFunc, OpCode::kFuncCall, OpCode::kScfIf, OpCode::kStreamAsyncExecute,
                   OpCode::kTensorAdd})
    EXPECT_FALSE(Traits(c).is_terminator()) << OpName(c);
  EXPECT_TRUE(Traits(OpCode::kCfCondBr).has(kBranch));
  EXPECT_FALSE(Traits(OpCode::kScfYield).has(kBranch));
}

TEST(OpTraitsTest, ElementwiseClassesMatchOpsH) {
  // ops.h: unary, binary (comparisons -> i1, logical on i1), ternary select.
  EXPECT_TRUE(IsElementwiseOp("tensor.relu"));
  EXPECT_TRUE(IsElementwiseOp("tensor.select"));
  EXPECT_FALSE(IsElementwiseOp("tensor.matmul"));
  EXPECT_FALSE(IsElementwiseOp("stream.async.clone"));
  EXPECT_FALSE(IsElementwiseOp("tensor.frob"));
  EXPECT_TRUE(Traits(OpCode::kTensorNot).has(kUnary));
  EXPECT_TRUE(Traits(OpCode::kTensorNot).has(kLogical));
  EXPECT_TRUE(Traits(OpCode::kTensorXor).has(kBinary));
  EXPECT_TRUE(Traits(OpCode::kTensorLessEqual).has(kCompare));
  EXPECT_TRUE(Traits(OpCode::kTensorIsinf).has(kClassify));
  EXPECT_TRUE(Traits(OpCode::kTensorSelect).has(kTernary));
  EXPECT_TRUE(IsHostSideOp("tensor.reshape"));
  EXPECT_TRUE(IsHostSideOp("tensor.constant"));
  EXPECT_FALSE(IsHostSideOp("tensor.extract"));
  unsigned unary = 0, binary = 0, ternary = 0;
  for (size_t i = 0; i + 1 < kNumOpCodes; ++i) {
    const OpInfo& t = Traits(static_cast<OpCode>(i));
    unary += t.has(kUnary);
    binary += t.has(kBinary);
    ternary += t.has(kTernary);
    // Exactly one arity per elementwise op.
    if (t.is_elementwise()) {
      EXPECT_EQ(t.has(kUnary) + t.has(kBinary) + t.has(kTernary), 1) << t.name;
    }
  }
  // Counted from the lists in ops.h: 16 + 19 named unary ops, 8 + 5 + 3 + 2
  // binary, 1 ternary.
  EXPECT_EQ(unary, 35u);
  EXPECT_EQ(binary, 18u);
  EXPECT_EQ(ternary, 1u);
}

TEST(OpTraitsTest, StructuredTensorOps) {
  // ops.h lists 19 tensor ops between tensor.conv2d and tensor.expand that
  // are neither elementwise nor host side (tensor.reshape is listed among
  // them but is host side).
  const std::set<std::string> want = {
      "tensor.conv2d",          "tensor.conv_transpose", "tensor.matmul",   "tensor.reduce",
      "tensor.arg_reduce",      "tensor.gather_elements", "tensor.scatter_elements",
      "tensor.scatter_nd",      "tensor.top_k",           "tensor.cumsum",   "tensor.pool2d",
      "tensor.softmax",         "tensor.transpose",       "tensor.slice",    "tensor.concat",
      "tensor.pad",             "tensor.gather",          "tensor.resize",   "tensor.expand"};
  std::set<std::string> got;
  for (size_t i = 0; i + 1 < kNumOpCodes; ++i) {
    const OpInfo& t = Traits(static_cast<OpCode>(i));
    if (t.has(kStructured)) got.insert(t.name);
    if (t.level != OpLevel::kTensor) {
      EXPECT_FALSE(t.has(kStructured)) << t.name;
      continue;
    }
    // Every tensor op is exactly one of: elementwise, structured, host side,
    // or tensor.extract (a host read).
    int classes =
        t.is_elementwise() + t.has(kStructured) + t.has(kHostSide) + (t.code == OpCode::kTensorExtract);
    EXPECT_EQ(classes, 1) << t.name;
  }
  EXPECT_EQ(got, want);
  EXPECT_FALSE(Traits(OpCode::kUnknown).has(kStructured));
}

TEST(OpTraitsTest, DeviceWork) {
  // The ops recorded into a command buffer (the backend records dispatches,
  // copies and fills for exactly these); allocas, views, constants, imports,
  // host reads and the execute region itself are not device work.
  const std::set<std::string> want = {"stream.async.dispatch", "stream.async.fill",   "stream.async.copy",
                                      "stream.async.clone",    "stream.async.update", "stream.async.splat",
                                      "stream.async.transfer"};
  std::set<std::string> got;
  for (size_t i = 0; i + 1 < kNumOpCodes; ++i) {
    const OpInfo& t = Traits(static_cast<OpCode>(i));
    if (!t.has(kDeviceWork)) continue;
    got.insert(t.name);
    EXPECT_EQ(t.level, OpLevel::kStream) << t.name;
    EXPECT_FALSE(t.has_side_effects()) << t.name;
  }
  EXPECT_EQ(got, want);
  for (OpCode c : {OpCode::kStreamAsyncAlloca, OpCode::kStreamAsyncSlice, OpCode::kStreamAsyncConstant,
                   OpCode::kStreamAsyncLoad, OpCode::kStreamAsyncExecute, OpCode::kUnknown})
    EXPECT_FALSE(Traits(c).has(kDeviceWork)) << OpName(c);
}

TEST(OpTraitsTest, ParserInterns) {
  std::string text = R"(
"func.func"() ({
^bb0(%a: !stream.resource<*>):
  %0 = "stream.async.clone"(%a) {size = 4 : i64} : (!stream.resource<*>) -> !stream.resource<*>
  "func.return"(%0) : (!stream.resource<*>) -> ()
}) {sym_name = "f"} : () -> ()
)";
  auto m = ParseModule(text, "traits.kir");
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::unique_ptr<Module> mod = std::move(m).value();
  Operation* f = mod->LookupFunction("f");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->code(), OpCode::kFuncFunc);
  Block* b = f->region(0)->block(0);
  EXPECT_EQ(b->ops().front()->code(), OpCode::kStreamAsyncClone);
  EXPECT_TRUE(Traits(b->terminator()).is_terminator());
}

}  // namespace
}  // namespace kiln::ir
