// Dispatches: shared executables (shader_dedupe.h), dispatch recording and
// writing out the barriers --place-barriers placed between commands.
#include "compiler/backend/emitter.h"

#include "compiler/codegen/dispatch_macs.h"

namespace kiln::backend {

StatusOr<uint16_t> ModuleEmitter::ExecutableFor(ir::Operation* dispatch, const std::vector<bool>& aliased_bindings,
                                                const std::vector<int64_t>& element_offsets,
                                                const std::vector<int64_t>& result_element_offsets,
                                                const std::vector<std::vector<int64_t>>& result_strides,
                                                const std::vector<bool>& texel_eligible,
                                                codegen::CompiledDispatch* out, uint32_t* entry) {
  codegen::CodegenOptions options = options_.codegen;
  options.texel_eligible = texel_eligible;
  options.aliased_bindings = aliased_bindings;
  options.operand_element_offsets = element_offsets;
  options.result_element_offsets = result_element_offsets;
  options.result_strides = result_strides;
  KILN_ASSIGN_OR_RETURN(codegen::CompiledDispatch compiled, codegen::CompileDispatch(dispatch, options));
  if (options_.glsl_dump) *options_.glsl_dump << "// ---- " << compiled.debug_name << "\n" << compiled.glsl << "\n";
  report_->dispatches++;
  std::string locs;
  if (const ir::Attribute* a = dispatch->attr("locs")) {
    if (auto* list = std::get_if<std::shared_ptr<ir::AttrList>>(&a->value))
      for (const ir::Attribute& l : **list)
        if (auto* s = std::get_if<std::string>(&l.value)) locs += (locs.empty() ? "" : ", ") + *s;
  }
  // A dispatch with an f16-arithmetic variant shares its executable with
  // dispatches whose variants also differ only in constants (shader_dedupe.h
  // specializes both modules).
  // Exact and split-fma dispatches never share an executable: the runtime
  // splices the exact emulation per executable (EntryPoint.exact_fma).
  std::vector<uint32_t> key = compiled.push_constants;
  key.push_back(compiled.exact_fma ? 1u : 0u);
  ShaderDeduper::Placement p = shaders_.Add(compiled.spirv, key, compiled.spirv_f16);
  if (p.shader == executables_.size()) executables_.push_back({compiled, {}, {}, {}});
  ExecutableEntry& e = executables_[p.shader];
  if (p.entry == e.debug_names.size()) {
    e.debug_names.push_back(compiled.debug_name);
    e.locs.push_back(locs);
    e.macs.push_back(codegen::DispatchMacs(dispatch));
  }
  *out = std::move(compiled);
  *entry = p.entry;
  return static_cast<uint16_t>(p.shader);
}

void FunctionEmitter::WriteBarrier(ir::Operation* barrier, uint16_t cmd) {
  std::vector<int64_t> ranges = barrier->ints_attr("ranges");
  std::vector<Reg> bargs = {Reg::Ref(cmd)};
  for (size_t i = 0; i + 2 < ranges.size(); i += 3) {
    if (ranges[i] < 0 || static_cast<size_t>(ranges[i]) >= slot_storage_.size()) {
      if (barrier_error_.empty()) barrier_error_ = "a stream.cmd.barrier names storage " + std::to_string(ranges[i]) +
                                                   ", which the plan does not have (" + barrier->loc() + ")";
      continue;
    }
    // A storage whose base is known only at run time (an argument view, a
    // call result, output storage): the range's offset is relative to it.
    Storage at = slot_storage_[static_cast<size_t>(ranges[i])];
    bargs.push_back(Reg::Ref(at.buffer));
    at.offset = at.dynamic_offset ? at.offset + ranges[i + 1] : ranges[i + 1];
    bargs.push_back(Reg::I32(OffsetReg(at)));
    bargs.push_back(Reg::I32(ConstReg(ranges[i + 2])));  // 0: to the end
  }
  enc.CallImport(barrier->bool_attr("host") ? HalImport::kCommandBufferHostBarrier : HalImport::kCommandBufferBarrier,
                 bargs, {});
}

void FunctionEmitter::WriteBarriers(uint16_t cmd) {
  unsubmitted_work_ = true;  // the caller records a command next
  while (!active_barriers_.empty() && !active_barriers_.front()->bool_attr("host") &&
         active_barriers_.front()->int_attr("command", 0) == command_index_) {
    WriteBarrier(active_barriers_.front(), cmd);
    active_barriers_.erase(active_barriers_.begin());
  }
  ++command_index_;
}

void FunctionEmitter::WriteHostBarriers(uint16_t cmd) {
  for (size_t i = 0; i < active_barriers_.size();) {
    if (!active_barriers_[i]->bool_attr("host")) {
      ++i;
      continue;
    }
    WriteBarrier(active_barriers_[i], cmd);
    active_barriers_.erase(active_barriers_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

Status FunctionEmitter::EmitDispatch(ir::Operation* op, uint16_t cmd) {
  const ir::Attribute* entry_attr = op->attr("entry");
  const ir::SymbolRef* entry = entry_attr ? std::get_if<ir::SymbolRef>(&entry_attr->value) : nullptr;
  ir::Operation* body = nullptr;
  if (executables_.empty())  // indexed once: a lookup per dispatch, not a module walk
    for (auto& top : module_.body()->ops())
      if (top->is(OpCode::kFlowExecutable)) executables_.emplace(top->str_attr("sym_name"), top.get());
  auto found = entry ? executables_.find(entry->name) : executables_.end();
  if (found != executables_.end() && !found->second->region(0)->block(0)->empty())
    body = found->second->region(0)->block(0)->ops().front().get();
  if (!body) return InvalidArgumentError("emit: dispatch %s names no flow.executable", op->loc().c_str());

  // Bindings naming overlapping bytes with a write among them (an in-place
  // operand and its result, another operand reading the same value) are
  // declared without `restrict` (codegen::CodegenOptions::aliased_bindings).
  // Results placed into a subrange of their tied operand by
  // --emplace-allocations (`result_offsets` >= 0): that operand (the
  // placement target) is not bound, and the result is bound from its
  // offset aligned down to 256, the tensor starting
  // `result_element_offsets[r]` elements into the binding.
  const unsigned bound_operands = body->num_operands();
  std::vector<int64_t> result_offsets = op->ints_attr("result_offsets");
  std::vector<int64_t> result_lengths = op->ints_attr("result_lengths");
  std::vector<int64_t> result_element_offsets = op->ints_attr("result_element_offsets");
  // A strided placement (`result_strides`, --fuse-pad through
  // --emplace-allocations): per result, its rank and then that many element
  // strides in the target (rank 0: row-major). result_lengths[r] is then
  // the hull of the strided subrange, which is what the binding covers.
  std::vector<std::vector<int64_t>> result_strides(op->num_results());
  {
    std::vector<int64_t> flat = op->ints_attr("result_strides");
    size_t at = 0;
    for (unsigned r = 0; r < op->num_results() && at < flat.size(); ++r) {
      const int64_t rank = flat[at++];
      if (rank < 0 || at + static_cast<size_t>(rank) > flat.size())
        return InvalidArgumentError("emit: dispatch %s has malformed result_strides", op->loc().c_str());
      result_strides[r].assign(flat.begin() + static_cast<std::ptrdiff_t>(at),
                               flat.begin() + static_cast<std::ptrdiff_t>(at + static_cast<size_t>(rank)));
      at += static_cast<size_t>(rank);
    }
    if (at != flat.size())
      return InvalidArgumentError("emit: dispatch %s has malformed result_strides", op->loc().c_str());
  }
  std::vector<Storage> result_bindings;
  std::vector<Range> result_writes;  // each result's binding range (a placed one: from its aligned offset)
  for (ir::Value* v : op->results()) {
    Storage s = storage_.at(v);
    const unsigned r = v->index();
    Range written = RangeOf(s);
    if (r < result_offsets.size() && result_offsets[r] >= 0) {
      if (r >= result_lengths.size() || r >= result_element_offsets.size())
        return InvalidArgumentError("emit: dispatch %s places result %u without its length and element offset",
                                    op->loc().c_str(), r);
      const int64_t lead = result_offsets[r] % kBindingAlignment;
      if (!s.dynamic_offset && s.offset % kBindingAlignment != 0)
        return InternalError("emit: result %u of dispatch %s is placed in storage at byte %lld, not a multiple of %lld",
                             r, op->loc().c_str(), static_cast<long long>(s.offset),
                             static_cast<long long>(kBindingAlignment));
      s.offset += result_offsets[r] - lead;
      s.length = lead + result_lengths[r];
      // The whole binding, lead bytes included: sync validation (and a
      // driver) takes every byte of a bound write range as written.
      written = RangeOf(s);
    }
    result_bindings.push_back(s);
    result_writes.push_back(written);
  }
  if (op->num_operands() != bound_operands &&
      (op->num_operands() < bound_operands || result_offsets.size() != op->num_results()))
    return InvalidArgumentError("emit: dispatch %s has %u operands for an executable binding %u", op->loc().c_str(),
                                op->num_operands(), bound_operands);
  std::vector<Range> ranges;
  for (unsigned i = 0; i < bound_operands; ++i) ranges.push_back(RangeOf(storage_.at(op->operand(i))));
  for (const Range& w : result_writes) ranges.push_back(w);
  std::vector<bool> aliased;
  for (size_t i = 0; i < ranges.size(); ++i)
    for (size_t j = 0; j < ranges.size(); ++j)
      if (i != j && (i >= bound_operands || j >= bound_operands) && ranges[i].Overlaps(ranges[j])) {
        aliased.resize(ranges.size(), false);
        aliased[i] = true;
      }
  // Operands bound at a coarse subrange with the tensor indexed inside it
  // (--slice-views' `element_offsets`): the binding must start on the
  // 256-byte alignment the pass assumed.
  std::vector<int64_t> element_offsets = op->ints_attr("element_offsets");
  if (!element_offsets.empty()) {
    if (element_offsets.size() != bound_operands)
      return InvalidArgumentError("emit: dispatch %s has %zu element_offsets for %u operands", op->loc().c_str(),
                                  element_offsets.size(), bound_operands);
    for (unsigned i = 0; i < bound_operands; ++i) {
      const Storage& s = storage_.at(op->operand(i));
      if (element_offsets[i] != 0 && !s.dynamic_offset && s.offset % kBindingAlignment != 0)
        return InternalError("emit: operand %u of dispatch %s (element offset %lld) is bound at byte %lld, "
                             "not a multiple of %lld", i, op->loc().c_str(),
                             static_cast<long long>(element_offsets[i]), static_cast<long long>(s.offset),
                             static_cast<long long>(kBindingAlignment));
    }
  }
  // Operands the shader may read as vec4 texels (CodegenOptions::
  // texel_eligible): weights and transients at a static, 256-byte-aligned
  // offset, bound for exactly their f32 bytes in whole texels, not aliased.
  std::vector<bool> texel(bound_operands, false);
  for (unsigned i = 0; i < bound_operands; ++i) {
    const Storage& s = storage_.at(op->operand(i));
    const ir::Type& t = body->operand(i)->type();  // the tensor the executable reads
    texel[i] = m_.options().codegen.texel_buffers &&
               (s.kind == Storage::kConstant || s.kind == Storage::kTransient) && !s.dynamic_offset &&
               s.offset % kBindingAlignment == 0 && t.is_tensor() && t.dtype == DType::kF32 &&
               s.length == t.num_elements() * 4 && s.length > 0 && s.length % 16 == 0 &&
               s.length / 16 <= codegen::kMaxPortableTexels &&
               (i >= aliased.size() || !aliased[i]) && (i >= element_offsets.size() || element_offsets[i] == 0);
  }
  codegen::CompiledDispatch compiled;
  uint32_t entry_point = 0;
  KILN_ASSIGN_OR_RETURN(uint16_t exe, m_.ExecutableFor(body, aliased, element_offsets, result_element_offsets, result_strides,
                                                       texel, &compiled, &entry_point));
  std::vector<Reg> args = {Reg::Ref(cmd), Reg::Ref(0), Reg::I32(ConstReg(static_cast<int32_t>(entry_point))),
                           Reg::I32(ConstReg(compiled.workgroup_count[0])),
                           Reg::I32(ConstReg(compiled.workgroup_count[1])),
                           Reg::I32(ConstReg(compiled.workgroup_count[2]))};
  for (unsigned i = 0; i < bound_operands; ++i) {
    const Storage& s = storage_.at(op->operand(i));
    BindingArgs(s, &args);
  }
  for (size_t r = 0; r < result_bindings.size(); ++r) BindingArgs(result_bindings[r], &args);
  WriteBarriers(cmd);

  auto it = executable_regs_.find(exe);
  uint16_t exe_reg;
  if (it == executable_regs_.end()) {
    exe_reg = NewRef();
    enc.CallImport(HalImport::kExecutableLookup, {Reg::I32(ConstReg(exe))}, {Reg::Ref(exe_reg)});
    executable_regs_[exe] = exe_reg;
  } else {
    exe_reg = it->second;
  }
  args[1] = Reg::Ref(exe_reg);
  if (!compiled.push_constants.empty()) {
    std::vector<Reg> pargs = {Reg::Ref(cmd)};
    for (uint32_t w : compiled.push_constants) pargs.push_back(Reg::I32(ConstReg(static_cast<int32_t>(w))));
    enc.CallImport(HalImport::kCommandBufferPushConstants, pargs, {});
  }
  debug_offsets.push_back(enc.offset());
  debug_locations.push_back(compiled.debug_name + " @ " + op->loc());
  enc.CallImport(HalImport::kCommandBufferDispatch, args, {});
  return OkStatus();
}

}  // namespace kiln::backend
