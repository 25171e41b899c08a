// --mark-consumed-arguments=NAME: the ABI `consume` the caller asks for
// (kiln-compile --consume=NAME, the compiler library's flag of the same
// name). Every exported function argument named NAME (the func's
// `arg_names`, i.e. an ONNX graph input) becomes `consume` in the
// function's `arg_ownership`: the caller hands its buffer over, and the
// module may update it in place (stream.tensor.import {consume = true}
// after convert-to-stream). Arguments without an entry stay `borrow`.
//
// Runs first in the pipeline (transforms/pipeline.cc), once per name, so
// copy-on-write and the elision passes see the ownership.
// Errors: kInvalidArgument when no function argument has the name.
#include <string>
#include <vector>

#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

Status MarkConsumed(ir::Module& module, const std::string& name) {
  bool found = false;
  for (ir::Operation* func : module.functions()) {
    std::vector<std::string> arg_names = func->strs_attr("arg_names");
    std::vector<std::string> ownership = func->strs_attr("arg_ownership");
    ownership.resize(arg_names.size(), "borrow");
    for (size_t i = 0; i < arg_names.size(); ++i)
      if (arg_names[i] == name) {
        ownership[i] = "consume";
        found = true;
      }
    ir::AttrList list;
    for (const std::string& o : ownership) list.push_back(ir::Attribute(o));
    func->set_attr("arg_ownership", ir::MakeListAttr(list));
  }
  if (!found)
    return InvalidArgumentError("no function argument is named '%s' (kiln-compile --consume)", name.c_str());
  return OkStatus();
}

class MarkConsumedArgumentsPass : public ir::Pass {
 public:
  explicit MarkConsumedArgumentsPass(std::string name) : name_(std::move(name)) {}
  const char* flag() const override { return "mark-consumed-arguments"; }
  const char* description() const override { return "Make the named function arguments ABI consume"; }
  Status Run(ir::Module& module, ir::PassContext&) override { return MarkConsumed(module, name_); }

 private:
  std::string name_;
};

}  // namespace

std::unique_ptr<ir::Pass> CreateMarkConsumedArgumentsPass(const std::string& name) {
  return std::make_unique<MarkConsumedArgumentsPass>(name);
}

}  // namespace kiln::transforms
