#include "compiler/analysis/liveness.h"

#include <algorithm>
#include <vector>

namespace kiln::analysis {

using ir::OpCode;

namespace {

// Pre-order walk of `block` and the blocks of the regions nested in it.
template <typename F>
void ForEachOp(ir::Block* block, F&& f) {
  for (auto& owned : block->ops()) owned->Walk(f);
}

bool IsLoop(ir::Operation* op) { return op->is(OpCode::kScfFor) || op->is(OpCode::kScfWhile); }

const std::set<ir::Value*> kNone;

}  // namespace

Liveness::Liveness(ir::Operation* func, KeyFn key) : key_(std::move(key)) {
  if (!func || func->num_regions() == 0) return;
  ir::Region* body = func->region(0);
  // Steps, region extents, and the earliest definition of each key.
  auto define = [&](ir::Value* v, int at) {
    ir::Value* k = KeyOf(v);
    if (!k) return;
    auto it = def_step_.find(k);
    if (it == def_step_.end() || at < it->second) def_step_[k] = at;
  };
  int st = 0;
  for (auto& bp : body->blocks()) {
    ir::Block* b = bp.get();
    int first = st;
    for (ir::Value* a : b->arguments()) define(a, first);
    ForEachOp(b, [&](ir::Operation* op) {
      step_[op] = st;
      for (ir::Value* r : op->results()) define(r, st);
      for (unsigned r = 0; r < op->num_regions(); ++r)
        for (auto& nb : op->region(r)->blocks())
          for (ir::Value* a : nb->arguments()) define(a, st);
      ++st;
    });
    block_steps_[b] = {first, st - 1};
  }
  num_steps_ = st;
  for (auto& [op, begin] : step_) {
    int count = 0;
    for (unsigned r = 0; r < op->num_regions(); ++r)
      for (auto& b : op->region(r)->blocks()) ForEachOp(b.get(), [&](ir::Operation*) { ++count; });
    region_end_[op] = begin + count;
  }

  // Upward-exposed uses and definitions per body block; touches for hulls.
  auto touch = [&](ir::Value* k, int at) {
    auto h = hull_.find(k);
    if (h == hull_.end()) {
      hull_[k] = {at, at};
    } else {
      h->second.first = std::min(h->second.first, at);
      h->second.last = std::max(h->second.last, at);
    }
  };
  std::map<ir::Block*, std::set<ir::Value*>> uses_in, defs_in;
  for (auto& bp : body->blocks()) {
    ir::Block* b = bp.get();
    std::set<ir::Value*>& defs = defs_in[b];
    for (ir::Value* a : b->arguments())
      if (ir::Value* k = KeyOf(a)) defs.insert(k);
    ForEachOp(b, [&](ir::Operation* op) {
      int at = step_.at(op);
      for (ir::Value* o : op->operands()) {
        ir::Value* k = KeyOf(o);
        if (!k) continue;
        if (!defs.count(k)) uses_in[b].insert(k);
        int use = UseStep(op, DefStep(k));
        touch(k, use);
        auto lu = last_use_.find(k);
        if (lu == last_use_.end() || use > lu->second) last_use_[k] = use;
      }
      for (ir::Value* r : op->results()) {
        if (ir::Value* k = KeyOf(r)) {
          defs.insert(k);
          touch(k, at);
        }
      }
      for (unsigned r = 0; r < op->num_regions(); ++r)
        for (auto& nb : op->region(r)->blocks())
          for (ir::Value* a : nb->arguments()) {
            ir::Value* k = KeyOf(a);
            if (!k) continue;
            defs.insert(k);
            touch(k, at);
            if (IsLoop(op)) touch(k, region_end_.at(op));
          }
    });
  }

  // Backward dataflow over the body's blocks to a fixpoint.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = body->blocks().rbegin(); it != body->blocks().rend(); ++it) {
      ir::Block* b = it->get();
      std::set<ir::Value*> out;
      if (ir::Operation* t = b->terminator())
        for (ir::Block* succ : t->successors())
          if (succ) out.insert(live_in_[succ].begin(), live_in_[succ].end());
      std::set<ir::Value*> in = uses_in[b];
      for (ir::Value* k : out)
        if (!defs_in[b].count(k)) in.insert(k);
      if (out != live_out_[b] || in != live_in_[b]) {
        live_out_[b] = std::move(out);
        live_in_[b] = std::move(in);
        changed = true;
      }
    }
  }
  for (auto& bp : body->blocks()) {
    ir::Block* b = bp.get();
    for (ir::Value* k : live_in_[b]) touch(k, block_steps_[b].first);
    for (ir::Value* k : live_out_[b]) touch(k, block_steps_[b].last);
    // A block argument is written by each branch to it, at the
    // predecessor's terminator.
    if (ir::Operation* t = b->terminator())
      for (ir::Block* succ : t->successors())
        if (succ)
          for (ir::Value* a : succ->arguments())
            if (ir::Value* k = KeyOf(a)) touch(k, block_steps_[b].last);
  }
}

ir::Value* Liveness::KeyOf(ir::Value* v) const { return key_ ? key_(v) : v; }

int Liveness::StepOf(ir::Operation* op) const {
  auto it = step_.find(op);
  return it == step_.end() ? -1 : it->second;
}

int Liveness::RegionEnd(ir::Operation* op) const {
  auto it = region_end_.find(op);
  return it == region_end_.end() ? -1 : it->second;
}

int Liveness::UseStep(ir::Operation* user, int def_step) const {
  int at = StepOf(user);
  for (ir::Operation* p = user->parent_op(); p && !p->is(OpCode::kFuncFunc); p = p->parent_op())
    if (IsLoop(p) && def_step < StepOf(p)) at = std::max(at, RegionEnd(p));
  return at;
}

int Liveness::DefStep(ir::Value* key) const {
  auto it = def_step_.find(key);
  return it == def_step_.end() ? -1 : it->second;
}

Liveness::Interval Liveness::BlockSteps(ir::Block* block) const {
  auto it = block_steps_.find(block);
  return it == block_steps_.end() ? Interval{-1, -1} : it->second;
}

const std::set<ir::Value*>& Liveness::LiveIn(ir::Block* block) const {
  auto it = live_in_.find(block);
  return it == live_in_.end() ? kNone : it->second;
}

const std::set<ir::Value*>& Liveness::LiveOut(ir::Block* block) const {
  auto it = live_out_.find(block);
  return it == live_out_.end() ? kNone : it->second;
}

std::optional<Liveness::Interval> Liveness::Hull(ir::Value* key) const {
  auto it = hull_.find(key);
  if (it == hull_.end()) return std::nullopt;
  return it->second;
}

int Liveness::LastUse(ir::Value* key) const {
  auto it = last_use_.find(key);
  return it == last_use_.end() ? -1 : it->second;
}

}  // namespace kiln::analysis
