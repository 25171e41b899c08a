// Tests of the resource usage analysis, plus a differential check of
// --materialize-copy-on-write followed by --elide-async-copies:
//  - a reference interpreter runs each program twice: with value semantics
//    (every write makes a new buffer: the meaning of the program) and with
//    storage semantics (tied ops write their operand's buffer in place, as the
//    runtime will). After COW, and after COW + elision, the storage run must
//    return what the value run returns, and must never write a borrowed
//    import, a constant, a global or a borrowed argument;
//  - every clone left after elision has a "kept copy" remark;
//  - statically, no tied op of the final program writes (through tied
//    results, block arguments, region results) a borrowed import;
//  - elision never executes more copies than COW alone.
// Programs: hand-written ones (the lit cases' shapes) and seeded random ones
// with nested scf.if / scf.for / scf.while / scf.index_switch, branch
// diamonds and branch loops, tied dispatches, updates, fills, globals.
#include "compiler/analysis/resource_usage.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/parser.h"
#include "compiler/ir/pass.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/transforms/passes.h"

namespace kiln::analysis {
namespace {

using ir::Block;
using ir::Module;
using ir::Operation;
using ir::Region;
using ir::Value;

std::unique_ptr<Module> Parse(const std::string& text) {
  auto m = ir::ParseModule(text, "test.kir");
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return nullptr;
  Status st = ir::Verify(**m);
  EXPECT_TRUE(st.ok()) << st.message();
  return std::move(*m);
}

Operation* FindByLoc(Module& m, const std::string& loc) {
  Operation* found = nullptr;
  for (Operation* f : m.functions())
    f->Walk([&](Operation* op) {
      if (op->loc() == loc && !found) found = op;
    });
  return found;
}

Status RunPass(Module& m, const char* flag, ir::PassContext& ctx) {
  transforms::RegisterAllPasses();
  auto pass = ir::CreatePass(flag);
  if (!pass) return InvalidArgumentError("no pass %s", flag);
  KILN_RETURN_IF_ERROR(pass->Run(m, ctx));
  return ir::Verify(m);
}

int CountOps(Module& m, const char* name) {
  int n = 0;
  for (Operation* f : m.functions()) f->Walk([&](Operation* op) { n += op->is(name); });
  return n;
}

// ---------------------------------------------------------------------------
// Analysis API
// ---------------------------------------------------------------------------
constexpr char kLoop[] = R"(
"func.func"() ({
^bb0(%arg0: index, %arg1: tensor<4xf32>):
  %lb = "arith.constant"() {value = 0 : i64} : () -> index
  %step = "arith.constant"() {value = 1 : i64} : () -> index
  %init = "stream.async.splat"() {pattern = 0 : i64, size = 16 : i64} : () -> !stream.resource<transient> loc("init")
  %x = "stream.tensor.import"(%arg1) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external> loc("import")
  %r = "scf.for"(%lb, %arg0, %step, %init) ({
  ^bb0(%iv: index, %it: !stream.resource<transient>):
    %c = "stream.async.clone"(%it) {size = 16 : i64} : (!stream.resource<transient>) -> !stream.resource<transient> loc("copy")
    %n:2 = "stream.async.dispatch"(%c, %x) {entry = @step, sizes = [16, 16], tied_operands = [0, -1]} : (!stream.resource<transient>, !stream.resource<external>) -> (!stream.resource<transient>, !stream.resource<transient>) loc("step")
    "scf.yield"(%n#0) : (!stream.resource<transient>) -> ()
  }) : (index, index, index, !stream.resource<transient>) -> !stream.resource<transient> loc("loop")
  %u = "stream.async.update"(%r, %x) {length = 16 : i64, offset = 0 : i64, size = 16 : i64} : (!stream.resource<transient>, !stream.resource<external>) -> !stream.resource<transient> loc("update")
  "func.return"(%u) : (!stream.resource<transient>) -> ()
}) {sym_name = "f"} : () -> ()
)";

TEST(ResourceUsageTest, TiedOperandsFollowTheOpContract) {
  auto m = Parse(kLoop);
  ASSERT_TRUE(m);
  Operation* step = FindByLoc(*m, "step");
  EXPECT_EQ(TiedOperandOfResult(step, 0), 0);
  EXPECT_EQ(TiedOperandOfResult(step, 1), -1);
  EXPECT_EQ(TiedOperands(step), std::vector<unsigned>{0});
  EXPECT_EQ(ResultSize(step, 1), 16);
  Operation* update = FindByLoc(*m, "update");
  EXPECT_EQ(TiedOperands(update), std::vector<unsigned>{0});
  EXPECT_TRUE(TiedOperands(FindByLoc(*m, "copy")).empty());
}

TEST(ResourceUsageTest, LoopFlowEdges) {
  auto m = Parse(kLoop);
  ASSERT_TRUE(m);
  Operation* loop = FindByLoc(*m, "loop");
  Value* it = loop->region(0)->block(0)->argument(1);
  Value* init = FindByLoc(*m, "init")->result(0);
  Value* next = FindByLoc(*m, "step")->result(0);
  bool modelled = false;
  std::vector<FlowEdge> in = IncomingValues(it, &modelled);
  EXPECT_TRUE(modelled);
  ASSERT_EQ(in.size(), 2u);
  std::set<Value*> values = {in[0].value, in[1].value};
  EXPECT_EQ(values, (std::set<Value*>{init, next}));
  // The result receives the yielded value and, for a zero-trip loop, init.
  std::vector<FlowEdge> res = IncomingValues(loop->result(0), &modelled);
  EXPECT_EQ(res.size(), 2u);
  std::vector<Value*> targets = FlowTargets(loop, 3);
  EXPECT_EQ(targets, (std::vector<Value*>{it, loop->result(0)}));
  EXPECT_EQ(FlowGroup(loop, 0), -1);  // a bound, not a flow operand
}

TEST(ResourceUsageTest, LastUseAndOwnership) {
  auto m = Parse(kLoop);
  ASSERT_TRUE(m);
  Operation* copy = FindByLoc(*m, "copy");
  // The iter_arg is loop-carried, its init dead after the loop: reusable.
  Verdict v = CanReuseStorage(copy, 0);
  EXPECT_TRUE(v.ok) << v.reason;
  // The borrowed import is read again on every trip and is never owned.
  Value* x = FindByLoc(*m, "import")->result(0);
  Verdict own = StorageOwnership(x);
  EXPECT_FALSE(own.ok);
  EXPECT_EQ(own.reason, "source is a borrowed import");
  Observer obs = FindLaterObserver(x, FindByLoc(*m, "step"));
  EXPECT_EQ(obs.kind, Observer::Kind::kLaterTrip);
  Verdict upd = CanReuseStorage(FindByLoc(*m, "update"), 0);
  EXPECT_TRUE(upd.ok) << upd.reason;
}

TEST(ResourceUsageTest, CopyOnWriteNeedsASize) {
  auto m = Parse(R"(
"func.func"() ({
^bb0(%arg0: !stream.resource<transient>):
  %u = "stream.async.dispatch"(%arg0) {entry = @step, tied_operands = [0]} : (!stream.resource<transient>) -> !stream.resource<transient> loc("nosize")
  "func.return"(%u) : (!stream.resource<transient>) -> ()
}) {sym_name = "f"} : () -> ()
)");
  ASSERT_TRUE(m);
  ir::PassContext ctx;
  Status st = RunPass(*m, "materialize-copy-on-write", ctx);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("nosize"), std::string::npos) << st.message();
}

// ---------------------------------------------------------------------------
// Reference interpreter
// ---------------------------------------------------------------------------
uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h * 0xBF58476D1CE4E5B9ull;
}
uint64_t HashStr(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

struct Buffer {
  uint64_t content = 0;
  std::string protect;  // non-empty: must never be written (why)
};

// Runs one func.func. value_semantics: every write makes a new buffer.
class Interpreter {
 public:
  Interpreter(bool value_semantics) : value_semantics_(value_semantics) {}

  // Returns the contents of the returned resources and of every global.
  std::vector<uint64_t> Run(Operation* func, const std::vector<int64_t>& scalar_args) {
    Block* entry = func->region(0)->block(0);
    std::vector<std::string> own = func->strs_attr("arg_ownership");
    std::vector<Slot> args;
    for (unsigned i = 0; i < entry->num_arguments(); ++i) {
      Value* a = entry->argument(i);
      if (a->type().kind == ir::TypeKind::kResource || a->type().is_tensor()) {
        bool consume = i < own.size() && own[i] == "consume";
        int b = NewBuffer(Mix(HashStr("arg"), i));
        if (!consume || a->type().is_tensor()) bufs_[b].protect = "borrowed argument";
        args.push_back(Slot{b, 0});
      } else {
        args.push_back(Slot{-1, i < scalar_args.size() ? scalar_args[i] : 0});
      }
    }
    Operation* term = nullptr;
    std::vector<Slot> out = RunRegion(func->region(0), args, &term);
    std::vector<uint64_t> result;
    for (const Slot& s : out) result.push_back(s.buffer >= 0 ? bufs_[s.buffer].content : s.scalar);
    for (auto& [name, b] : globals_) result.push_back(Mix(HashStr(name), bufs_[b].content));
    return result;
  }

  const std::string& violation() const { return violation_; }
  // Copies the emitter would record: every clone run, plus one copy per
  // resource a loop entry (scf.for / scf.while init) or a branch (cf.br /
  // cf.cond_br operand) passes into a carried / block-argument storage,
  // except a clone whose only use is that operand: the emitter writes such
  // a copy straight into the destination (a copy of a loop's initial value
  // hoisted by elide-async-copies replaces the entry copy, it does not add
  // one).
  int clones_run() const { return clones_run_ + entry_copies_; }

 private:
  struct Slot {
    int buffer = -1;  // resources and tensors
    int64_t scalar = 0;
  };

  int NewBuffer(uint64_t content) {
    bufs_.push_back(Buffer{content, ""});
    return static_cast<int>(bufs_.size()) - 1;
  }
  uint64_t Content(Value* v) { return bufs_[Get(v).buffer].content; }
  Slot Get(Value* v) {
    auto it = env_.find(v);
    if (it == env_.end()) {
      Fail("value read before it was defined");
      return Slot{NewBuffer(0), 0};
    }
    return it->second;
  }
  void Fail(const std::string& what) {
    if (violation_.empty()) violation_ = what;
  }
  // Writes result `r` of `op` with `content`, in place into operand `tied`
  // (storage semantics) or into a new buffer.
  void Write(Operation* op, unsigned r, int tied, uint64_t content) {
    if (tied >= 0 && !value_semantics_) {
      int b = Get(op->operand(static_cast<unsigned>(tied))).buffer;
      if (!bufs_[b].protect.empty())
        Fail("'" + op->name() + "' " + op->loc() + " writes a " + bufs_[b].protect + " in place");
      bufs_[b].content = content;
      env_[op->result(r)] = Slot{b, 0};
    } else {
      env_[op->result(r)] = Slot{NewBuffer(content), 0};
    }
  }

  std::vector<Slot> RunRegion(Region* region, std::vector<Slot> args, Operation** term) {
    Block* block = region->block(0);
    for (int steps = 0; steps < 10000; ++steps) {
      for (unsigned i = 0; i < block->num_arguments() && i < args.size(); ++i)
        env_[block->argument(i)] = args[i];
      for (auto& owned : block->ops()) {
        Operation* op = owned.get();
        if (op == block->terminator()) break;
        Exec(op);
      }
      Operation* t = block->terminator();
      std::vector<Slot> vals;
      for (Value* v : t->operands()) vals.push_back(Get(v));
      if (t->is("cf.br")) {
        CountEntryCopies(t, 0, t->num_operands());
        block = t->successor(0);
        args = vals;
        continue;
      }
      if (t->is("cf.cond_br")) {
        std::vector<int64_t> seg = t->ints_attr("operand_segments");
        bool c = vals[0].scalar != 0;
        CountEntryCopies(t, static_cast<unsigned>(1 + (c ? 0 : seg[1])), static_cast<unsigned>(c ? seg[1] : seg[2]));
        auto first = vals.begin() + 1 + (c ? 0 : seg[1]);
        args.assign(first, first + (c ? seg[1] : seg[2]));
        block = t->successor(c ? 0 : 1);
        continue;
      }
      *term = t;
      return vals;
    }
    Fail("branch loop did not terminate");
    return {};
  }

  void Exec(Operation* op) {
    const std::string& n = op->name();
    std::vector<uint64_t> in;
    for (Value* v : op->operands())
      if (v->type().kind == ir::TypeKind::kResource || v->type().is_tensor())
        in.push_back(Content(v));
    if (n == "arith.constant") {
      env_[op->result(0)] = Slot{-1, op->int_attr("value")};
    } else if (n == "test.cond") {
      env_[op->result(0)] = Slot{-1, counters_[op]++ < op->int_attr("trips") ? 1 : 0};
    } else if (n == "stream.tensor.import") {
      Slot s = Get(op->operand(0));
      if (op->bool_attr("consume")) bufs_[s.buffer].protect.clear();
      env_[op->result(0)] = s;
    } else if (n == "stream.tensor.export" || n == "stream.timepoint.await") {
      for (unsigned i = 0; i < op->num_results(); ++i)
        env_[op->result(i)] = Get(op->operand(n == "stream.timepoint.await" ? i + 1 : 0));
    } else if (n == "stream.async.constant") {
      int b = NewBuffer(Mix(HashStr("constant"), op->int_attr("seed")));
      bufs_[b].protect = "constant";
      env_[op->result(0)] = Slot{b, 0};
    } else if (n == "stream.async.splat" || n == "stream.async.alloca") {
      env_[op->result(0)] = Slot{NewBuffer(Mix(HashStr(n), op->int_attr("pattern"))), 0};
    } else if (n == "stream.async.clone" || n == "stream.async.transfer") {
      clones_run_ += n == "stream.async.clone";
      env_[op->result(0)] = Slot{NewBuffer(in[0]), 0};
    } else if (n == "stream.async.slice") {
      env_[op->result(0)] = Slot{NewBuffer(Mix(Mix(HashStr(n), op->int_attr("offset")), in[0])), 0};
    } else if (n == "util.global.load") {
      std::string g = op->str_attr("global");
      if (!globals_.count(g)) {
        globals_[g] = NewBuffer(HashStr(g));
        bufs_[globals_[g]].protect = "global";
      }
      env_[op->result(0)] = Slot{globals_[g], 0};
    } else if (n == "util.global.store") {
      // The store copies the value into the global's buffer where it runs
      // (--materialize-edge-copies), unless it is that buffer already (a
      // state update in place): later writes of the value do not reach the
      // global.
      int b = Get(op->operand(0)).buffer;
      auto g = globals_.find(op->str_attr("global"));
      if (g == globals_.end() || g->second != b) {
        b = NewBuffer(in[0]);
        bufs_[b].protect = "global";
        globals_[op->str_attr("global")] = b;
      }
    } else if (n == "stream.async.dispatch" || n == "stream.async.update" ||
               n == "stream.async.copy" || n == "stream.async.fill") {
      uint64_t h = Mix(HashStr(n + op->str_attr("entry")), op->int_attr("pattern"));
      for (uint64_t c : in) h = Mix(h, c);
      for (unsigned r = 0; r < op->num_results(); ++r)
        Write(op, r, TiedOperandOfResult(op, r), Mix(h, r));
    } else if (n == "scf.if" || n == "scf.index_switch") {
      unsigned region = 0;
      int64_t c = Get(op->operand(0)).scalar;
      if (n == "scf.if") {
        region = c ? 0 : 1;
      } else {
        std::vector<int64_t> cases = op->ints_attr("cases");
        region = static_cast<unsigned>(cases.size());
        for (size_t i = 0; i < cases.size(); ++i)
          if (cases[i] == c) region = static_cast<unsigned>(i);
      }
      Operation* t = nullptr;
      std::vector<Slot> r = RunRegion(op->region(region), {}, &t);
      Bind(op, r);
    } else if (n == "scf.for") {
      int64_t lb = Get(op->operand(0)).scalar, ub = Get(op->operand(1)).scalar,
              step = Get(op->operand(2)).scalar;
      std::vector<Slot> iter;
      for (unsigned i = 3; i < op->num_operands(); ++i) iter.push_back(Get(op->operand(i)));
      CountEntryCopies(op, 3, op->num_operands() - 3);
      for (int64_t iv = lb; iv < ub; iv += step) {
        std::vector<Slot> args = {Slot{-1, iv}};
        args.insert(args.end(), iter.begin(), iter.end());
        Operation* t = nullptr;
        iter = RunRegion(op->region(0), args, &t);
      }
      Bind(op, iter);
    } else if (n == "scf.while") {
      std::vector<Slot> iter;
      for (Value* v : op->operands()) iter.push_back(Get(v));
      CountEntryCopies(op, 0, op->num_operands());
      for (int trips = 0; trips < 1000; ++trips) {
        Operation* t = nullptr;
        std::vector<Slot> cond = RunRegion(op->region(0), iter, &t);
        std::vector<Slot> fwd(cond.begin() + 1, cond.end());
        if (!cond[0].scalar) {
          Bind(op, fwd);
          return;
        }
        iter = RunRegion(op->region(1), fwd, &t);
      }
      Fail("scf.while did not terminate");
    } else {
      Fail("interpreter: unknown op " + n);
    }
  }

  void Bind(Operation* op, const std::vector<Slot>& vals) {
    for (unsigned i = 0; i < op->num_results() && i < vals.size(); ++i)
      env_[op->result(i)] = vals[i];
  }

  bool value_semantics_;
  std::vector<Buffer> bufs_;
  std::map<Value*, Slot> env_;
  std::map<std::string, int> globals_;
  std::map<const Operation*, int64_t> counters_;
  std::string violation_;
  int clones_run_ = 0;
  int entry_copies_ = 0;
  // Counts the entry copies of operands [first, first + count) of `edge`.
  void CountEntryCopies(Operation* edge, unsigned first, unsigned count) {
    for (unsigned i = first; i < first + count && i < edge->num_operands(); ++i) {
      Value* v = edge->operand(i);
      if (v->type().kind != ir::TypeKind::kResource) continue;
      Operation* def = v->defining_op();
      bool absorbed = def && def->is("stream.async.clone") && v->uses().size() == 1;
      if (!absorbed) ++entry_copies_;
    }
  }
};

// Static check: does the tied operand `v` (through tied results, awaits,
// slices, block arguments and region results) come from a borrowed import?
bool ReachesBorrowedImport(Value* v, std::set<Value*>& seen) {
  if (!seen.insert(v).second) return false;
  if (Operation* def = v->defining_op()) {
    if (def->is("stream.tensor.import")) return !def->bool_attr("consume");
    if (def->is("stream.async.clone")) return false;
    int tied = TiedOperandOfResult(def, v->index());
    if (tied >= 0) return ReachesBorrowedImport(def->operand(static_cast<unsigned>(tied)), seen);
    if (def->is("stream.timepoint.await"))
      return ReachesBorrowedImport(def->operand(v->index() + 1), seen);
    if (def->is("stream.async.slice")) return ReachesBorrowedImport(def->operand(0), seen);
  }
  bool modelled = true;
  for (const FlowEdge& e : IncomingValues(v, &modelled))
    if (ReachesBorrowedImport(e.value, seen)) return true;
  return false;
}

struct Outcome {
  int clones_after_cow = 0, clones_after_elide = 0;
  int clones_run_cow = 0, clones_run_elide = 0;
  bool unsafe_without_cow = false;
};

// The whole differential check on one program (text of one func.func).
Outcome CheckProgram(const std::string& text, const std::vector<int64_t>& scalars) {
  Outcome o;
  SCOPED_TRACE(text);
  auto original = Parse(text);
  auto cow = Parse(text);
  auto elided = Parse(text);
  if (!original || !cow || !elided) {
    ADD_FAILURE() << "does not parse";
    return o;
  }
  ir::PassContext cow_ctx, elide_ctx;
  Status st = RunPass(*cow, "materialize-copy-on-write", cow_ctx);
  EXPECT_TRUE(st.ok()) << st.message();
  st = RunPass(*elided, "materialize-copy-on-write", elide_ctx);
  EXPECT_TRUE(st.ok()) << st.message();
  elide_ctx.remarks.clear();
  st = RunPass(*elided, "elide-async-copies", elide_ctx);
  EXPECT_TRUE(st.ok()) << st.message();
  SCOPED_TRACE("after COW + elision:\n" + ir::PrintModule(*elided));

  Interpreter reference(/*value_semantics=*/true);
  std::vector<uint64_t> want = reference.Run(original->functions()[0], scalars);
  EXPECT_EQ(reference.violation(), "");

  Interpreter raw(false);
  o.unsafe_without_cow =
      raw.Run(original->functions()[0], scalars) != want || !raw.violation().empty();

  Interpreter after_cow(false);
  EXPECT_EQ(after_cow.Run(cow->functions()[0], scalars), want) << "COW changed the results";
  EXPECT_EQ(after_cow.violation(), "");
  Interpreter after_elide(false);
  EXPECT_EQ(after_elide.Run(elided->functions()[0], scalars), want)
      << "elision changed the results";
  EXPECT_EQ(after_elide.violation(), "");

  o.clones_after_cow = CountOps(*cow, "stream.async.clone");
  o.clones_after_elide = CountOps(*elided, "stream.async.clone");
  o.clones_run_cow = after_cow.clones_run();
  o.clones_run_elide = after_elide.clones_run();
  EXPECT_LE(o.clones_after_elide, o.clones_after_cow);
  EXPECT_LE(o.clones_run_elide, o.clones_run_cow);

  // Every clone left has a reason.
  int kept = 0;
  for (const std::string& r : elide_ctx.remarks) kept += r.find("kept copy: ") != std::string::npos;
  EXPECT_EQ(kept, o.clones_after_elide);
  // No tied op writes a borrowed import directly.
  for (Operation* f : elided->functions())
    f->Walk([&](Operation* op) {
      for (unsigned k : TiedOperands(op)) {
        std::set<Value*> seen;
        EXPECT_FALSE(ReachesBorrowedImport(op->operand(k), seen))
            << "'" << op->name() << "' writes a borrowed import";
      }
    });
  // The passes agree: COW on the elided program, then elision again, is a
  // fixed point (elision takes back exactly the copies COW re-adds).
  ir::PassContext again;
  std::string before = ir::PrintModule(*elided);
  EXPECT_TRUE(RunPass(*elided, "materialize-copy-on-write", again).ok());
  EXPECT_TRUE(RunPass(*elided, "elide-async-copies", again).ok());
  EXPECT_EQ(ir::PrintModule(*elided), before);
  return o;
}

// ---------------------------------------------------------------------------
// Hand-written programs
// ---------------------------------------------------------------------------
TEST(CopyElisionDifferentialTest, HandWrittenPrograms) {
  const char* kR = "!stream.resource<transient>";
  auto sub = [&](std::string s) {
    for (size_t p; (p = s.find("$R")) != std::string::npos;) s.replace(p, 2, kR);
    return s;
  };
  // Loop-carried state, consumed import, captured value, value used after.
  std::string loop = sub(R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>):
  %lb = "arith.constant"() {value = 0 : i64} : () -> index
  %ub = "arith.constant"() {value = 3 : i64} : () -> index
  %step = "arith.constant"() {value = 1 : i64} : () -> index
  %h = "stream.tensor.import"(%arg0) {consume = true, size = 16 : i64} : (tensor<4xf32>) -> $R
  %x = "stream.tensor.import"(%arg1) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> $R
  %v = "stream.async.splat"() {pattern = 5 : i64, size = 16 : i64} : () -> $R
  %r:2 = "scf.for"(%lb, %ub, %step, %h, %x) ({
  ^bb0(%iv: index, %s: $R, %y: $R):
    %n = "stream.async.dispatch"(%s, %y) {entry = @cell, sizes = [16], tied_operands = [0]} : ($R, $R) -> $R
    %w = "stream.async.dispatch"(%v, %n) {entry = @acc, sizes = [16], tied_operands = [0]} : ($R, $R) -> $R
    %z = "stream.async.update"(%y, %w) {length = 16 : i64, offset = 0 : i64, size = 16 : i64} : ($R, $R) -> $R
    "scf.yield"(%n, %z) : ($R, $R) -> ()
  }) : (index, index, index, $R, $R) -> ($R, $R)
  %e = "stream.async.fill"(%v) {length = 4 : i64, offset = 0 : i64, pattern = 9 : i64, size = 16 : i64} : ($R) -> $R
  "func.return"(%r#0, %r#1, %e, %x) : ($R, $R, $R, $R) -> ()
}) {arg_ownership = ["consume", "borrow"], sym_name = "loop"} : () -> ()
)");
  Outcome o = CheckProgram(loop, {});
  EXPECT_TRUE(o.unsafe_without_cow);
  EXPECT_LT(o.clones_after_elide, o.clones_after_cow);
  // The loop-carried state (%s) updates in place: 3 trips, copies left only
  // for the borrowed import (first trip) and the captured %v (every trip).
  EXPECT_LT(o.clones_run_elide, o.clones_run_cow);

  // Branches, a branch loop, scf.while and index_switch.
  std::string cfg = sub(R"(
"func.func"() ({
^bb0(%arg0: i1, %arg1: index):
  %d = "stream.async.splat"() {pattern = 1 : i64, size = 16 : i64} : () -> $R
  %e = "stream.async.splat"() {pattern = 2 : i64, size = 16 : i64} : () -> $R
  "cf.cond_br"(%arg0, %d, %e)[^bb1, ^bb1] {operand_segments = [1, 1, 1]} : (i1, $R, $R) -> ()
^bb1(%x: $R):
  %u = "stream.async.dispatch"(%x) {entry = @step, sizes = [16], tied_operands = [0]} : ($R) -> $R
  %c = "test.cond"() {trips = 2 : i64} : () -> i1
  "cf.cond_br"(%c, %u, %u)[^bb1, ^bb2] {operand_segments = [1, 1, 1]} : (i1, $R, $R) -> ()
^bb2(%y: $R):
  %w = "scf.while"(%y) ({
  ^bb0(%b: $R):
    %t = "stream.async.dispatch"(%d) {entry = @probe, sizes = [16], tied_operands = [0]} : ($R) -> $R
    %more = "test.cond"() {trips = 3 : i64} : () -> i1
    "scf.condition"(%more, %b) : (i1, $R) -> ()
  }, {
  ^bb0(%a: $R):
    %n = "stream.async.dispatch"(%a, %e) {entry = @step, sizes = [16], tied_operands = [0]} : ($R, $R) -> $R
    "scf.yield"(%n) : ($R) -> ()
  }) : ($R) -> $R
  %s = "scf.index_switch"(%arg1) ({
    %k = "stream.async.dispatch"(%w) {entry = @k0, sizes = [16], tied_operands = [0]} : ($R) -> $R
    "scf.yield"(%k) : ($R) -> ()
  }, {
    "scf.yield"(%w) : ($R) -> ()
  }) {cases = [1]} : (index) -> $R
  "func.return"(%s, %e) : ($R, $R) -> ()
}) {sym_name = "cfg"} : () -> ()
)");
  for (int64_t c : {0, 1})
    for (int64_t k : {0, 1}) {
      Outcome p = CheckProgram(cfg, {c, k});
      EXPECT_TRUE(p.unsafe_without_cow);
    }
}

