// Pass: --convert-to-stream
//
// Lowers the dispatch level to the stream level (compiler/ir/ops.h "Stream
// level"): tensors become resources with value semantics and explicit byte
// sizes, so later passes (copy-on-write, copy elision, transfer elision,
// lifetime and memory planning) reason about storage rather than math.
//   - function arguments: stream.tensor.import (consume per arg_ownership);
//   - tensor.constant: stream.async.constant;
//   - flow.dispatch: its body is outlined into a module-level flow.executable
//     (sym_name = the dispatch name) and the call site becomes
//     stream.async.dispatch {entry = @name, tied_operands = [-1, ...]};
//   - tensor.reshape: disappears (same bytes; the resource is reused);
//   - func.return operands: stream.tensor.export back to the ABI tensor type;
//   - func.call (another module's function, declared by a func.func
//     {import = true}): operands become the resources they name, results
//     become !stream.resource<external> with `sizes = [bytes...]`; the
//     callee's tensor types stay on the declaration.
//
// Preconditions: dispatch level (fuse-dispatch-regions ran), static shapes,
// single-block function bodies.
//
// Before:
//   %0 = "tensor.constant"() {value = ...} : () -> tensor<4xf32>
//   %1 = "flow.dispatch"(%arg0, %0) ({...}) {name = "dispatch_0_add"} ...
//   "func.return"(%1)
// After:
//   "flow.executable"() ({ ^bb0(%a, %b): "flow.dispatch"(%a, %b) ({...}) })
//       {sym_name = "dispatch_0_add"}
//   func:
//   %0 = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64}
//   %1 = "stream.async.constant"() {size = 16 : i64, value = ...}
//   %2 = "stream.async.dispatch"(%0, %1) {entry = @dispatch_0_add, sizes = [16],
//                                         tied_operands = [-1]}
//   %3 = "stream.tensor.export"(%2) {size = 16 : i64} -> tensor<4xf32>
//   "func.return"(%3)
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

ir::Type TransientResource() { return ir::Type::Resource(ir::Lifetime::kTransient); }

// An op of the stream dialect proper: stream level, but not util.global /
// load / store. Those are stream level too, yet a body that only touches
// globals is not taken to be written at the stream level (it is converted,
// and the conversion reports the global access it cannot lower).
bool IsStreamDialectOp(const ir::Operation* op) {
  switch (op->code()) {
    case ir::OpCode::kUtilGlobal:
    case ir::OpCode::kUtilGlobalLoad:
    case ir::OpCode::kUtilGlobalStore:
      return false;
    default:
      return ir::Traits(op).level == ir::OpLevel::kStream;
  }
}

