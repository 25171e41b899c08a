#include "vm/isa.h"

#include <cstdio>
#include <cstring>
#include <iterator>

namespace kiln::vm {

// ---------------------------------------------------------------------------
// Opcode table
// ---------------------------------------------------------------------------

namespace {

constexpr OpcodeInfo kInfos[] = {
#define KILN_OP(code, name, format, meaning) {Opcode::name, #name, format},
#include "vm/isa.def"
#undef KILN_OP
};
constexpr size_t kOpcodeCount = sizeof(kInfos) / sizeof(kInfos[0]);
static_assert(kOpcodeCount < 255, "opcode index must fit a byte");

// Opcode byte -> 1 + index in kInfos (0: not an opcode), built at compile time.
struct OpcodeIndex {
  uint8_t entry[256];
};
constexpr OpcodeIndex MakeOpcodeIndex() {
  OpcodeIndex index{};
  for (size_t i = 0; i < kOpcodeCount; ++i) {
    index.entry[static_cast<uint8_t>(kInfos[i].opcode)] = static_cast<uint8_t>(i + 1);
  }
  return index;
}
constexpr OpcodeIndex kOpcodeIndex = MakeOpcodeIndex();

// Compile-time check that no format exceeds kMaxOperands.
constexpr size_t ConstStrLen(const char* s) { return *s ? 1 + ConstStrLen(s + 1) : 0; }
#define KILN_OP(code, name, format, meaning) \
  static_assert(ConstStrLen(format) <= kMaxOperands, "format too long: " #name);
#include "vm/isa.def"
#undef KILN_OP

inline uint16_t LoadU16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}
inline uint32_t LoadU32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

}  // namespace

const OpcodeInfo* GetOpcodeInfo(uint8_t code) {
  uint8_t entry = kOpcodeIndex.entry[code];
  return entry ? &kInfos[entry - 1] : nullptr;
}
const std::vector<OpcodeInfo>& AllOpcodes() {
  static const std::vector<OpcodeInfo>* all =
      new std::vector<OpcodeInfo>(std::begin(kInfos), std::end(kInfos));
  return *all;
}
const char* OpcodeMeaning(Opcode op) {
  switch (op) {
#define KILN_OP(code, name, format, meaning) \
  case Opcode::name:                         \
    return meaning;
#include "vm/isa.def"
#undef KILN_OP
  }
  return "";
}

size_t OperandFixedSize(char letter) {
  switch (letter) {
    case 'a': case 'b': case 'A': case 'B': case 'K': return 2;
    case 'I': case 'T': return 4;
    case 'L': return 2;  // the count; entries follow
    default: return 0;
  }
}

std::string RegName(Reg reg) {
  return (reg.is_ref ? "r" : "i") + std::to_string(reg.index);
}

// ---------------------------------------------------------------------------
// Decoder
// ---------------------------------------------------------------------------

Status DecodeInstruction(ByteSpan code, uint32_t offset, DecodedInstruction* out) {
  if (offset >= code.size) {
    return DataLossError("offset 0x%04x: past the end of the bytecode (%zu bytes)",
                         offset, code.size);
  }
  const OpcodeInfo* info = GetOpcodeInfo(code.data[offset]);
  if (!info) {
    return DataLossError("offset 0x%04x: unknown opcode 0x%02x", offset,
                         code.data[offset]);
  }
  out->info = info;
  out->opcode = info->opcode;
  out->offset = offset;
  out->operand_count = 0;
  size_t pos = static_cast<size_t>(offset) + 1;
  for (const char* f = info->format; *f; ++f) {
    DecodedOperand& op = out->operands[out->operand_count++];
    op.letter = *f;
    op.value = 0;
    op.list = RegList();
    size_t fixed = OperandFixedSize(*f);
    if (fixed == 0 || code.size - pos < fixed) {
      return DataLossError("offset 0x%04x (%s): truncated operand '%c'", offset,
                           info->name, *f);
    }
    if (fixed == 4) {
      op.value = LoadU32(code.data + pos);
    } else {
      op.value = LoadU16(code.data + pos);
    }
    pos += fixed;
    if (*f == 'L') {
      uint16_t count = static_cast<uint16_t>(op.value);
      if ((code.size - pos) / 2 < count) {
        return DataLossError(
            "offset 0x%04x (%s): register list of %u entries runs past the end",
            offset, info->name, count);
      }
      op.list.data = code.data + pos;
      op.list.count = count;
      op.value = 0;
      pos += 2 * static_cast<size_t>(count);
    }
  }
  out->length = static_cast<uint32_t>(pos - offset);
  return OkStatus();
}

// ---------------------------------------------------------------------------
// Import signatures
// ---------------------------------------------------------------------------

std::string TensorType::ToString() const {
  std::string s;
  for (int64_t d : dims) s += std::to_string(d) + "x";
  return s + DTypeName(dtype);
}

std::string TensorType::TensorString() const { return "tensor<" + ToString() + ">"; }

namespace {

// "1x16xf32" -> TensorType.
bool ParseTensorType(std::string_view text, TensorType* out) {
  out->dims.clear();
  size_t start = 0;
  for (;;) {
    size_t x = text.find('x', start);
    if (x == std::string_view::npos) break;
    std::string_view dim = text.substr(start, x - start);
    if (dim.empty() || dim.size() > 12) return false;
    int64_t v = 0;
    for (char c : dim) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    out->dims.push_back(v);
    start = x + 1;
  }
  out->dtype = ParseDType(text.substr(start));
  return out->dtype != DType::kInvalid && out->dims.size() <= 8;
}

Status ParseTypeList(std::string_view full, std::string_view list, HostVector<TensorType>* out) {
  if (list.empty()) return OkStatus();
  size_t start = 0;
  for (;;) {
    size_t comma = list.find(',', start);
    std::string_view item = list.substr(start, comma == std::string_view::npos ? std::string_view::npos
                                                                               : comma - start);
    TensorType t;
    if (!ParseTensorType(item, &t)) {
      return InvalidArgumentError("signature '%.*s': bad tensor type '%.*s' (expected e.g. 1x16xf32)",
                                  static_cast<int>(full.size()), full.data(),
                                  static_cast<int>(item.size()), item.data());
    }
    out->push_back(std::move(t));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return OkStatus();
}

}  // namespace

StatusOr<ImportSignature> ImportSignature::Parse(std::string_view full) {
  ImportSignature sig;
  std::string_view s = full;
  std::string_view types;
  size_t colon = full.find(':');
  if (colon != std::string_view::npos) {
    s = full.substr(0, colon);
    types = full.substr(colon + 1);
    sig.typed = true;
  }
  size_t underscore = s.find('_');
  if (underscore == std::string_view::npos) {
    return InvalidArgumentError("signature '%.*s': missing '_' between arguments and results",
                                static_cast<int>(full.size()), full.data());
  }
  std::string_view args = s.substr(0, underscore);
  std::string_view results = s.substr(underscore + 1);
  auto bad = [&](char c) {
    return InvalidArgumentError("signature '%.*s': unexpected character '%c'",
                                static_cast<int>(full.size()), full.data(), c);
  };
  bool in_group = false;
  for (char c : args) {
    if (c == '*') {
      if (in_group) return bad(c);
      in_group = true;
      continue;
    }
    if (c != 'i' && c != 'r') return bad(c);
    (in_group ? sig.repeated : sig.fixed_args).push_back(c);
  }
  if (in_group && sig.repeated.empty()) {
    return InvalidArgumentError("signature '%.*s': empty repeated group",
                                static_cast<int>(full.size()), full.data());
  }
  for (char c : results) {
    if (c != 'i' && c != 'r') return bad(c);
    sig.results.push_back(c);
  }
  if (sig.typed) {
    if (!sig.repeated.empty() || sig.fixed_args.find('i') != std::string::npos ||
        sig.results.find('i') != std::string::npos) {
      return InvalidArgumentError(
          "signature '%.*s': a typed signature takes and returns only ref registers (tensors)",
          static_cast<int>(full.size()), full.data());
    }
    size_t arrow = types.find("->");
    if (arrow == std::string_view::npos) {
      return InvalidArgumentError("signature '%.*s': missing '->' in the type section",
                                  static_cast<int>(full.size()), full.data());
    }
    KILN_RETURN_IF_ERROR(ParseTypeList(full, types.substr(0, arrow), &sig.arg_types));
    KILN_RETURN_IF_ERROR(ParseTypeList(full, types.substr(arrow + 2), &sig.result_types));
    if (sig.arg_types.size() != sig.fixed_args.size() ||
        sig.result_types.size() != sig.results.size()) {
      return InvalidArgumentError(
          "signature '%.*s': %zu argument and %zu result types for %zu arguments and %zu results",
          static_cast<int>(full.size()), full.data(), sig.arg_types.size(),
          sig.result_types.size(), sig.fixed_args.size(), sig.results.size());
    }
  }
  return sig;
}

std::string ImportSignature::ToString() const {
  std::string s(fixed_args);
  if (!repeated.empty()) s += "*" + repeated;
  s += "_" + results;
  if (typed) {
    s += ":";
    for (size_t i = 0; i < arg_types.size(); ++i) s += (i ? "," : "") + arg_types[i].ToString();
    s += "->";
    for (size_t i = 0; i < result_types.size(); ++i) {
      s += (i ? "," : "") + result_types[i].ToString();
    }
  }
  return s;
}

bool ImportSignature::AcceptsArgCount(size_t n) const {
  if (n < fixed_args.size()) return false;
  if (repeated.empty()) return n == fixed_args.size();
  return (n - fixed_args.size()) % repeated.size() == 0;
}

char ImportSignature::ArgKind(size_t i) const {
  if (i < fixed_args.size()) return fixed_args[i];
  if (repeated.empty()) return '?';
  return repeated[(i - fixed_args.size()) % repeated.size()];
}

namespace {

template <typename ListT>
Status CheckRegistersImpl(const ImportSignature& sig, const ListT& args,
                          const ListT& results) {
  if (!sig.AcceptsArgCount(args.size())) {
    if (sig.repeated.empty()) {
      return InvalidArgumentError("takes %zu arguments, got %zu", sig.fixed_args.size(),
                                  static_cast<size_t>(args.size()));
    }
    return InvalidArgumentError("takes %zu+%zuk arguments, got %zu", sig.fixed_args.size(),
                                sig.repeated.size(), static_cast<size_t>(args.size()));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    Reg r = args[i];
    bool want_ref = sig.ArgKind(i) == 'r';
    if (r.is_ref != want_ref) {
      return InvalidArgumentError("argument %zu is %s but the signature wants %s", i,
                                  KILN_STATUS_TEXT(RegName(r).c_str()),
                                  want_ref ? "a ref register" : "an i32 register");
    }
  }
  if (results.size() != sig.results.size()) {
    return InvalidArgumentError("returns %zu results, got %zu", sig.results.size(),
                                static_cast<size_t>(results.size()));
  }
  for (size_t i = 0; i < results.size(); ++i) {
    Reg r = results[i];
    bool want_ref = sig.results[i] == 'r';
    if (r.is_ref != want_ref) {
      return InvalidArgumentError("result %zu is %s but the signature wants %s", i,
                                  KILN_STATUS_TEXT(RegName(r).c_str()),
                                  want_ref ? "a ref register" : "an i32 register");
    }
  }
  return OkStatus();
}

}  // namespace

Status ImportSignature::CheckRegisters(const RegList& args, const RegList& results) const {
  return CheckRegistersImpl(*this, args, results);
}
Status ImportSignature::CheckRegisters(const std::vector<Reg>& args,
                                       const std::vector<Reg>& results) const {
  return CheckRegistersImpl(*this, args, results);
}

// ---------------------------------------------------------------------------
// Encoder
// ---------------------------------------------------------------------------

Label BytecodeEncoder::NewLabel() {
  label_offsets_.push_back(-1);
  return Label{static_cast<uint32_t>(label_offsets_.size() - 1)};
}

void BytecodeEncoder::Bind(Label label) {
  if (label.id >= label_offsets_.size()) {
    if (error_.empty()) error_ = "Bind() of a label not created by this encoder";
    return;
  }
  if (label_offsets_[label.id] >= 0) {
    if (error_.empty()) error_ = "label " + std::to_string(label.id) + " bound twice";
    return;
  }
  label_offsets_[label.id] = offset();
}

void BytecodeEncoder::EmitU16(uint16_t v) {
  bytes_.push_back(static_cast<uint8_t>(v));
  bytes_.push_back(static_cast<uint8_t>(v >> 8));
}

void BytecodeEncoder::EmitU32(uint32_t v) {
  for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void BytecodeEncoder::EmitTarget(Label label) {
  if (label.id >= label_offsets_.size()) {
    if (error_.empty()) error_ = "branch to a label not created by this encoder";
  }
  fixups_.push_back(Fixup{offset(), label.id});
  EmitU32(0xFFFFFFFFu);
}

void BytecodeEncoder::EmitList(const std::vector<Reg>& regs) {
  if (regs.size() > 0xFFFF) {
    if (error_.empty()) error_ = "register list longer than 65535 entries";
  }
  EmitU16(static_cast<uint16_t>(regs.size()));
  for (const Reg& r : regs) EmitU16(r.encoded());
}

void BytecodeEncoder::Nop() { Op(Opcode::NOP); }
void BytecodeEncoder::ConstI32(uint16_t a, int32_t imm) {
  Op(Opcode::CONST_I32); EmitU16(a); EmitU32(static_cast<uint32_t>(imm));
}
void BytecodeEncoder::ConstRefZero(uint16_t ref_a) { Op(Opcode::CONST_REF_ZERO); EmitU16(ref_a); }
void BytecodeEncoder::MovI32(uint16_t a, uint16_t b) { Op(Opcode::MOV_I32); EmitU16(a); EmitU16(b); }
void BytecodeEncoder::MovRef(uint16_t a, uint16_t b) { Op(Opcode::MOV_REF); EmitU16(a); EmitU16(b); }
void BytecodeEncoder::Rodata(uint16_t a, uint16_t k) { Op(Opcode::RODATA); EmitU16(a); EmitU16(k); }
void BytecodeEncoder::GlobalLoadRef(uint16_t a, uint16_t k) {
  Op(Opcode::GLOBAL_LOAD_REF); EmitU16(a); EmitU16(k);
}
void BytecodeEncoder::GlobalStoreRef(uint16_t b, uint16_t k) {
  Op(Opcode::GLOBAL_STORE_REF); EmitU16(b); EmitU16(k);
}
#define KILN_ABB(Method, OP)                                                  \
  void BytecodeEncoder::Method(uint16_t a, uint16_t b0, uint16_t b1) {        \
    Op(Opcode::OP); EmitU16(a); EmitU16(b0); EmitU16(b1);                     \
  }
KILN_ABB(AddI32, ADD_I32)
KILN_ABB(SubI32, SUB_I32)
KILN_ABB(MulI32, MUL_I32)
KILN_ABB(CmpEqI32, CMP_EQ_I32)
KILN_ABB(CmpLtI32, CMP_LT_I32)
#undef KILN_ABB
void BytecodeEncoder::CmpNzRef(uint16_t a, uint16_t b) { Op(Opcode::CMP_NZ_REF); EmitU16(a); EmitU16(b); }
void BytecodeEncoder::Br(Label target) { Op(Opcode::BR); EmitTarget(target); }
void BytecodeEncoder::CondBr(uint16_t b, Label t, Label f) {
  Op(Opcode::COND_BR); EmitU16(b); EmitTarget(t); EmitTarget(f);
}
void BytecodeEncoder::CallImport(uint16_t import, const std::vector<Reg>& args,
                                 const std::vector<Reg>& results) {
  Op(Opcode::CALL_IMPORT); EmitU16(import); EmitList(args); EmitList(results);
}
void BytecodeEncoder::Call(uint16_t function, const std::vector<Reg>& args,
                           const std::vector<Reg>& results) {
  Op(Opcode::CALL); EmitU16(function); EmitList(args); EmitList(results);
}
void BytecodeEncoder::Ret(const std::vector<Reg>& regs) { Op(Opcode::RET); EmitList(regs); }
void BytecodeEncoder::Fail(uint16_t b, uint16_t k) { Op(Opcode::FAIL); EmitU16(b); EmitU16(k); }

StatusOr<std::vector<uint8_t>> BytecodeEncoder::Finish() {
  Status status;
  if (!error_.empty()) status = InvalidArgumentError(error_.c_str());
  for (const Fixup& f : fixups_) {
    if (!status.ok()) break;
    if (f.label >= label_offsets_.size()) continue;  // reported via error_
    int64_t target = label_offsets_[f.label];
    if (target < 0) {
      status = InvalidArgumentError("label %u used at offset 0x%04x but never bound",
                                    f.label, f.at);
      break;
    }
    uint32_t t = static_cast<uint32_t>(target);
    for (int i = 0; i < 4; ++i) bytes_[f.at + i] = static_cast<uint8_t>(t >> (8 * i));
  }
  std::vector<uint8_t> bytes = std::move(bytes_);
  bytes_.clear();
  label_offsets_.clear();
  fixups_.clear();
  error_.clear();
  if (!status.ok()) return status;
  return bytes;
}

// ---------------------------------------------------------------------------
// Verifier
// ---------------------------------------------------------------------------

namespace {

#if KILN_STATUS_MESSAGES
Status InstError(const DecodedInstruction& inst, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
Status InstError(const DecodedInstruction& inst, const char* fmt, ...) {
  char buffer[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buffer, sizeof(buffer), fmt, args);
  va_end(args);
  return DataLossError("offset 0x%04x (%s): %s", inst.offset, inst.info->name, buffer);
}
#else
template <typename... Args>
inline Status InstError(const DecodedInstruction&, const char*, Args&&...) {
  return Status(StatusCode::kDataLoss);
}
#endif

Status CheckReg(const DecodedInstruction& inst, Reg reg, const FunctionLimits& limits) {
  uint32_t count = reg.is_ref ? limits.ref_register_count : limits.i32_register_count;
  if (reg.index >= count) {
    return InstError(inst, "register %s out of range (function has %u %s registers)",
                     KILN_STATUS_TEXT(RegName(reg).c_str()), count, reg.is_ref ? "ref" : "i32");
  }
  return OkStatus();
}

Status CheckList(const DecodedInstruction& inst, const RegList& list,
                 const FunctionLimits& limits) {
  for (size_t i = 0; i < list.size(); ++i) {
    KILN_RETURN_IF_ERROR(CheckReg(inst, list[i], limits));
  }
  return OkStatus();
}

Status CheckAllRefs(const DecodedInstruction& inst, const RegList& list, const char* what) {
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_ref) {
      return InstError(inst, "%s %zu is %s but must be a ref register", what, i,
                       KILN_STATUS_TEXT(RegName(list[i]).c_str()));
    }
  }
  return OkStatus();
}

}  // namespace

Status VerifyBytecode(ByteSpan code, const FunctionLimits& limits) {
  if (code.size == 0) return DataLossError("empty bytecode");
  if (code.size > 0x7FFFFFFFu) return DataLossError("bytecode larger than 2 GiB");
  if (limits.i32_register_count > kMaxRegisters || limits.ref_register_count > kMaxRegisters) {
    return DataLossError("register counts (%u i32, %u ref) exceed the maximum of %u per bank",
                         limits.i32_register_count, limits.ref_register_count, kMaxRegisters);
  }
  // Pass 1: decode everything, mark instruction starts, check operands.
  HostVector<uint8_t> is_start(code.size, 0);
  uint32_t offset = 0;
  DecodedInstruction inst;
  Opcode last = Opcode::NOP;
  while (offset < code.size) {
    KILN_RETURN_IF_ERROR(DecodeInstruction(code, offset, &inst));
    is_start[offset] = 1;
    last = inst.opcode;
    for (int i = 0; i < inst.operand_count; ++i) {
      const DecodedOperand& op = inst.operands[i];
      switch (op.letter) {
        case 'a': case 'b':
          KILN_RETURN_IF_ERROR(CheckReg(inst, Reg::I32(static_cast<uint16_t>(op.value)), limits));
          break;
        case 'A': case 'B':
          KILN_RETURN_IF_ERROR(CheckReg(inst, Reg::Ref(static_cast<uint16_t>(op.value)), limits));
          break;
        case 'L':
          KILN_RETURN_IF_ERROR(CheckList(inst, op.list, limits));
          break;
        case 'T':
          if (op.value >= code.size) {
            return InstError(inst, "branch target 0x%04x is past the end (%zu bytes)",
                             op.value, code.size);
          }
          break;
        default:
          break;
      }
    }
    // Ordinals and lists.
    switch (inst.opcode) {
      case Opcode::RODATA:
      case Opcode::FAIL: {
        uint32_t k = inst.operands[1].value;
        if (k >= limits.rodata_count) {
          return InstError(inst, "rodata segment %u out of range (module has %u)", k,
                           limits.rodata_count);
        }
        break;
      }
      case Opcode::GLOBAL_LOAD_REF:
      case Opcode::GLOBAL_STORE_REF: {
        uint32_t k = inst.operands[1].value;
        if (k >= limits.global_is_ref.size()) {
          return InstError(inst, "global %u out of range (module has %zu)", k,
                           limits.global_is_ref.size());
        }
        if (!limits.global_is_ref[k]) {
          return InstError(inst, "global %u is not a ref global", k);
        }
        break;
      }
      case Opcode::CALL_IMPORT: {
        uint32_t k = inst.operands[0].value;
        size_t n = limits.imports ? limits.imports->size() : 0;
        if (k >= n) {
          return InstError(inst, "import %u out of range (module has %zu)", k, n);
        }
        Status s = (*limits.imports)[k].CheckRegisters(inst.operands[1].list,
                                                       inst.operands[2].list);
        if (!s.ok()) {
          return InstError(inst, "import %u (signature '%s'): %s", k,
                           KILN_STATUS_TEXT((*limits.imports)[k].ToString().c_str()),
                           s.message().c_str());
        }
        break;
      }
      case Opcode::CALL: {
        uint32_t k = inst.operands[0].value;
        if (k >= limits.functions.size()) {
          return InstError(inst, "function %u out of range (module has %zu)", k,
                           limits.functions.size());
        }
        const RegList& args = inst.operands[1].list;
        const RegList& results = inst.operands[2].list;
        if (args.size() != limits.functions[k].first ||
            results.size() != limits.functions[k].second) {
          return InstError(inst, "function %u takes %u arguments and returns %u results, got %zu and %zu",
                           k, limits.functions[k].first, limits.functions[k].second,
                           args.size(), results.size());
        }
        KILN_RETURN_IF_ERROR(CheckAllRefs(inst, args, "argument"));
        KILN_RETURN_IF_ERROR(CheckAllRefs(inst, results, "result"));
        break;
      }
      case Opcode::RET: {
        const RegList& list = inst.operands[0].list;
        if (list.size() != limits.result_count) {
          return InstError(inst, "returns %zu values but the function has %u results",
                           list.size(), limits.result_count);
        }
        KILN_RETURN_IF_ERROR(CheckAllRefs(inst, list, "result"));
        break;
      }
      default:
        break;
    }
    offset += inst.length;
  }
  if (last != Opcode::RET && last != Opcode::BR && last != Opcode::COND_BR &&
      last != Opcode::FAIL) {
    return DataLossError("offset 0x%04x (%s): function does not end in RET, BR, COND_BR or FAIL",
                         inst.offset, inst.info->name);
  }
  // Pass 2: branch targets land on instruction starts.
  offset = 0;
  while (offset < code.size) {
    KILN_RETURN_IF_ERROR(DecodeInstruction(code, offset, &inst));
    for (int i = 0; i < inst.operand_count; ++i) {
      if (inst.operands[i].letter == 'T' && !is_start[inst.operands[i].value]) {
        return InstError(inst, "branch target 0x%04x is not an instruction boundary",
                         inst.operands[i].value);
      }
    }
    offset += inst.length;
  }
  return OkStatus();
}

// ---------------------------------------------------------------------------
// Disassembler
// ---------------------------------------------------------------------------

namespace {

std::string ListText(const RegList& list) {
  std::string s = "(";
  for (size_t i = 0; i < list.size(); ++i) {
    if (i) s += ", ";
    s += RegName(list[i]);
  }
  return s + ")";
}

std::string Hex4(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%04x", v);
  return buf;
}

std::string NameOr(const std::vector<std::string>& names, uint32_t k, const char* kind) {
  if (k < names.size() && !names[k].empty()) return names[k];
  return std::string(kind) + "#" + std::to_string(k);
}

}  // namespace

std::string DisassembleInstruction(const DecodedInstruction& inst,
                                   const std::vector<std::string>& import_names,
                                   const std::vector<std::string>& function_names) {
  std::string s = inst.info->name;
  switch (inst.opcode) {
    case Opcode::CALL_IMPORT:
    case Opcode::CALL: {
      bool imp = inst.opcode == Opcode::CALL_IMPORT;
      s += " " + NameOr(imp ? import_names : function_names, inst.operands[0].value,
                        imp ? "import" : "function");
      s += ListText(inst.operands[1].list) + " -> " + ListText(inst.operands[2].list);
      return s;
    }
    case Opcode::RET:
      return s + " " + ListText(inst.operands[0].list);
    default:
      break;
  }
  for (int i = 0; i < inst.operand_count; ++i) {
    const DecodedOperand& op = inst.operands[i];
    s += i ? ", " : " ";
    switch (op.letter) {
      case 'a': case 'b': s += "i" + std::to_string(op.value); break;
      case 'A': case 'B': s += "r" + std::to_string(op.value); break;
      case 'I': s += std::to_string(op.imm()); break;
      case 'T': s += "@" + Hex4(op.value); break;
      case 'K':
        if (inst.opcode == Opcode::RODATA || inst.opcode == Opcode::FAIL) {
          s += "rodata#" + std::to_string(op.value);
        } else if (inst.opcode == Opcode::GLOBAL_LOAD_REF ||
                   inst.opcode == Opcode::GLOBAL_STORE_REF) {
          s += "global#" + std::to_string(op.value);
        } else {
          s += "#" + std::to_string(op.value);
        }
        break;
      case 'L': s += ListText(op.list); break;
      default: s += "?"; break;
    }
  }
  return s;
}

std::string Disassemble(ByteSpan code, const std::vector<std::string>& import_names,
                        const std::vector<std::string>& function_names) {
  std::string out;
  uint32_t offset = 0;
  DecodedInstruction inst;
  while (offset < code.size) {
    out += Hex4(offset) + ": ";
    Status s = DecodeInstruction(code, offset, &inst);
    if (!s.ok()) {
      out += "<error: " + s.message() + ">\n";
      break;
    }
    out += DisassembleInstruction(inst, import_names, function_names) + "\n";
    offset += inst.length;
  }
  return out;
}

}  // namespace kiln::vm
