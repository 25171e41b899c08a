// Pass registry and remarks (pass.h).
#include "compiler/ir/pass.h"

#include <map>

namespace kiln::ir {

void PassContext::Remark(const Operation* op, const std::string& text) {
  std::string where;
  if (op) where = op->loc().empty() ? op->name() : op->loc();
  remarks.push_back(where.empty() ? "remark: " + text : "remark: " + where + ": " + text);
}

namespace {
std::map<std::string, PassFactory>& Registry() {
  static std::map<std::string, PassFactory> registry;
  return registry;
}
}  // namespace

void RegisterPass(const std::string& flag, PassFactory factory) {
  Registry()[flag] = std::move(factory);
}

std::unique_ptr<Pass> CreatePass(const std::string& flag) {
  auto it = Registry().find(flag);
  return it == Registry().end() ? nullptr : it->second();
}

std::vector<std::string> RegisteredPassFlags() {
  std::vector<std::string> flags;
  for (auto& [flag, factory] : Registry()) flags.push_back(flag);
  return flags;
}

}  // namespace kiln::ir