class ConvertToStreamPass : public ir::Pass {
 public:
  const char* flag() const override { return "convert-to-stream"; }
  const char* description() const override {
    return "Lower tensors and flow.dispatch to stream resources and stream.async.dispatch";
  }

  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    std::set<std::string> symbols;
    for (auto& op : module.body()->ops())
      if (op->has_attr("sym_name")) symbols.insert(op->str_attr("sym_name"));
    for (ir::Operation* func : module.functions()) {
      if (func->num_regions() == 0 || func->region(0)->empty()) continue;
      bool already_stream = false;
      for (auto& op : func->region(0)->block(0)->ops()) already_stream |= IsStreamDialectOp(op.get());
      if (already_stream) {
        // Must not act: written at the stream level already (e.g. a .kir
        // test, possibly a body of several blocks with cf branches).
        ctx.Remark(func, "not converted: function is already at the stream level");
        continue;
      }
      if (func->region(0)->num_blocks() != 1)
        return UnimplementedError("convert-to-stream: function @%s has more than one block",
                                  func->str_attr("sym_name").c_str());
      KILN_RETURN_IF_ERROR(ConvertFunction(module, func, symbols));
    }
    return OkStatus();
  }

 private:
  Status ConvertFunction(ir::Module& module, ir::Operation* func, std::set<std::string>& symbols) {
    ir::Block* body = func->region(0)->block(0);
    std::vector<std::string> ownership = func->strs_attr("arg_ownership");
    // The ABI result types, before their producers become resources.
    std::vector<ir::Type> result_types;
    if (ir::Operation* ret = body->terminator())
      for (ir::Value* v : ret->operands()) result_types.push_back(v->type());
    // Element types read by tensor.extract, before their operands become
    // (untyped) resources.
    std::map<ir::Operation*, ir::Type> extract_types;
    func->Walk([&](ir::Operation* op) {
      if (op->is(ir::OpCode::kTensorExtract)) extract_types[op] = op->operand(0)->type();
    });
    // Imports, at the top of the body.
    ir::Operation* first = body->empty() ? nullptr : body->ops().front().get();
    for (unsigned i = 0; i < body->num_arguments(); ++i) {
      ir::Value* arg = body->argument(i);
      if (!arg->type().is_tensor()) continue;
      bool consume = i < ownership.size() && ownership[i] == "consume";
      ir::Builder b = first ? ir::Builder::Before(first) : ir::Builder::AtEnd(body);
      ir::Operation* import = b.Create("stream.tensor.import", {arg}, {ir::Type::Resource(ir::Lifetime::kExternal)},
                                       {{"size", ir::Attribute(arg->type().byte_size())},
                                        {"consume", ir::Attribute(consume)}});
      std::vector<ir::Use> uses = arg->uses();
      for (const ir::Use& u : uses)
        if (u.user != import) u.user->SetOperand(u.operand_index, import->result(0));
    }
    KILN_RETURN_IF_ERROR(ConvertBlock(module, body, symbols, result_types, extract_types));
    return OkStatus();
  }

  Status ConvertBlock(ir::Module& module, ir::Block* block, std::set<std::string>& symbols,
                      const std::vector<ir::Type>& result_types, std::map<ir::Operation*, ir::Type>& extract_types) {
    for (auto it = block->ops().begin(); it != block->ops().end();) {
      ir::Operation* op = (it++)->get();
      const ir::OpInfo& traits = ir::Traits(op);
      if (op->is(ir::OpCode::kTensorConstant)) {
        const ir::DenseElements* dense = op->dense_attr("value");
        ir::Operation* c = ir::Builder::Before(op).Create(
            "stream.async.constant", {}, {ir::Type::Resource(ir::Lifetime::kConstant)},
            {{"value", ir::Attribute(*dense)}, {"size", ir::Attribute(op->result(0)->type().byte_size())}});
        c->set_loc(op->loc());
        op->result(0)->ReplaceAllUsesWith(c->result(0));
        op->Erase();
      } else if (op->is(ir::OpCode::kTensorReshape)) {
        op->result(0)->ReplaceAllUsesWith(op->operand(0));
        op->Erase();
      } else if (op->is(ir::OpCode::kFlowDispatch)) {
        KILN_RETURN_IF_ERROR(ConvertDispatch(module, op, symbols));
      } else if (op->is(ir::OpCode::kTensorExtract)) {
        // One element read back to the host: stream.async.load.
        const ir::Type& t = extract_types[op];
        ir::Operation* load = ir::Builder::Before(op).Create(
            "stream.async.load", {op->operand(0)}, {op->result(0)->type()},
            {{"offset", ir::Attribute(int64_t{0})}, {"dtype", ir::Attribute(std::string(DTypeName(t.dtype)))}});
        load->set_loc(op->loc());
        op->result(0)->ReplaceAllUsesWith(load->result(0));
        op->Erase();
      } else if (traits.level == ir::OpLevel::kControl && traits.has(ir::kHasRegions)) {
        // Structured control flow: convert the regions, then retype tensor
        // results and region arguments as resources (value semantics carry over).
        // Results are `!stream.resource<*>`: branches may yield constants,
        // imports or transients alike.
        const ir::Type any = ir::Type::Resource(ir::Lifetime::kUnknown);
        for (unsigned r = 0; r < op->num_regions(); ++r)
          for (auto& b : op->region(r)->blocks()) {
            for (ir::Value* a : b->arguments())
              if (a->type().is_tensor()) a->set_type(any);
            KILN_RETURN_IF_ERROR(ConvertBlock(module, b.get(), symbols, result_types, extract_types));
          }
        for (ir::Value* r : op->results())
          if (r->type().is_tensor()) r->set_type(any);
      } else if (op->is(ir::OpCode::kFuncReturn)) {
        ir::Builder b = ir::Builder::Before(op);
        for (unsigned i = 0; i < op->num_operands(); ++i) {
          const ir::Type& tensor_type = result_types[i];
          ir::Operation* e = b.Create("stream.tensor.export", {op->operand(i)}, {tensor_type},
                                      {{"size", ir::Attribute(tensor_type.byte_size())}});
          op->SetOperand(i, e->result(0));
        }
      } else if (op->is(ir::OpCode::kFuncCall)) {
        // A call of another module's function: operands are already
        // resources (views pass to the callee); each result is a fresh
        // external resource the caller holds, sized from its tensor type.
        std::vector<int64_t> sizes;
        for (ir::Value* r : op->results()) {
          if (!r->type().is_tensor())
            return UnimplementedError("convert-to-stream: func.call (%s) with a non-tensor result", op->loc().c_str());
          sizes.push_back(r->type().byte_size());
          r->set_type(ir::Type::Resource(ir::Lifetime::kExternal));
        }
        op->set_attr("sizes", ir::Attribute(sizes));
      } else if (op->is(ir::OpCode::kStreamTensorImport) ||
                 (traits.level == ir::OpLevel::kControl && !traits.has(ir::kBranch))) {
        continue;  // imports were inserted above; host arithmetic and region terminators stay
      } else {
        return UnimplementedError("convert-to-stream: unexpected op '%s' (%s) at the dispatch level",
                                  op->name().c_str(), op->loc().c_str());
      }
    }
    return OkStatus();
  }

  Status ConvertDispatch(ir::Module& module, ir::Operation* dispatch, std::set<std::string>& symbols) {
    std::string name = dispatch->str_attr("name", "dispatch");
    std::string sym = name;
    for (int n = 1; symbols.count(sym); ++n) sym = name + "_" + std::to_string(n);
    symbols.insert(sym);

    std::vector<int64_t> tied, sizes;
    std::vector<ir::Type> result_types;
    for (ir::Value* r : dispatch->results()) {
      tied.push_back(-1);
      sizes.push_back(r->type().byte_size());
      result_types.push_back(TransientResource());
    }
    ir::Operation* call = ir::Builder::Before(dispatch).Create(
        "stream.async.dispatch", dispatch->operands(), result_types,
        {{"entry", ir::Attribute(ir::SymbolRef{sym})}, {"tied_operands", ir::Attribute(tied)},
         {"sizes", ir::Attribute(sizes)}});
    call->set_loc(dispatch->loc());
    for (unsigned i = 0; i < dispatch->num_results(); ++i)
      dispatch->result(i)->ReplaceAllUsesWith(call->result(i));

    // Outline: flow.executable { ^bb0(tensor args): flow.dispatch(args) }.
    ir::Operation* func = call->parent_op();
    while (func && !func->is(ir::OpCode::kFuncFunc)) func = func->parent_op();  // out of scf regions
    if (!func) return InternalError("convert-to-stream: dispatch outside a function");
    ir::Operation* exe = ir::Builder::Before(func).Create("flow.executable", {}, {},
                                                          {{"sym_name", ir::Attribute(sym)}}, 1);
    ir::Block* entry = exe->region(0)->AddBlock();
    std::vector<ir::Value*> args;
    for (ir::Value* v : dispatch->region(0)->block(0)->arguments()) args.push_back(entry->AddArgument(v->type()));
    std::unique_ptr<ir::Operation> owned = dispatch->parent_block()->Remove(dispatch);
    owned->SetOperands(args);
    entry->Append(std::move(owned));
    (void)module;
    return OkStatus();
  }
};

}  // namespace

std::unique_ptr<ir::Pass> CreateConvertToStreamPass() { return std::make_unique<ConvertToStreamPass>(); }

}  // namespace kiln::transforms