// ---------------------------------------------------------------------------
// Random programs
// ---------------------------------------------------------------------------
class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  std::string Program(std::vector<int64_t>* scalars) {
    Module m;
    ir::Builder top = ir::Builder::AtEnd(m.body());
    Operation* func = top.Create("func.func", {}, {}, {{"sym_name", ir::Attribute("f")}}, 1);
    Block* entry = func->region(0)->AddBlock();
    ir::AttrList own;
    std::vector<Value*> avail;
    ir::Builder b = ir::Builder::AtEnd(entry);
    int n_tensors = 1 + Rand(2);
    for (int i = 0; i < n_tensors; ++i) {
      Value* t = entry->AddArgument(ir::Type::Tensor(DType::kF32, {4}));
      own.push_back(ir::Attribute(Rand(2) ? "consume" : "borrow"));
      bool consume = Rand(2) == 0;
      avail.push_back(
          b.Create("stream.tensor.import", {t}, {R()},
                   {{"consume", ir::Attribute(consume)}, {"size", ir::Attribute(int64_t{16})}})
              ->result(0));
    }
    Value* res_arg = entry->AddArgument(R());
    own.push_back(ir::Attribute(Rand(2) ? "consume" : "borrow"));
    avail.push_back(res_arg);
    cond_ = entry->AddArgument(ir::Type::I1());
    own.push_back(ir::Attribute("borrow"));
    sel_ = entry->AddArgument(ir::Type::Index());
    own.push_back(ir::Attribute("borrow"));
    scalars->assign(entry->num_arguments(), 0);
    (*scalars)[entry->num_arguments() - 2] = Rand(2);
    (*scalars)[entry->num_arguments() - 1] = Rand(3);
    func->set_attr("arg_ownership", ir::MakeListAttr(own));
    avail.push_back(Splat(b));
    if (Rand(2)) {
      // Every generated resource is typed transient so any value may flow
      // anywhere; the analysis goes by ops, not by lifetime.
      Operation* k = b.Create(
          "stream.async.constant", {}, {R()},
          {{"size", ir::Attribute(int64_t{16})}, {"seed", ir::Attribute(int64_t{Rand(100)})}});
      avail.push_back(k->result(0));
    }
    Body(b, avail, 0, 6);
    // Branch constructs at the top level.
    Block* cur = entry;
    if (Rand(2)) cur = Diamond(func->region(0), cur, avail);
    if (Rand(2)) cur = BranchLoop(func->region(0), cur, avail);
    ir::Builder end = ir::Builder::AtEnd(cur);
    Body(end, avail, 0, 3);
    std::vector<Value*> rets;
    for (int i = 0, n = 1 + Rand(3); i < n; ++i) rets.push_back(Pick(avail));
    end.Create("func.return", rets, {});
    Status st = ir::Verify(m);
    EXPECT_TRUE(st.ok()) << st.message() << "\n" << ir::PrintModule(m);
    return ir::PrintModule(m);
  }

 private:
  int64_t Rand(int n) { return static_cast<int64_t>(rng_() % static_cast<uint32_t>(n)); }
  static ir::Type R() { return ir::Type::Resource(ir::Lifetime::kTransient); }
  Value* Pick(const std::vector<Value*>& v) {
    return v[static_cast<size_t>(Rand(static_cast<int>(v.size())))];
  }
  Value* Index(ir::Builder& b, int64_t v) {
    return b.Create("arith.constant", {}, {ir::Type::Index()}, {{"value", ir::Attribute(v)}})
        ->result(0);
  }
  Value* Splat(ir::Builder& b) {
    return b
        .Create(
            "stream.async.splat", {}, {R()},
            {{"pattern", ir::Attribute(int64_t{Rand(100)})}, {"size", ir::Attribute(int64_t{16})}})
        ->result(0);
  }
  Value* Dispatch(ir::Builder& b, std::vector<Value*> operands, int64_t tied) {
    std::string entry = "e" + std::to_string(Rand(5));
    return b
        .Create("stream.async.dispatch", operands, {R()},
                {{"entry", ir::Attribute(ir::SymbolRef{entry})},
                 {"sizes", ir::Attribute(std::vector<int64_t>{16})},
                 {"tied_operands", ir::Attribute(std::vector<int64_t>{tied})}})
        ->result(0);
  }

  // Appends random statements; new values join `avail`.
  void Body(ir::Builder& b, std::vector<Value*>& avail, int depth, int budget) {
    for (int i = 0; i < budget; ++i) {
      int what = static_cast<int>(Rand(depth < 2 ? 14 : 9));
      switch (what) {
        case 0:
        case 1:
        case 2: {  // tied dispatch, maybe reading another value
          std::vector<Value*> ops = {Pick(avail)};
          if (Rand(2)) ops.push_back(Pick(avail));
          avail.push_back(Dispatch(b, ops, 0));
          break;
        }
        case 3:
          avail.push_back(Dispatch(b, {Pick(avail)}, -1));
          break;
        case 4:
          avail.push_back(b.Create("stream.async.update", {Pick(avail), Pick(avail)}, {R()},
                                   {{"length", ir::Attribute(int64_t{4})},
                                    {"offset", ir::Attribute(int64_t{0})},
                                    {"size", ir::Attribute(int64_t{16})}})
                              ->result(0));
          break;
        case 5:
          avail.push_back(b.Create("stream.async.fill", {Pick(avail)}, {R()},
                                   {{"length", ir::Attribute(int64_t{4})},
                                    {"offset", ir::Attribute(int64_t{4})},
                                    {"pattern", ir::Attribute(int64_t{Rand(9)})},
                                    {"size", ir::Attribute(int64_t{16})}})
                              ->result(0));
          break;
        case 6:
          avail.push_back(b.Create("stream.async.clone", {Pick(avail)}, {R()},
                                   {{"size", ir::Attribute(int64_t{16})}})
                              ->result(0));
          break;
        case 7:
          if (Rand(2)) {
            b.Create("util.global.store", {Pick(avail)}, {},
                     {{"global", ir::Attribute(ir::SymbolRef{"g"})}});
          } else {
            avail.push_back(b.Create("util.global.load", {}, {R()},
                                     {{"global", ir::Attribute(ir::SymbolRef{"g"})}})
                                ->result(0));
          }
          break;
        case 8:
          avail.push_back(Splat(b));
          break;
        case 9:
        case 10:
          avail.push_back(For(b, avail, depth));
          break;
        case 11:
          avail.push_back(If(b, avail, depth));
          break;
        case 12:
          avail.push_back(While(b, avail, depth));
          break;
        case 13:
          avail.push_back(Switch(b, avail, depth));
          break;
      }
    }
  }

  // A region block: statements, then a yield of `n` values of its scope.
  std::vector<Value*> RegionBody(Block* block, std::vector<Value*> avail, int depth, int n) {
    ir::Builder b = ir::Builder::AtEnd(block);
    Body(b, avail, depth, 1 + static_cast<int>(Rand(4)));
    std::vector<Value*> out;
    for (int i = 0; i < n; ++i) out.push_back(Pick(avail));
    return out;
  }

  Value* For(ir::Builder& b, const std::vector<Value*>& avail, int depth) {
    int n = 1 + static_cast<int>(Rand(2));
    std::vector<Value*> ops = {Index(b, 0), Index(b, Rand(4)), Index(b, 1)};
    for (int i = 0; i < n; ++i) ops.push_back(Pick(avail));
    Operation* loop = b.Create("scf.for", ops, std::vector<ir::Type>(n, R()), {}, 1);
    Block* body = loop->region(0)->AddBlock();
    body->AddArgument(ir::Type::Index());
    std::vector<Value*> inner = avail;
    for (int i = 0; i < n; ++i) inner.push_back(body->AddArgument(R()));
    std::vector<Value*> y = RegionBody(body, inner, depth + 1, n);
    ir::Builder::AtEnd(body).Create("scf.yield", y, {});
    return loop->result(static_cast<unsigned>(Rand(n)));
  }

  Value* If(ir::Builder& b, const std::vector<Value*>& avail, int depth) {
    Operation* op = b.Create("scf.if", {cond_}, {R()}, {}, 2);
    for (unsigned r = 0; r < 2; ++r) {
      Block* blk = op->region(r)->AddBlock();
      std::vector<Value*> y = RegionBody(blk, avail, depth + 1, 1);
      ir::Builder::AtEnd(blk).Create("scf.yield", y, {});
    }
    return op->result(0);
  }

  Value* Switch(ir::Builder& b, const std::vector<Value*>& avail, int depth) {
    Operation* op = b.Create("scf.index_switch", {sel_}, {R()},
                             {{"cases", ir::Attribute(std::vector<int64_t>{0, 1})}}, 3);
    for (unsigned r = 0; r < 3; ++r) {
      Block* blk = op->region(r)->AddBlock();
      std::vector<Value*> y = RegionBody(blk, avail, depth + 1, 1);
      ir::Builder::AtEnd(blk).Create("scf.yield", y, {});
    }
    return op->result(0);
  }

  Value* While(ir::Builder& b, const std::vector<Value*>& avail, int depth) {
    Operation* op = b.Create("scf.while", {Pick(avail)}, {R()}, {}, 2);
    Block* before = op->region(0)->AddBlock();
    std::vector<Value*> in = avail;
    in.push_back(before->AddArgument(R()));
    ir::Builder bb = ir::Builder::AtEnd(before);
    Body(bb, in, depth + 1, static_cast<int>(Rand(3)));
    Value* c =
        bb.Create("test.cond", {}, {ir::Type::I1()}, {{"trips", ir::Attribute(int64_t{Rand(4)})}})
            ->result(0);
    bb.Create("scf.condition", {c, Pick(in)}, {});
    Block* after = op->region(1)->AddBlock();
    std::vector<Value*> in2 = avail;
    in2.push_back(after->AddArgument(R()));
    std::vector<Value*> y = RegionBody(after, in2, depth + 1, 1);
    ir::Builder::AtEnd(after).Create("scf.yield", y, {});
    return op->result(0);
  }

  // cur -> cond_br -> ^a(x) | ^b(y) -> ^join(z); returns ^join.
  Block* Diamond(Region* region, Block* cur, std::vector<Value*>& avail) {
    Block* a = region->AddBlock();
    Block* bl = region->AddBlock();
    Block* join = region->AddBlock();
    Value* xa = a->AddArgument(R());
    Value* xb = bl->AddArgument(R());
    Operation* br = ir::Builder::AtEnd(cur).Create(
        "cf.cond_br", {cond_, Pick(avail), Pick(avail)}, {},
        {{"operand_segments", ir::Attribute(std::vector<int64_t>{1, 1, 1})}});
    br->AddSuccessor(a);
    br->AddSuccessor(bl);
    for (auto [blk, arg] : {std::pair{a, xa}, std::pair{bl, xb}}) {
      std::vector<Value*> scope = avail;
      scope.push_back(arg);
      ir::Builder b = ir::Builder::AtEnd(blk);
      Body(b, scope, 1, 2);
      b.Create("cf.br", {Pick(scope)}, {})->AddSuccessor(join);
    }
    avail.push_back(join->AddArgument(R()));
    return join;
  }

  // cur -> ^h(x); ^h: body; cond_br(test.cond, ^h(y), ^exit(z)); returns ^exit.
  Block* BranchLoop(Region* region, Block* cur, std::vector<Value*>& avail) {
    Block* h = region->AddBlock();
    Block* exit = region->AddBlock();
    Value* x = h->AddArgument(R());
    ir::Builder::AtEnd(cur).Create("cf.br", {Pick(avail)}, {})->AddSuccessor(h);
    std::vector<Value*> scope = avail;
    scope.push_back(x);
    ir::Builder b = ir::Builder::AtEnd(h);
    Body(b, scope, 1, 3);
    Value* c =
        b.Create("test.cond", {}, {ir::Type::I1()}, {{"trips", ir::Attribute(int64_t{Rand(3)})}})
            ->result(0);
    Operation* br = b.Create("cf.cond_br", {c, Pick(scope), Pick(scope)}, {},
                             {{"operand_segments", ir::Attribute(std::vector<int64_t>{1, 1, 1})}});
    br->AddSuccessor(h);
    br->AddSuccessor(exit);
    avail = scope;  // ^h dominates ^exit
    avail.push_back(exit->AddArgument(R()));
    return exit;
  }

  std::mt19937 rng_;
  Value* cond_ = nullptr;
  Value* sel_ = nullptr;
};

TEST(CopyElisionDifferentialTest, RandomPrograms) {
  int unsafe = 0, removed = 0, kept = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Generator gen(seed);
    std::vector<int64_t> scalars;
    std::string text = gen.Program(&scalars);
    Outcome o = CheckProgram(text, scalars);
    unsafe += o.unsafe_without_cow;
    removed += o.clones_after_cow - o.clones_after_elide;
    kept += o.clones_after_elide;
    if (HasFailure()) break;  // one program's trace is enough
  }
  std::printf("random programs: %d unsafe without COW; copies removed %d, kept %d\n", unsafe,
              removed, kept);
  // The generator must produce hazards and both outcomes of elision.
  EXPECT_GT(unsafe, 50);
  EXPECT_GT(removed, 100);
  EXPECT_GT(kept, 100);
}

}  // namespace
}  // namespace kiln::analysis
