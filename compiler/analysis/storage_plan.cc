// The storage plan's IR form (storage_plan.h): writing and reading it.
#include "compiler/analysis/storage_plan.h"

#include <functional>

#include "compiler/analysis/resource_values.h"

namespace kiln::analysis {
namespace {

constexpr const char* kKindNames[] = {"argument", "taken",  "constant", "global",      "arena",
                                      "output",   "cached", "donated",  "call_result", "temporary"};
constexpr int kKindCount = static_cast<int>(sizeof(kKindNames) / sizeof(kKindNames[0]));

// Every op of `func`'s body (its blocks, with their nested regions).
void ForEachBodyOp(ir::Operation* func, const std::function<void(ir::Operation*)>& f) {
  for (auto& b : func->region(0)->blocks())
    for (auto& owned : b->ops()) owned->Walk(f);
}

// The arguments of the entry block of each region of `op`, regions in order.
std::vector<ir::Value*> RegionArguments(ir::Operation* op) {
  std::vector<ir::Value*> out;
  for (unsigned r = 0; r < op->num_regions(); ++r) {
    if (op->region(r)->empty()) continue;
    for (ir::Value* a : op->region(r)->block(0)->arguments()) out.push_back(a);
  }
  return out;
}

std::vector<ir::Value*> BodyArguments(ir::Operation* func) {
  std::vector<ir::Value*> out;
  for (auto& b : func->region(0)->blocks())
    for (ir::Value* a : b->arguments()) out.push_back(a);
  return out;
}

bool IsResource(const ir::Value* v) { return v->type().kind == ir::TypeKind::kResource; }

// Writes the ids and offsets of `values` as attributes `ids_name` and
// `offsets_name` of `op` (nothing when none is a resource).
void WriteValues(ir::Operation* op, const std::vector<ir::Value*>& values, const StoragePlan& plan,
                 const char* ids_name, const char* offsets_name) {
  std::vector<int64_t> ids, offsets;
  bool any = false;
  for (ir::Value* v : values) {
    auto it = plan.values.find(v);
    bool known = IsResource(v) && it != plan.values.end();
    any = any || known;
    ids.push_back(known ? it->second.id : -1);
    offsets.push_back(known ? it->second.offset : 0);
  }
  if (!any) return;
  op->set_attr(ids_name, ir::Attribute(ids));
  op->set_attr(offsets_name, ir::Attribute(offsets));
}

// Reads `values`' ids and offsets back from `op`; every resource must have one.
Status ReadValues(ir::Operation* op, const std::vector<ir::Value*>& values, const char* ids_name,
                  const char* offsets_name, size_t storage_count, StoragePlan* plan) {
  bool any_resource = false;
  for (ir::Value* v : values) any_resource = any_resource || IsResource(v);
  if (!any_resource) return OkStatus();
  std::vector<int64_t> ids = op->ints_attr(ids_name), offsets = op->ints_attr(offsets_name);
  if (ids.size() != values.size() || offsets.size() != values.size())
    return InvalidArgumentError("storage plan: '%s' (%s) needs %s and %s with %zu entries", op->name().c_str(),
                                op->loc().c_str(), ids_name, offsets_name, values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (!IsResource(values[i])) continue;
    if (ids[i] < 0 || static_cast<size_t>(ids[i]) >= storage_count)
      return InvalidArgumentError("storage plan: '%s' (%s): %s[%zu] = %lld is not a storage", op->name().c_str(),
                                  op->loc().c_str(), ids_name, i, static_cast<long long>(ids[i]));
    plan->values[values[i]] = ValueStorage{static_cast<int>(ids[i]), offsets[i]};
  }
  return OkStatus();
}

int64_t IntAt(const ir::AttrList& l, size_t i) {
  const int64_t* v = i < l.size() ? std::get_if<int64_t>(&l[i].value) : nullptr;
  return v ? *v : -1;
}

}  // namespace

std::vector<EdgeCopy> EdgeCopiesOf(ir::Operation* op) {
  std::vector<EdgeCopy> groups;
  auto block_group = [&](ir::Block* target, unsigned first, unsigned count) {
    EdgeCopy g;
    for (unsigned i = 0; i < count && i < target->num_arguments(); ++i) {
      g.operands.push_back(first + i);
      g.destinations.push_back(target->argument(i));
    }
    groups.push_back(g);
  };
  ir::Operation* parent =
      op->parent_block() && op->parent_block()->parent() ? op->parent_block()->parent()->parent_op() : nullptr;
  if (op->is(ir::OpCode::kScfYield) && parent && parent->is(ir::OpCode::kScfFor)) {
    EdgeCopy g;
    for (unsigned i = 0; i < op->num_operands(); ++i) {
      g.operands.push_back(i);
      g.destinations.push_back(parent->region(0)->block(0)->argument(1 + i));
    }
    groups.push_back(g);
  } else if (op->is(ir::OpCode::kScfYield) && parent && parent->is(ir::OpCode::kScfWhile) &&
             op->parent_block() == parent->region(1)->block(0)) {
    block_group(parent->region(0)->block(0), 0, op->num_operands());
  } else if (op->is(ir::OpCode::kScfCondition) && parent && parent->is(ir::OpCode::kScfWhile)) {
    EdgeCopy g;
    for (unsigned i = 1; i < op->num_operands() && i - 1 < parent->num_results(); ++i) {
      g.operands.push_back(i);
      g.destinations.push_back(parent->result(i - 1));
    }
    groups.push_back(g);
  } else if (op->is(ir::OpCode::kCfBr) && op->num_successors() == 1) {
    block_group(op->successor(0), 0, op->num_operands());
  } else if (op->is(ir::OpCode::kCfCondBr) && op->num_successors() == 2) {
    std::vector<int64_t> seg = op->ints_attr("operand_segments");
    if (seg.size() == 3) {
      block_group(op->successor(0), 1, static_cast<unsigned>(seg[1]));
      block_group(op->successor(1), static_cast<unsigned>(1 + seg[1]), static_cast<unsigned>(seg[2]));
    }
  }
  return groups;
}

Placement PlacementOf(const StoragePlan& plan, ir::Value* v) {
  const ValueStorage& vs = plan.values.at(v);
  const StorageSlot& s = plan.storages[static_cast<size_t>(vs.id)];
  int group = vs.id;
  if (s.kind == StorageSlot::kArena) {
    group = -2;
  } else if (s.kind == StorageSlot::kTaken || s.kind == StorageSlot::kDonated) {
    for (size_t i = 0; i < plan.storages.size(); ++i)
      if (plan.storages[i].kind == StorageSlot::kArgument && plan.storages[i].index == s.index) group = static_cast<int>(i);
  }
  const int64_t begin = (s.kind == StorageSlot::kArena ? s.offset : 0) + vs.offset;
  return Placement{vs.id, group, s.dynamic_offset(), begin, begin + SizeOf(v)};
}

const char* StorageKindName(StorageSlot::Kind kind) { return kKindNames[static_cast<int>(kind)]; }

void WriteStoragePlan(ir::Operation* func, const StoragePlan& plan) {
  ir::AttrList storages;
  for (const StorageSlot& s : plan.storages) {
    ir::AttrList e = {ir::Attribute(std::string(StorageKindName(s.kind)))};
    switch (s.kind) {
      case StorageSlot::kArgument:
      case StorageSlot::kTaken: e.push_back(ir::Attribute(s.index)); break;
      case StorageSlot::kGlobal: e.push_back(ir::Attribute(s.global)); break;
      case StorageSlot::kArena: e.insert(e.end(), {ir::Attribute(s.offset), ir::Attribute(s.length)}); break;
      case StorageSlot::kOutput:
        e.insert(e.end(), {ir::Attribute(s.index), ir::Attribute(s.slot), ir::Attribute(s.length)});
        if (s.first >= 0) e.push_back(ir::Attribute(s.first));
        break;
      case StorageSlot::kCached:
      case StorageSlot::kTemporary: e.insert(e.end(), {ir::Attribute(s.slot), ir::Attribute(s.length)}); break;
      case StorageSlot::kDonated: e.insert(e.end(), {ir::Attribute(s.index), ir::Attribute(s.length)}); break;
      case StorageSlot::kConstant:
      case StorageSlot::kCallResult: break;
    }
    storages.push_back(ir::MakeListAttr(std::move(e)));
  }
  func->set_attr("storages", ir::MakeListAttr(std::move(storages)));
  func->set_attr("arena_size", ir::Attribute(plan.arena_size));
  func->set_attr("live_bytes_peak", ir::Attribute(plan.live_bytes_peak));
  WriteValues(func, BodyArguments(func), plan, "block_arg_storage", "block_arg_offset");
  ForEachBodyOp(func, [&](ir::Operation* op) {
    std::vector<ir::Value*> results = op->results();
    WriteValues(op, results, plan, "storage", "storage_offset");
    if (op->num_regions() > 0) WriteValues(op, RegionArguments(op), plan, "region_arg_storage", "region_arg_offset");
  });
  for (auto& [edge, temps] : plan.edge_temps) {
    std::vector<int64_t> flat;
    for (auto& [operand, id] : temps) flat.insert(flat.end(), {static_cast<int64_t>(operand), id});
    edge->set_attr("edge_temps", ir::Attribute(flat));
  }
  for (auto& [loop, ids] : plan.take_before)
    loop->set_attr("take_before", ir::Attribute(std::vector<int64_t>(ids.begin(), ids.end())));
  for (ir::Operation* imp : plan.droppable) imp->set_attr("droppable", ir::Attribute(true));
}

StatusOr<StoragePlan> ReadStoragePlan(ir::Operation* func) {
  StoragePlan plan;
  const ir::AttrList* storages = func->list_attr("storages");
  if (!storages)
    return FailedPreconditionError("function @%s has no storage plan (run --schedule-allocation)",
                                   func->str_attr("sym_name").c_str());
  for (const ir::Attribute& a : *storages) {
    const auto* e = std::get_if<std::shared_ptr<ir::AttrList>>(&a.value);
    const std::string* kind = e && *e && !(*e)->empty() ? std::get_if<std::string>(&(**e)[0].value) : nullptr;
    int k = 0;
    while (kind && k < kKindCount && *kind != kKindNames[k]) ++k;
    if (!kind || k == kKindCount)
      return InvalidArgumentError("storage plan of @%s: storage %zu has no known kind",
                                  func->str_attr("sym_name").c_str(), plan.storages.size());
    const ir::AttrList& l = **e;
    StorageSlot s;
    s.kind = static_cast<StorageSlot::Kind>(k);
    switch (s.kind) {
      case StorageSlot::kArgument:
      case StorageSlot::kTaken: s.index = IntAt(l, 1); break;
      case StorageSlot::kGlobal:
        if (const std::string* g = l.size() > 1 ? std::get_if<std::string>(&l[1].value) : nullptr) s.global = *g;
        break;
      case StorageSlot::kArena: s.offset = IntAt(l, 1), s.length = IntAt(l, 2); break;
      case StorageSlot::kOutput:
        s.index = IntAt(l, 1), s.slot = IntAt(l, 2), s.length = IntAt(l, 3);
        if (l.size() > 4) s.first = IntAt(l, 4);
        break;
      case StorageSlot::kCached:
      case StorageSlot::kTemporary: s.slot = IntAt(l, 1), s.length = IntAt(l, 2); break;
      case StorageSlot::kDonated: s.index = IntAt(l, 1), s.length = IntAt(l, 2); break;
      case StorageSlot::kConstant:
      case StorageSlot::kCallResult: break;
    }
    bool bad = (s.kind == StorageSlot::kGlobal && s.global.empty()) || s.length < 0 || s.offset < 0 ||
               ((s.kind == StorageSlot::kArgument || s.kind == StorageSlot::kTaken ||
                 s.kind == StorageSlot::kDonated || s.kind == StorageSlot::kOutput) && s.index < 0) ||
               ((s.kind == StorageSlot::kOutput || s.kind == StorageSlot::kCached ||
                 s.kind == StorageSlot::kTemporary) && s.slot < 0) ||
               (s.kind == StorageSlot::kOutput &&
                (s.first < -1 || s.first >= static_cast<int64_t>(plan.storages.size())));
    if (bad)
      return InvalidArgumentError("storage plan of @%s: storage %zu (%s) has missing or negative fields",
                                  func->str_attr("sym_name").c_str(), plan.storages.size(), kind->c_str());
    plan.storages.push_back(s);
  }
  plan.arena_size = func->int_attr("arena_size");
  plan.live_bytes_peak = func->int_attr("live_bytes_peak");
  const size_t n = plan.storages.size();
  KILN_RETURN_IF_ERROR(ReadValues(func, BodyArguments(func), "block_arg_storage", "block_arg_offset", n, &plan));
  Status status;
  ForEachBodyOp(func, [&](ir::Operation* op) {
    if (!status.ok()) return;
    std::vector<ir::Value*> results = op->results();
    status = ReadValues(op, results, "storage", "storage_offset", n, &plan);
    if (status.ok() && op->num_regions() > 0)
      status = ReadValues(op, RegionArguments(op), "region_arg_storage", "region_arg_offset", n, &plan);
    if (!status.ok()) return;
    if (op->attr("edge_temps")) {
      std::vector<int64_t> flat = op->ints_attr("edge_temps");
      for (size_t i = 0; i + 1 < flat.size(); i += 2) {
        if (flat[i] < 0 || flat[i] >= op->num_operands() || flat[i + 1] < 0 || static_cast<size_t>(flat[i + 1]) >= n ||
            plan.storages[static_cast<size_t>(flat[i + 1])].kind != StorageSlot::kTemporary) {
          status = InvalidArgumentError("storage plan: edge_temps of '%s' (%s) names no operand or temporary",
                                        op->name().c_str(), op->loc().c_str());
          return;
        }
        plan.edge_temps[op].push_back({static_cast<unsigned>(flat[i]), static_cast<int>(flat[i + 1])});
      }
    }
    if (op->attr("take_before")) {
      for (int64_t id : op->ints_attr("take_before")) {
        if (id < 0 || static_cast<size_t>(id) >= n || plan.storages[static_cast<size_t>(id)].kind != StorageSlot::kTaken) {
          status = InvalidArgumentError("storage plan: take_before of '%s' (%s) names no taken argument",
                                        op->name().c_str(), op->loc().c_str());
          return;
        }
        plan.take_before[op].push_back(static_cast<int>(id));
      }
    }
    if (op->bool_attr("droppable")) plan.droppable.push_back(op);
  });
  KILN_RETURN_IF_ERROR(status);
  return plan;
}

}  // namespace kiln::analysis
