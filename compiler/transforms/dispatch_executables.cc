#include "compiler/transforms/dispatch_executables.h"

#include <algorithm>
#include <variant>

#include "compiler/ir/op_traits.h"

namespace kiln::transforms {

using ir::OpCode;

DispatchExecutables::DispatchExecutables(ir::Module& module) {
  for (auto& top : module.body()->ops())
    if (top->is(OpCode::kFlowExecutable)) by_name_[top->str_attr("sym_name")] = top.get();
}

ir::Operation* DispatchExecutables::BodyOf(ir::Operation* dispatch) const {
  const ir::Attribute* a = dispatch->attr("entry");
  const ir::SymbolRef* entry = a ? std::get_if<ir::SymbolRef>(&a->value) : nullptr;
  auto it = entry ? by_name_.find(entry->name) : by_name_.end();
  if (it == by_name_.end() || it->second->region(0)->empty() || it->second->region(0)->block(0)->empty())
    return nullptr;
  ir::Operation* body = it->second->region(0)->block(0)->ops().front().get();
  return body->is(OpCode::kFlowDispatch) ? body : nullptr;
}

void DispatchExecutables::EraseUncalled(ir::Module& module, const std::set<std::string>& rewritten) {
  std::set<std::string> called;
  for (ir::Operation* func : module.functions())
    func->Walk([&](ir::Operation* op) {
      if (const ir::Attribute* a = op->is(OpCode::kStreamAsyncDispatch) ? op->attr("entry") : nullptr)
        if (auto* ref = std::get_if<ir::SymbolRef>(&a->value)) called.insert(ref->name);
    });
  for (const std::string& sym : rewritten) {
    auto it = by_name_.find(sym);
    if (called.count(sym) || it == by_name_.end()) continue;
    it->second->Erase();
    by_name_.erase(it);
  }
}

std::vector<ir::Block*> BlocksOf(ir::Operation* func) {
  std::vector<ir::Block*> blocks;
  func->Walk([&](ir::Operation* op) {
    for (unsigned r = 0; r < op->num_regions(); ++r)
      for (auto& b : op->region(r)->blocks()) blocks.push_back(b.get());
  });
  return blocks;
}

void SetResultStrides(ir::Operation* dispatch, unsigned r, const std::vector<int64_t>& strides) {
  std::vector<std::vector<int64_t>> per(dispatch->num_results());
  const std::vector<int64_t> flat = dispatch->ints_attr("result_strides");
  for (size_t at = 0, k = 0; at < flat.size() && k < per.size(); ++k) {
    const size_t declared = static_cast<size_t>(flat[at]);
    ++at;
    const size_t rank = std::min(declared, flat.size() - at);
    per[k].assign(flat.begin() + static_cast<std::ptrdiff_t>(at), flat.begin() + static_cast<std::ptrdiff_t>(at + rank));
    at += rank;
  }
  per.at(r) = strides;
  std::vector<int64_t> out;
  for (const auto& st : per) {
    out.push_back(static_cast<int64_t>(st.size()));
    out.insert(out.end(), st.begin(), st.end());
  }
  dispatch->set_attr("result_strides", ir::Attribute(out));
}

}  // namespace kiln::transforms
