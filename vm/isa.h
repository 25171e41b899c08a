// Kiln bytecode ISA: opcode enum, encoder, decoder, verifier and disassembler,
// all derived from the one table in vm/isa.def (DESIGN.md house style 2), plus
// the calling-convention signatures of vm/hal_imports.def.
//
// Library `kiln_vm_isa` (no FlatBuffers, no HAL): the compiler's bytecode
// emitter (compiler/backend/) links it; so does the VM's loader.
//
// Encoding recap (isa.def has the full text): one opcode byte, then operands
// in format order, little-endian, no padding. Register operands are u16
// indices; the bank is implied by the format letter (a/b: i32, A/B: ref).
// Register lists (L) are u16 count + count x u16, bit 15 set = ref bank.
// Branch targets (T) are u32 byte offsets from the function start.
//
// Calling convention (what the emitter must follow; checked by
// VerifyBytecode):
//  - An exported function's N tensor arguments arrive in ref registers
//    0..N-1 (buffer views), in argument order. Its results are the registers
//    of RET, which must be exactly `result_count` ref registers.
//  - CALL (bytecode function K of the same module): the callee's arguments
//    and results are its TensorSigs, so every register in both lists must be
//    a ref register and the counts must match the callee's args/results.
//    Arguments land in the callee's ref registers 0..N-1.
//  - CALL_IMPORT: args/results must match the import's signature string
//    (banks and counts, repeated groups included).
//  - Every function's last instruction is RET, BR, COND_BR or FAIL (no
//    fall-through off the end). Register counts are at most kMaxRegisters per
//    bank.
#ifndef KILN_VM_ISA_H_
#define KILN_VM_ISA_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/dtype.h"
#include "base/host_alloc.h"
#include "base/status.h"

namespace kiln::vm {

// ---------------------------------------------------------------------------
// Opcodes
// ---------------------------------------------------------------------------

// Enumerators carry the table's names verbatim: Opcode::CONST_I32, ...
enum class Opcode : uint8_t {
#define KILN_OP(code, name, format, meaning) name = code,
#include "vm/isa.def"
#undef KILN_OP
};

// Compact (no pointers: no relocations, read-only data); the prose meaning
// is OpcodeMeaning, which only tools link.
struct OpcodeInfo {
  Opcode opcode;
  char name[20];   // "CALL_IMPORT"
  char format[4];  // "KLL" (at most kMaxOperands letters)
};
// Register-level meaning from isa.def ("" for an unknown opcode).
const char* OpcodeMeaning(Opcode op);

// Table entry for `code`, or nullptr if the byte is not an opcode.
const OpcodeInfo* GetOpcodeInfo(uint8_t code);
inline const OpcodeInfo* GetOpcodeInfo(Opcode op) {
  return GetOpcodeInfo(static_cast<uint8_t>(op));
}
// Every opcode in table order (for tests and tools).
const std::vector<OpcodeInfo>& AllOpcodes();

// Longest format string in isa.def (operands per instruction).
constexpr int kMaxOperands = 3;
// Register indices are < kMaxRegisters in each bank (bit 15 is the bank flag
// inside register lists).
constexpr uint32_t kMaxRegisters = 0x8000;
constexpr uint16_t kRefBankBit = 0x8000;

// Byte size of each fixed-size operand letter; L is variable (2 + 2*count).
// Returns 0 for an unknown letter.
size_t OperandFixedSize(char letter);

// ---------------------------------------------------------------------------
// Registers and byte spans
// ---------------------------------------------------------------------------

struct Reg {
  uint16_t index = 0;
  bool is_ref = false;
  uint16_t encoded() const { return index | (is_ref ? kRefBankBit : 0); }
  static Reg I32(uint16_t i) { return Reg{i, false}; }
  static Reg Ref(uint16_t i) { return Reg{i, true}; }
  static Reg FromEncoded(uint16_t e) {
    return Reg{static_cast<uint16_t>(e & 0x7FFF), (e & kRefBankBit) != 0};
  }
  bool operator==(const Reg& o) const { return index == o.index && is_ref == o.is_ref; }
};
// "i3" or "r1".
std::string RegName(Reg reg);

// A borrowed byte range (C++17 has no std::span).
struct ByteSpan {
  const uint8_t* data = nullptr;
  size_t size = 0;
  ByteSpan() = default;
  ByteSpan(const uint8_t* d, size_t n) : data(d), size(n) {}
  ByteSpan(const std::vector<uint8_t>& v) : data(v.data()), size(v.size()) {}  // NOLINT
};

// A register list operand inside bytecode (zero-copy; `data` points at the
// first u16 after the count).
struct RegList {
  const uint8_t* data = nullptr;
  uint16_t count = 0;
  uint16_t encoded(size_t i) const {
    return static_cast<uint16_t>(data[2 * i] | (data[2 * i + 1] << 8));
  }
  Reg operator[](size_t i) const { return Reg::FromEncoded(encoded(i)); }
  size_t size() const { return count; }
};

// ---------------------------------------------------------------------------
// Decoder (generic, driven by the format string)
// ---------------------------------------------------------------------------

struct DecodedOperand {
  char letter = 0;     // format letter
  uint32_t value = 0;  // a/A/b/B: register index (u16), I: the bits of the
                       // i32, K: ordinal, T: target byte offset; L: unused
  RegList list;        // L only
  int32_t imm() const { return static_cast<int32_t>(value); }
};

struct DecodedInstruction {
  const OpcodeInfo* info = nullptr;
  Opcode opcode = Opcode::NOP;
  uint32_t offset = 0;  // byte offset of the opcode byte
  uint32_t length = 0;  // total bytes incl. opcode
  int operand_count = 0;
  DecodedOperand operands[kMaxOperands];
};

// Decodes the instruction at `offset` of `code`. Never reads out of bounds.
// Errors (kDataLoss): offset past the end, unknown opcode, truncated operand.
// Messages look like "offset 0x0012: unknown opcode 0x7f". No allocation on
// success.
Status DecodeInstruction(ByteSpan code, uint32_t offset, DecodedInstruction* out);

// ---------------------------------------------------------------------------
// Import signatures ("rriiii*rii_": fixed args, repeated group, results)
// ---------------------------------------------------------------------------

// Static tensor type of a typed import signature: "1x16x96xf32", "f32".
struct TensorType {
  DType dtype = DType::kInvalid;
  HostVector<int64_t> dims;
  // "1x16x96xf32" (the signature spelling; rank 0 is just the dtype).
  std::string ToString() const;
  // "tensor<1x16x96xf32>" (the spelling of vm::TensorTypeString).
  std::string TensorString() const;
  bool operator==(const TensorType& o) const { return dtype == o.dtype && dims == o.dims; }
};

// Calling convention of an import.
//
// Imports of another bytecode module's export ("mel.main": vm/context.h)
// use only `r` and may carry the tensor types after a ':', checked against
// the export's TensorSigs when the module joins a context:
//   "rr_r:1x16x96xf32,4xi32->1x8xf32"
// (argument types, "->", result types; comma separated; an empty list is
// allowed on either side, e.g. "_r:->4xf32"). Untyped bytecode imports are
// checked by count only.
struct ImportSignature {
  HostString fixed_args;  // "rriiii"
  HostString repeated;    // "rii" ("" when the signature has no '*')
  HostString results;     // ""
  bool typed = false;      // a ':' type section was present
  HostVector<TensorType> arg_types;     // typed only: one per argument
  HostVector<TensorType> result_types;  // typed only: one per result

