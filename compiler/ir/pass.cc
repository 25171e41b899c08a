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
std::map<std::string, PassWithOptionFactory>& OptionRegistry() {
  static std::map<std::string, PassWithOptionFactory> registry;
  return registry;
}
}  // namespace

void RegisterPass(const std::string& flag, PassFactory factory) {
  Registry()[flag] = std::move(factory);
}

void RegisterPassWithOption(const std::string& flag, PassWithOptionFactory factory) {
  OptionRegistry()[flag] = std::move(factory);
}

std::unique_ptr<Pass> CreatePass(const std::string& spec) {
  size_t eq = spec.find('=');
  if (eq == std::string::npos) {
    auto it = Registry().find(spec);
    return it == Registry().end() ? nullptr : it->second();
  }
  auto it = OptionRegistry().find(spec.substr(0, eq));
  return it == OptionRegistry().end() ? nullptr : it->second(spec.substr(eq + 1));
}

std::vector<std::string> RegisteredPassFlags() {
  std::vector<std::string> flags;
  for (auto& [flag, factory] : Registry()) flags.push_back(flag);
  for (auto& [flag, factory] : OptionRegistry()) flags.push_back(flag + "=OPTION");
  return flags;
}

}  // namespace kiln::ir
