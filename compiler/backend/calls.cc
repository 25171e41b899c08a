// Calls: func.call of another module's function (CALL_IMPORT) or of one of
// this module's (CALL), and the callee signatures they are checked against.
#include "compiler/backend/emitter.h"

#include <algorithm>

namespace kiln::backend {

namespace {

// Types listed in an import declaration's `arg_types` / `result_types`.
std::vector<ir::Type> DeclTypes(ir::Operation* decl, const char* name) {
  std::vector<ir::Type> out;
  if (const ir::AttrList* l = decl->list_attr(name))
    for (const ir::Attribute& a : *l)
      if (const ir::Type* t = std::get_if<ir::Type>(&a.value)) out.push_back(*t);
  return out;
}

}  // namespace

StatusOr<const ModuleEmitter::ModuleImport*> ModuleEmitter::ModuleImportFor(ir::Module& module,
                                                                           ir::Operation* call) {
  const ir::Attribute* a = call->attr("callee");
  const ir::SymbolRef* callee = a ? std::get_if<ir::SymbolRef>(&a->value) : nullptr;
  if (!callee) return InvalidArgumentError("emit: func.call without a callee (%s)", call->loc().c_str());
  for (const ModuleImport& m : module_imports_)
    if (m.decl->str_attr("sym_name") == callee->name) return &m;
  for (const ModuleImport& m : local_callees_)
    if (m.decl->str_attr("sym_name") == callee->name) return &m;
  ir::Operation* decl = module.LookupFunction(callee->name);
  if (!decl)
    return InvalidArgumentError(
        "emit: func.call @%s (%s): no function of that name; declare another module's function with "
        "func.func {import = true, sym_name = \"module.function\", arg_types = [...], result_types = [...]}",
        callee->name.c_str(), call->loc().c_str());
  if (!decl->bool_attr("import")) {
    // A function of this module: its signature is its entry block's
    // arguments and its (first) func.return's operands.
    ModuleImport m;
    m.decl = decl;
    m.local = true;
    std::vector<ir::Operation*> defs = module.functions();
    m.ordinal = static_cast<uint16_t>(std::find(defs.begin(), defs.end(), decl) - defs.begin());
    ir::Block* entry = decl->region(0)->block(0);
    for (ir::Value* a : entry->arguments()) m.arg_types.push_back(a->type());
    for (auto& b : decl->region(0)->blocks())
      if (b->terminator() && b->terminator()->is(OpCode::kFuncReturn)) {
        for (ir::Value* r : b->terminator()->operands()) m.result_types.push_back(r->type());
        break;
      }
    std::vector<std::string> own = decl->strs_attr("arg_ownership");
    for (size_t i = 0; i < m.arg_types.size(); ++i) m.consume.push_back(i < own.size() && own[i] == "consume");
    for (const ir::Type& t : m.arg_types)
      if (!t.is_tensor())
        return UnimplementedError("emit: func.call @%s (%s): the callee takes a non-tensor argument",
                                  callee->name.c_str(), call->loc().c_str());
    if (call->num_operands() != m.arg_types.size() || call->num_results() != m.result_types.size())
      return InvalidArgumentError("emit: func.call @%s (%s): %u operands and %u results, the function has %zu and %zu",
                                  callee->name.c_str(), call->loc().c_str(), call->num_operands(),
                                  call->num_results(), m.arg_types.size(), m.result_types.size());
    local_callees_.push_back(std::move(m));
    return &local_callees_.back();
  }
  ModuleImport m;
  m.decl = decl;
  m.arg_types = DeclTypes(decl, "arg_types");
  m.result_types = DeclTypes(decl, "result_types");
  std::vector<std::string> own = decl->strs_attr("arg_ownership");
  for (size_t i = 0; i < m.arg_types.size(); ++i) m.consume.push_back(i < own.size() && own[i] == "consume");
  if (call->num_operands() != m.arg_types.size() || call->num_results() != m.result_types.size())
    return InvalidArgumentError("emit: func.call @%s (%s): signature mismatch: the declaration takes %zu arguments "
                                "and returns %zu results, the call passes %u and expects %u",
                                callee->name.c_str(), call->loc().c_str(), m.arg_types.size(),
                                m.result_types.size(), call->num_operands(), call->num_results());
  for (const ir::Type& t : m.arg_types)
    if (!t.is_tensor()) return InvalidArgumentError("emit: import @%s: argument type %s is not a tensor", callee->name.c_str(), t.ToString().c_str());
  for (const ir::Type& t : m.result_types)
    if (!t.is_tensor()) return InvalidArgumentError("emit: import @%s: result type %s is not a tensor", callee->name.c_str(), t.ToString().c_str());
  if (kHalImportCount + module_imports_.size() >= 0xffff)
    return ResourceExhaustedError("emit: too many imports");
  m.ordinal = static_cast<uint16_t>(kHalImportCount + module_imports_.size());
  module_imports_.push_back(std::move(m));
  return &module_imports_.back();
}

// True when `operand` of `call` (in the function's entry block) is this
// function's own consumed argument, imported and passed on whole and
// unchanged: the stream.tensor.import (consume = true) of an argument typed
// exactly as the callee's parameter `type`, with no in-place write of it
// (copy-on-write and elision have proven no later read: the call moves it).
// Sets *arg_reg to the argument's view register.
bool FunctionEmitter::MovableArgument(ir::Operation* call, ir::Value* operand, const ir::Type& type,
                                      uint16_t* arg_reg) {
  ir::Operation* def = operand->defining_op();
  if (call->parent_op() != func_ || !def || !def->is(OpCode::kStreamTensorImport) || !def->bool_attr("consume"))
    return false;
  ir::Value* arg = def->operand(0);
  if (!arg->is_block_argument() || !(arg->type() == type)) return false;
  auto it = storage_.find(operand);
  if (it == storage_.end() || it->second.kind != Storage::kArgument || it->second.offset != 0) return false;
  for (const ir::Use& u : operand->uses()) {
    if (u.user == call) continue;
    for (ir::Value* r : u.user->results())
      if (AllocationSource(u.user, r->index()) == operand) return false;  // written in place (taken storage)
  }
  *arg_reg = static_cast<uint16_t>(arg->index());
  return true;
}

// func.call of another module's function (CALL_IMPORT of "module.function")
// or of a function of this module (CALL of its ordinal; same convention):
//   1. submit the work recorded so far without a host wait (the callee's
//      submissions are queue-ordered after it);
//   2. one hal.buffer_view.create per operand, typed as the callee's argument
//      (the callee checks dtype/shape at the call; views share the storage:
//      no copy);
//   3. CALL_IMPORT / CALL; the callee runs in the next frame and has
//      submitted its own work when it returns;
//   4. each result view's (buffer, offset) becomes the result's storage (an
//      external allocation the caller now holds), and the views are dropped.
// A `consume` parameter receives the caller's own consumed argument view
// when the operand is that argument, whole (MovableArgument: ownership
// passes on, no copy); otherwise a view the caller made for the call, which
// the callee owns only when nothing else holds the buffer (vm/context.h),
// else it works on a copy.
Status FunctionEmitter::RecordCall(ir::Operation* op, uint16_t cmd) {
  KILN_ASSIGN_OR_RETURN(const ModuleEmitter::ModuleImport* imp_ptr, m_.ModuleImportFor(module_, op));
  const ModuleEmitter::ModuleImport imp = *imp_ptr;  // module_imports_ may grow later
  const std::string callee = imp.decl->str_attr("sym_name");
  for (unsigned i = 0; i < op->num_operands(); ++i) {
    auto it = storage_.find(op->operand(i));
    if (it == storage_.end())
      return InternalError("emit: operand %u of the call of @%s (%s) has no storage", i, callee.c_str(),
                           op->loc().c_str());
    if (it->second.length != imp.arg_types[i].byte_size())
      return InvalidArgumentError("emit: func.call @%s (%s): operand %u has %lld bytes, the declared argument %s has %lld",
                                  callee.c_str(), op->loc().c_str(), i, static_cast<long long>(it->second.length),
                                  imp.arg_types[i].ToString().c_str(),
                                  static_cast<long long>(imp.arg_types[i].byte_size()));
  }
  for (unsigned k = 0; k < op->num_results(); ++k)
    if (SizeOf(op->result(k)) != imp.result_types[k].byte_size())
      return InvalidArgumentError("emit: func.call @%s (%s): result %u is sized %lld bytes, the declared result %s has %lld",
                                  callee.c_str(), op->loc().c_str(), k, static_cast<long long>(SizeOf(op->result(k))),
                                  imp.result_types[k].ToString().c_str(),
                                  static_cast<long long>(imp.result_types[k].byte_size()));
  // Submit what the callee may read. Nested in an scf region, always (a
  // branch or a later trip may have recorded work the compile-time order
  // does not show); in the entry block, only when something was recorded.
  if (op->parent_op() != func_ || unsubmitted_work_) SubmitAndRestart(cmd);
  std::vector<Reg> args, results;
  for (unsigned i = 0; i < op->num_operands(); ++i) {
    const Storage& s = storage_.at(op->operand(i));
    const ir::Type& t = imp.arg_types[i];
    if (uint16_t arg_reg; imp.consume[i] && MovableArgument(op, op->operand(i), t, &arg_reg)) {
      // Move: hand the caller's own consumed argument view to the callee
      // (CALL_IMPORT nulls the register) after dropping the extra buffer
      // reference, so the callee owns the storage when the caller did.
      enc.ConstRefZero(s.buffer);
      args.push_back(Reg::Ref(arg_reg));
      continue;
    }
    args.push_back(Reg::Ref(CreateView(s, t)));
  }
  for (unsigned k = 0; k < op->num_results(); ++k) results.push_back(Reg::Ref(NewRef()));
  debug_offsets.push_back(enc.offset());
  debug_locations.push_back("call @" + callee + " @ " + op->loc());
  if (imp.local)
    enc.Call(imp.ordinal, args, results);  // this module's function
  else
    enc.CallImport(imp.ordinal, args, results);
  for (const Reg& a : args) enc.ConstRefZero(a.index);  // drop the operand views
  for (unsigned k = 0; k < op->num_results(); ++k) {
    const Storage& s = storage_.at(op->result(k));
    enc.CallImport(HalImport::kBufferViewBuffer, {results[k]}, {Reg::Ref(s.buffer)});
    enc.CallImport(HalImport::kBufferViewOffset, {results[k]}, {Reg::I32(s.offset_reg)});
    enc.ConstRefZero(results[k].index);
  }
  return OkStatus();
}

}  // namespace kiln::backend