  // Parses a signature string. Grammar:
  //   [ir]* ('*' [ir]+)? '_' [ir]* (':' TYPES? '->' TYPES?)?
  //   TYPES := TYPE (',' TYPE)*     TYPE := (DIM 'x')* DTYPE   (DTYPE as DTypeName)
  // A typed signature has no repeated group, only `r` registers, and one
  // type per register. Errors: kInvalidArgument naming the offending part.
  static StatusOr<ImportSignature> Parse(std::string_view signature);
  // Back to the canonical string (types included when typed).
  std::string ToString() const;

  // Whether `n` arguments fit: n == fixed, or fixed + k * repeated (k >= 0).
  bool AcceptsArgCount(size_t n) const;
  // 'i' or 'r' for argument `i` (assumes i is within an accepted count).
  char ArgKind(size_t i) const;
  // Checks banks and counts of an argument and result register list.
  // Errors: kInvalidArgument, e.g. "argument 2 is i3 but the signature wants
  // a ref register" or "takes 6+3k arguments, got 7".
  Status CheckRegisters(const RegList& args, const RegList& results) const;
  Status CheckRegisters(const std::vector<Reg>& args,
                        const std::vector<Reg>& results) const;
};

// ---------------------------------------------------------------------------
// Encoder
// ---------------------------------------------------------------------------

// A forward or backward branch target. Obtain from NewLabel(), bind exactly
// once with Bind().
struct Label {
  uint32_t id = 0xFFFFFFFFu;
};

// Builds one function's bytecode. Not thread-safe. Cost: amortized O(1) per
// byte; Finish() is O(fixups).
class BytecodeEncoder {
 public:
  BytecodeEncoder() = default;

  // Current byte offset (where the next instruction starts); use it for
  // Function.debug_offsets.
  uint32_t offset() const { return static_cast<uint32_t>(bytes_.size()); }

