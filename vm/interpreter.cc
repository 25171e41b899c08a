// The bytecode interpreter: Context::Run.
//
// A switch on the opcode byte; operands are read in format order straight
// from the (verified) bytecode. Register indices are masked by the frame, so
// the loop needs no bounds checks of its own. The verifier guarantees that
// every pc lands on an instruction and that the function ends in a
// terminator, so `pc` never leaves the function.
#include <cstring>

#include "vm/context.h"

namespace kiln::vm {

namespace {

inline uint16_t U16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline uint32_t U32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
inline RegList ReadList(const uint8_t* code, uint32_t* pc) {
  RegList list;
  list.count = U16(code + *pc);
  list.data = code + *pc + 2;
  *pc += 2 + 2u * list.count;
  return list;
}

StatusCode FailCode(int32_t code) {
  if (code >= 1 && code <= static_cast<int32_t>(StatusCode::kOutOfRange)) {
    return static_cast<StatusCode>(code);
  }
  return StatusCode::kInternal;
}

}  // namespace

Status Context::Annotate(Status status, uint32_t m, uint32_t function, uint32_t offset,
                         const DecodedInstruction* inst) const {
#if !KILN_STATUS_MESSAGES
  return status;
#endif
  // "main@0x0012 CALL_IMPORT hal.command_buffer.dispatch [conv_3]", built
  // without a host allocation.
  const Module& mod = *modules_[m]->module;
  std::string_view fn = mod.function(function).name;
  std::string_view callee;
  if (inst && inst->opcode == Opcode::CALL_IMPORT) {
    callee = mod.import_names()[inst->operands[0].value];
  } else if (inst && inst->opcode == Opcode::CALL) {
    callee = mod.function(inst->operands[0].value).name;
  }
  std::string_view loc = mod.DebugLocation(function, offset);
  char ctx[768];
  std::snprintf(ctx, sizeof(ctx), "%.*s@0x%04x%s%s%s%.*s%s%.*s%s", static_cast<int>(fn.size()),
                fn.data(), offset, inst ? " " : "", inst ? inst->info->name : "",
                callee.empty() ? "" : " ", static_cast<int>(callee.size()), callee.data(),
                loc.empty() ? "" : " [", static_cast<int>(loc.size()), loc.data(),
                loc.empty() ? "" : "]");
  return status.Annotate(ctx);
}

Status Context::StepBudgetExhausted(uint32_t m, uint32_t function, uint32_t offset) {
  return Annotate(ResourceExhaustedError("step budget of %llu branches and calls exhausted (a loop "
                                         "that does not end?)",
                                         static_cast<unsigned long long>(limits_.step_budget)),
                  m, function, offset, nullptr);
}

Status Context::Run(uint32_t m, uint32_t function, uint32_t depth, RegList* ret) {
  ModuleState& state = *modules_[m];
  const FunctionInfo& info = state.module->function(function);
  const uint8_t* code = info.code.data;
  Frame* frame = frames_[depth].get();
  uint32_t pc = 0;
  for (;;) {
    const uint32_t inst_offset = pc;
    const Opcode op = static_cast<Opcode>(code[pc++]);
    switch (op) {
      case Opcode::NOP:
        break;
      case Opcode::CONST_I32: {
        uint16_t a = U16(code + pc);
        frame->I(a) = static_cast<int32_t>(U32(code + pc + 2));
        pc += 6;
        break;
      }
      case Opcode::CONST_REF_ZERO:
        frame->R(U16(code + pc)).reset();
        pc += 2;
        break;
      case Opcode::MOV_I32:
        frame->I(U16(code + pc)) = frame->I(U16(code + pc + 2));
        pc += 4;
        break;
      case Opcode::MOV_REF: {
        RefValue v = frame->R(U16(code + pc + 2));
        frame->R(U16(code + pc)) = std::move(v);
        pc += 4;
        break;
      }
      case Opcode::RODATA:
        frame->R(U16(code + pc)) = state.rodata[U16(code + pc + 2)];
        pc += 4;
        break;
      case Opcode::GLOBAL_LOAD_REF:
        frame->R(U16(code + pc)) = state.globals[U16(code + pc + 2)];
        pc += 4;
        break;
      case Opcode::GLOBAL_STORE_REF:
        state.globals[U16(code + pc + 2)] = frame->R(U16(code + pc));
        pc += 4;
        break;
#define KILN_BINARY(OP, EXPR)                                                   \
  case Opcode::OP: {                                                            \
    uint32_t x = static_cast<uint32_t>(frame->I(U16(code + pc + 2)));           \
    uint32_t y = static_cast<uint32_t>(frame->I(U16(code + pc + 4)));           \
    (void)x; (void)y;                                                           \
    frame->I(U16(code + pc)) = static_cast<int32_t>(EXPR);                      \
    pc += 6;                                                                    \
    break;                                                                      \
  }
      KILN_BINARY(ADD_I32, x + y)
      KILN_BINARY(SUB_I32, x - y)
      KILN_BINARY(MUL_I32, x * y)
      KILN_BINARY(CMP_EQ_I32, x == y ? 1u : 0u)
      KILN_BINARY(CMP_LT_I32, static_cast<int32_t>(x) < static_cast<int32_t>(y) ? 1u : 0u)
#undef KILN_BINARY
      case Opcode::CMP_NZ_REF:
        frame->I(U16(code + pc)) = frame->R(U16(code + pc + 2)).is_null() ? 0 : 1;
        pc += 4;
        break;
      case Opcode::BR:
        if (limits_.step_budget && steps_left_-- == 0) return StepBudgetExhausted(m, function, inst_offset);
        pc = U32(code + pc);
        break;
      case Opcode::COND_BR: {
        if (limits_.step_budget && steps_left_-- == 0) return StepBudgetExhausted(m, function, inst_offset);
        bool taken = frame->I(U16(code + pc)) != 0;
        pc = taken ? U32(code + pc + 2) : U32(code + pc + 6);
        break;
      }
      case Opcode::CALL_IMPORT: {
        uint16_t k = U16(code + pc);
        pc += 2;
        ImportCall call;
        call.frame = frame;
        call.args = ReadList(code, &pc);
        call.results = ReadList(code, &pc);
        const ResolvedImport& imp = state.imports[k];
        Status s;
        switch (imp.kind) {
          case ResolvedImport::Kind::kNative:
            s = hal_.Call(imp.native, call, state.executables);
            break;
          case ResolvedImport::Kind::kContext:
            s = CallContextImport(imp.native, call, m, function);
            break;
          case ResolvedImport::Kind::kBytecode:
            s = CallBytecodeImport(imp.bytecode, call, depth);
            break;
        }
        if (!s.ok()) {
          DecodedInstruction inst;
          (void)DecodeInstruction(info.code, inst_offset, &inst);
          return Annotate(std::move(s), m, function, inst_offset, &inst);
        }
        break;
      }
      case Opcode::CALL: {
        if (limits_.step_budget && steps_left_-- == 0) return StepBudgetExhausted(m, function, inst_offset);
        // A function of this module: the same convention as CALL_IMPORT of
        // another module's function (consume arguments are moved and
        // claimed, borrowed ones shared; argument and result types are
        // checked against the callee's signature).
        uint16_t k = U16(code + pc);
        pc += 2;
        ImportCall call;
        call.frame = frame;
        call.args = ReadList(code, &pc);
        call.results = ReadList(code, &pc);
        Status s = CallBytecodeImport(FunctionRef{m, k}, call, depth);
        if (!s.ok()) {
          DecodedInstruction inst;
          (void)DecodeInstruction(info.code, inst_offset, &inst);
          return Annotate(std::move(s), m, function, inst_offset, &inst);
        }
        break;
      }
      case Opcode::RET:
        *ret = ReadList(code, &pc);
        return OkStatus();
      case Opcode::FAIL: {
        int32_t fail_code = frame->I(U16(code + pc));
        const RefValue& msg = state.rodata[U16(code + pc + 2)];
        const RodataSpan* span = msg.as<RodataSpan>();
        size_t n = span->size() < 1024 ? span->size() : 1024;
        std::string text(reinterpret_cast<const char*>(span->data()), n);
        Status s(FailCode(fail_code), text.empty() ? "FAIL" : text);
        DecodedInstruction inst;
        (void)DecodeInstruction(info.code, inst_offset, &inst);
        return Annotate(std::move(s), m, function, inst_offset, &inst);
      }
      default: {
        // Unreachable for verified bytecode.
        return Annotate(InternalError("unknown opcode 0x%02x", static_cast<unsigned>(op)), m,
                        function, inst_offset, nullptr);
      }
    }
  }
}

}  // namespace kiln::vm