  Label NewLabel();
  // Binds `label` to the current offset. Binding twice is an error reported
  // by Finish().
  void Bind(Label label);

  // One method per opcode in isa.def (operands in format order).
  void Nop();
  void ConstI32(uint16_t a, int32_t imm);
  void ConstRefZero(uint16_t ref_a);
  void MovI32(uint16_t a, uint16_t b);
  void MovRef(uint16_t ref_a, uint16_t ref_b);
  void Rodata(uint16_t ref_a, uint16_t segment);
  void GlobalLoadRef(uint16_t ref_a, uint16_t global);
  void GlobalStoreRef(uint16_t ref_b, uint16_t global);
  void AddI32(uint16_t a, uint16_t b0, uint16_t b1);
  void SubI32(uint16_t a, uint16_t b0, uint16_t b1);
  void MulI32(uint16_t a, uint16_t b0, uint16_t b1);
  void CmpEqI32(uint16_t a, uint16_t b0, uint16_t b1);
  void CmpLtI32(uint16_t a, uint16_t b0, uint16_t b1);
  void CmpNzRef(uint16_t a, uint16_t ref_b);
  void Br(Label target);
  void CondBr(uint16_t b, Label if_true, Label if_false);
  void CallImport(uint16_t import, const std::vector<Reg>& args,
                  const std::vector<Reg>& results);
  void Call(uint16_t function, const std::vector<Reg>& args,
            const std::vector<Reg>& results);
  void Ret(const std::vector<Reg>& regs);
  void Fail(uint16_t code_b, uint16_t message_segment);

  // Raw emission, for tests that build malformed bytecode.
  void EmitU8(uint8_t v) { bytes_.push_back(v); }
  void EmitU16(uint16_t v);
  void EmitU32(uint32_t v);

  // Resolves label fixups and returns the bytecode; the encoder is left
  // empty. Errors (kInvalidArgument): a label used but never bound, bound
  // twice, or a register list longer than 65535 entries.
  StatusOr<std::vector<uint8_t>> Finish();

 private:
  void Op(Opcode op) { bytes_.push_back(static_cast<uint8_t>(op)); }
  void EmitTarget(Label label);
  void EmitList(const std::vector<Reg>& regs);

  struct Fixup {
    uint32_t at;     // byte offset of the u32 to patch
    uint32_t label;  // label id
  };
  std::vector<uint8_t> bytes_;
  std::vector<int64_t> label_offsets_;  // -1 until bound
  std::vector<Fixup> fixups_;
  std::string error_;
};

// ---------------------------------------------------------------------------
// Bytecode verifier
// ---------------------------------------------------------------------------

// Everything the verifier needs to know about the function and its module.
struct FunctionLimits {
  uint32_t i32_register_count = 0;
  uint32_t ref_register_count = 0;
  uint32_t result_count = 0;                     // RET must return this many refs
  uint32_t rodata_count = 0;
  HostVector<uint8_t> global_is_ref;            // one per module global (0/1)
  const HostVector<ImportSignature>* imports = nullptr;  // one per import
  // Per bytecode function of the module: (arg count, result count), for CALL.
  HostVector<std::pair<uint32_t, uint32_t>> functions;
};

// Checks that every instruction decodes within bounds, opcodes are known,
// registers are < the function's counts and of the bank the operand letter
// (or signature) demands, branch targets are instruction boundaries,
// ordinals are in range, CALL_IMPORT/CALL/RET lists match the signatures,
// and the function ends in RET/BR/COND_BR/FAIL.
// Errors: kDataLoss "offset 0x0012 (CALL_IMPORT): ..." (the caller prefixes
// the function name).
Status VerifyBytecode(ByteSpan code, const FunctionLimits& limits);

// ---------------------------------------------------------------------------
// Disassembler
// ---------------------------------------------------------------------------

// One line per instruction, e.g.
//   0000: CONST_I32 i0, 42
//   0007: CALL_IMPORT hal.command_buffer.dispatch(r1, r4, i3) -> ()
//   0014: COND_BR i0, @001f, @0000
//   001f: RET (r0)
// Import and function names are used when the ordinal is in range, else
// "import#3"/"function#1". A decode error ends the listing with
// "XXXX: <error: ...>". Never crashes on bad bytes.
std::string Disassemble(ByteSpan code, const std::vector<std::string>& import_names,
                        const std::vector<std::string>& function_names = {});
// The text of one decoded instruction, without the offset prefix.
std::string DisassembleInstruction(const DecodedInstruction& inst,
                                   const std::vector<std::string>& import_names,
                                   const std::vector<std::string>& function_names = {});

}  // namespace kiln::vm

#endif  // KILN_VM_ISA_H_
