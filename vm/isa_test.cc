#include "vm/isa.h"

#include <gtest/gtest.h>

#include <set>

namespace kiln::vm {
namespace {

HostVector<ImportSignature> HalSignatures(std::vector<std::string>* names) {
  HostVector<ImportSignature> sigs;
#define KILN_HAL_IMPORT(sym, name, sig, meaning)              \
  names->push_back(name);                                     \
  sigs.push_back(ImportSignature::Parse(sig).value());
#include "vm/hal_imports.def"
#undef KILN_HAL_IMPORT
  return sigs;
}

// Emits one instance of `op` with recognizable operands.
void EmitSample(BytecodeEncoder& e, Opcode op, Label label) {
  switch (op) {
    case Opcode::NOP: e.Nop(); break;
    case Opcode::CONST_I32: e.ConstI32(1, -7); break;
    case Opcode::CONST_REF_ZERO: e.ConstRefZero(2); break;
    case Opcode::MOV_I32: e.MovI32(1, 2); break;
    case Opcode::MOV_REF: e.MovRef(1, 2); break;
    case Opcode::RODATA: e.Rodata(1, 0); break;
    case Opcode::GLOBAL_LOAD_REF: e.GlobalLoadRef(1, 0); break;
    case Opcode::GLOBAL_STORE_REF: e.GlobalStoreRef(1, 0); break;
    case Opcode::ADD_I32: e.AddI32(0, 1, 2); break;
    case Opcode::SUB_I32: e.SubI32(0, 1, 2); break;
    case Opcode::MUL_I32: e.MulI32(0, 1, 2); break;
    case Opcode::CMP_EQ_I32: e.CmpEqI32(0, 1, 2); break;
    case Opcode::CMP_LT_I32: e.CmpLtI32(0, 1, 2); break;
    case Opcode::CMP_NZ_REF: e.CmpNzRef(0, 3); break;
    case Opcode::BR: e.Br(label); break;
    case Opcode::COND_BR: e.CondBr(1, label, label); break;
    case Opcode::CALL_IMPORT:
      // hal.buffer.subspan "rii_r"
      e.CallImport(13, {Reg::Ref(1), Reg::I32(2), Reg::I32(3)}, {Reg::Ref(0)});
      break;
    case Opcode::CALL: e.Call(0, {Reg::Ref(1)}, {Reg::Ref(2)}); break;
    case Opcode::RET: e.Ret({Reg::Ref(0)}); break;
    case Opcode::FAIL: e.Fail(1, 0); break;
  }
}

TEST(IsaTest, OpcodeTableIsConsistent) {
  std::set<uint8_t> codes;
  for (const OpcodeInfo& info : AllOpcodes()) {
    EXPECT_TRUE(codes.insert(static_cast<uint8_t>(info.opcode)).second) << info.name;
    EXPECT_EQ(GetOpcodeInfo(info.opcode)->name, std::string(info.name));
    for (const char* f = info.format; *f; ++f) EXPECT_GT(OperandFixedSize(*f), 0u);
  }
  EXPECT_EQ(GetOpcodeInfo(uint8_t{0xEE}), nullptr);
}

TEST(IsaTest, EncodeDecodeDisassembleEveryOpcode) {
  std::vector<std::string> names;
  HostVector<ImportSignature> sigs = HalSignatures(&names);
  for (const OpcodeInfo& info : AllOpcodes()) {
    SCOPED_TRACE(info.name);
    BytecodeEncoder e;
    Label label = e.NewLabel();
    e.Bind(label);
    EmitSample(e, info.opcode, label);
    if (info.opcode != Opcode::RET && info.opcode != Opcode::BR &&
        info.opcode != Opcode::COND_BR && info.opcode != Opcode::FAIL) {
      e.Ret({Reg::Ref(0)});
    }
    auto bytes = e.Finish();
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    DecodedInstruction inst;
    ASSERT_TRUE(DecodeInstruction(bytes.value(), 0, &inst).ok());
    EXPECT_EQ(inst.opcode, info.opcode);
    EXPECT_EQ(inst.operand_count, static_cast<int>(strlen(info.format)));
    for (int i = 0; i < inst.operand_count; ++i) EXPECT_EQ(inst.operands[i].letter, info.format[i]);
    std::string text = DisassembleInstruction(inst, names);
    EXPECT_EQ(text.rfind(info.name, 0), 0u) << text;

    FunctionLimits limits;
    limits.i32_register_count = 4;
    limits.ref_register_count = 4;
    limits.result_count = 1;
    limits.rodata_count = 1;
    limits.global_is_ref = {true};
    limits.imports = &sigs;
    limits.functions = {{1, 1}};
    EXPECT_TRUE(VerifyBytecode(bytes.value(), limits).ok())
        << VerifyBytecode(bytes.value(), limits).ToString();
  }
}

TEST(IsaTest, DisassemblyText) {
  std::vector<std::string> names;
  HalSignatures(&names);
  BytecodeEncoder e;
  Label done = e.NewLabel(), loop = e.NewLabel();
  e.ConstI32(0, 42);
  e.Bind(loop);
  e.CondBr(0, done, loop);
  e.Bind(done);
  e.CallImport(8, {Reg::Ref(1), Reg::Ref(4), Reg::I32(3)}, {});
  e.Ret({Reg::Ref(0), Reg::Ref(1)});
  auto bytes = e.Finish();
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(Disassemble(bytes.value(), names),
            "0000: CONST_I32 i0, 42\n"
            "0007: COND_BR i0, @0012, @0007\n"
            "0012: CALL_IMPORT hal.command_buffer.dispatch(r1, r4, i3) -> ()\n"
            "001f: RET (r0, r1)\n");
}

TEST(IsaTest, DisassembleNeverCrashesOnGarbage) {
  std::vector<uint8_t> bytes = {0x12, 0x00, 0x00, 0xFF, 0xFF};
  std::string text = Disassemble(bytes, {});
  EXPECT_NE(text.find("<error: offset 0x0000 (CALL_IMPORT): register list of 65535 entries"),
            std::string::npos)
      << text;
}

TEST(IsaTest, EncoderErrors) {
  BytecodeEncoder e;
  Label l = e.NewLabel();
  e.Br(l);
  auto r = e.Finish();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "label 0 used at offset 0x0001 but never bound");

  BytecodeEncoder e2;
  Label l2 = e2.NewLabel();
  e2.Bind(l2);
  e2.Bind(l2);
  e2.Br(l2);
  EXPECT_EQ(e2.Finish().status().message(), "label 0 bound twice");
}

TEST(IsaTest, TypedSignatures) {
  auto sig = ImportSignature::Parse("rr_r:1x16x96xf32,4xi32->f32");
  ASSERT_TRUE(sig.ok()) << sig.status().ToString();
  EXPECT_TRUE(sig->typed);
  EXPECT_EQ(sig->fixed_args, "rr");
  EXPECT_EQ(sig->results, "r");
  ASSERT_EQ(sig->arg_types.size(), 2u);
  EXPECT_EQ(sig->arg_types[0].dtype, DType::kF32);
  EXPECT_EQ(sig->arg_types[0].dims, (HostVector<int64_t>{1, 16, 96}));
  EXPECT_EQ(sig->arg_types[1].TensorString(), "tensor<4xi32>");
  EXPECT_EQ(sig->result_types[0].TensorString(), "tensor<f32>");
  EXPECT_EQ(sig->ToString(), "rr_r:1x16x96xf32,4xi32->f32");
  auto empty = ImportSignature::Parse("_r:->8xf16");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->ToString(), "_r:->8xf16");
  EXPECT_EQ(ImportSignature::Parse("r_r:4xf32").status().message(),
            "signature 'r_r:4xf32': missing '->' in the type section");
  EXPECT_EQ(ImportSignature::Parse("r_r:4xq8->4xf32").status().message(),
            "signature 'r_r:4xq8->4xf32': bad tensor type '4xq8' (expected e.g. 1x16xf32)");
  EXPECT_EQ(ImportSignature::Parse("ri_r:4xf32,4xf32->4xf32").status().message(),
            "signature 'ri_r:4xf32,4xf32->4xf32': a typed signature takes and returns only ref "
            "registers (tensors)");
  EXPECT_EQ(ImportSignature::Parse("rr_r:4xf32->4xf32").status().message(),
            "signature 'rr_r:4xf32->4xf32': 1 argument and 1 result types for 2 arguments and 1 "
            "results");
}

TEST(IsaTest, Signatures) {
  auto sig = ImportSignature::Parse("rriiii*rii_");
  ASSERT_TRUE(sig.ok());
  EXPECT_EQ(sig->fixed_args, "rriiii");
  EXPECT_EQ(sig->repeated, "rii");
  EXPECT_EQ(sig->results, "");
  EXPECT_EQ(sig->ToString(), "rriiii*rii_");
  EXPECT_TRUE(sig->AcceptsArgCount(6));
  EXPECT_TRUE(sig->AcceptsArgCount(12));
  EXPECT_FALSE(sig->AcceptsArgCount(7));
  EXPECT_FALSE(sig->AcceptsArgCount(5));
  EXPECT_EQ(sig->ArgKind(6), 'r');
  EXPECT_EQ(sig->ArgKind(8), 'i');
  EXPECT_EQ(sig->ArgKind(9), 'r');

  auto none = ImportSignature::Parse("_r");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->AcceptsArgCount(0));
  EXPECT_FALSE(none->AcceptsArgCount(1));

  EXPECT_EQ(ImportSignature::Parse("rr").status().message(),
            "signature 'rr': missing '_' between arguments and results");
  EXPECT_EQ(ImportSignature::Parse("rx_").status().message(),
            "signature 'rx_': unexpected character 'x'");
  EXPECT_EQ(ImportSignature::Parse("r*_").status().message(),
            "signature 'r*_': empty repeated group");
  EXPECT_EQ(ImportSignature::Parse("r_*r").status().message(),
            "signature 'r_*r': unexpected character '*'");

  std::vector<Reg> args = {Reg::Ref(0), Reg::Ref(1), Reg::I32(0), Reg::I32(0),
                           Reg::I32(0), Reg::I32(0), Reg::Ref(2), Reg::I32(1), Reg::Ref(3)};
  EXPECT_EQ(sig->CheckRegisters(args, {}).message(),
            "argument 8 is r3 but the signature wants an i32 register");
  args.pop_back();
  EXPECT_EQ(sig->CheckRegisters(args, {}).message(), "takes 6+3k arguments, got 8");
}

// --- verifier: each kind of bad bytecode, with the exact message ----------

class VerifierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sigs_ = HalSignatures(&names_);
    limits_.i32_register_count = 2;
    limits_.ref_register_count = 2;
    limits_.result_count = 1;
    limits_.rodata_count = 1;
    limits_.global_is_ref = {true, false};
    limits_.imports = &sigs_;
    limits_.functions = {{1, 1}};
  }
  std::string Verify(BytecodeEncoder& e) {
    auto bytes = e.Finish();
    EXPECT_TRUE(bytes.ok());
    Status s = VerifyBytecode(bytes.value(), limits_);
    return s.ok() ? "OK" : s.ToString();
  }
  std::vector<std::string> names_;
  HostVector<ImportSignature> sigs_;
  FunctionLimits limits_;
};

TEST_F(VerifierTest, Valid) {
  BytecodeEncoder e;
  e.ConstI32(1, 3);
  e.Ret({Reg::Ref(0)});
  EXPECT_EQ(Verify(e), "OK");
}

TEST_F(VerifierTest, Empty) {
  BytecodeEncoder e;
  EXPECT_EQ(Verify(e), "DATA_LOSS: empty bytecode");
}

TEST_F(VerifierTest, UnknownOpcode) {
  BytecodeEncoder e;
  e.EmitU8(0x7F);
  EXPECT_EQ(Verify(e), "DATA_LOSS: offset 0x0000: unknown opcode 0x7f");
}

TEST_F(VerifierTest, TruncatedOperand) {
  BytecodeEncoder e;
  e.Nop();
  e.EmitU8(0x01);  // CONST_I32
  e.EmitU16(0);
  e.EmitU16(0);    // only 2 of 4 immediate bytes
  EXPECT_EQ(Verify(e), "DATA_LOSS: offset 0x0001 (CONST_I32): truncated operand 'I'");
}

TEST_F(VerifierTest, TruncatedList) {
  BytecodeEncoder e;
  e.EmitU8(0x14);  // RET
  e.EmitU16(3);
  e.EmitU16(0x8000);
  EXPECT_EQ(Verify(e),
            "DATA_LOSS: offset 0x0000 (RET): register list of 3 entries runs past the end");
}

TEST_F(VerifierTest, RegisterOutOfRange) {
  BytecodeEncoder e;
  e.ConstI32(2, 0);
  e.Ret({Reg::Ref(0)});
  EXPECT_EQ(Verify(e),
            "DATA_LOSS: offset 0x0000 (CONST_I32): register i2 out of range (function has 2 "
            "i32 registers)");
}

TEST_F(VerifierTest, RefRegisterOutOfRangeInList) {
  BytecodeEncoder e;
  e.Ret({Reg::Ref(5)});
  EXPECT_EQ(Verify(e),
            "DATA_LOSS: offset 0x0000 (RET): register r5 out of range (function has 2 ref "
            "registers)");
}

TEST_F(VerifierTest, WrongBankInRet) {
  BytecodeEncoder e;
  e.Ret({Reg::I32(0)});
  EXPECT_EQ(Verify(e), "DATA_LOSS: offset 0x0000 (RET): result 0 is i0 but must be a ref register");
}

TEST_F(VerifierTest, RetCountMismatch) {
  BytecodeEncoder e;
  e.Ret({});
  EXPECT_EQ(Verify(e),
            "DATA_LOSS: offset 0x0000 (RET): returns 0 values but the function has 1 results");
}

TEST_F(VerifierTest, BranchPastEnd) {
  BytecodeEncoder e;
  e.EmitU8(0x10);
  e.EmitU32(100);
  EXPECT_EQ(Verify(e),
            "DATA_LOSS: offset 0x0000 (BR): branch target 0x0064 is past the end (5 bytes)");
}

TEST_F(VerifierTest, BranchIntoInstruction) {
  BytecodeEncoder e;
  e.ConstI32(0, 0);
  e.EmitU8(0x10);
  e.EmitU32(2);
  EXPECT_EQ(Verify(e),
            "DATA_LOSS: offset 0x0007 (BR): branch target 0x0002 is not an instruction boundary");
}

TEST_F(VerifierTest, FallsOffTheEnd) {
  BytecodeEncoder e;
  e.ConstI32(0, 0);
  EXPECT_EQ(Verify(e),
            "DATA_LOSS: offset 0x0000 (CONST_I32): function does not end in RET, BR, COND_BR or "
            "FAIL");
}

TEST_F(VerifierTest, RodataOutOfRange) {
  BytecodeEncoder e;
  e.Rodata(0, 1);
  e.Ret({Reg::Ref(0)});
  EXPECT_EQ(Verify(e),
            "DATA_LOSS: offset 0x0000 (RODATA): rodata segment 1 out of range (module has 1)");
}

TEST_F(VerifierTest, GlobalOutOfRangeAndNotRef) {
  BytecodeEncoder e;
  e.GlobalLoadRef(0, 2);
  e.Ret({Reg::Ref(0)});
  EXPECT_EQ(Verify(e),
            "DATA_LOSS: offset 0x0000 (GLOBAL_LOAD_REF): global 2 out of range (module has 2)");
  BytecodeEncoder e2;
  e2.GlobalStoreRef(0, 1);
  e2.Ret({Reg::Ref(0)});
  EXPECT_EQ(Verify(e2), "DATA_LOSS: offset 0x0000 (GLOBAL_STORE_REF): global 1 is not a ref global");
}

TEST_F(VerifierTest, ImportOutOfRange) {
  BytecodeEncoder e;
  e.CallImport(99, {}, {});
  e.Ret({Reg::Ref(0)});
  std::vector<std::string> names;
  size_t count = HalSignatures(&names).size();  // every import of hal_imports.def
  EXPECT_EQ(Verify(e), "DATA_LOSS: offset 0x0000 (CALL_IMPORT): import 99 out of range (module has " +
                           std::to_string(count) + ")");
}

TEST_F(VerifierTest, ImportSignatureMismatch) {
  BytecodeEncoder e;
  // hal.allocator.allocate "ii_r" with a ref argument.
  e.CallImport(3, {Reg::I32(0), Reg::Ref(1)}, {Reg::Ref(0)});
  e.Ret({Reg::Ref(0)});
  EXPECT_EQ(Verify(e),
            "DATA_LOSS: offset 0x0000 (CALL_IMPORT): import 3 (signature 'ii_r'): argument 1 "
            "is r1 but the signature wants an i32 register");
  BytecodeEncoder e2;
  e2.CallImport(3, {Reg::I32(0), Reg::I32(1)}, {});
  e2.Ret({Reg::Ref(0)});
  EXPECT_EQ(Verify(e2),
            "DATA_LOSS: offset 0x0000 (CALL_IMPORT): import 3 (signature 'ii_r'): returns 1 "
            "results, got 0");
  BytecodeEncoder e3;
  // hal.command_buffer.barrier "r*rii_" with a partial group.
  e3.CallImport(9, {Reg::Ref(0), Reg::Ref(1)}, {});
  e3.Ret({Reg::Ref(0)});
  EXPECT_EQ(Verify(e3),
            "DATA_LOSS: offset 0x0000 (CALL_IMPORT): import 9 (signature 'r*rii_'): takes 1+3k "
            "arguments, got 2");
}

TEST_F(VerifierTest, CallMismatch) {
  BytecodeEncoder e;
  e.Call(1, {}, {});
  e.Ret({Reg::Ref(0)});
  EXPECT_EQ(Verify(e), "DATA_LOSS: offset 0x0000 (CALL): function 1 out of range (module has 1)");
  BytecodeEncoder e2;
  e2.Call(0, {Reg::Ref(0)}, {});
  e2.Ret({Reg::Ref(0)});
  EXPECT_EQ(Verify(e2),
            "DATA_LOSS: offset 0x0000 (CALL): function 0 takes 1 arguments and returns 1 "
            "results, got 1 and 0");
  BytecodeEncoder e3;
  e3.Call(0, {Reg::I32(0)}, {Reg::Ref(0)});
  e3.Ret({Reg::Ref(0)});
  EXPECT_EQ(Verify(e3),
            "DATA_LOSS: offset 0x0000 (CALL): argument 0 is i0 but must be a ref register");
}

TEST_F(VerifierTest, TooManyRegisters) {
  limits_.i32_register_count = 0x8001;
  BytecodeEncoder e;
  e.Ret({Reg::Ref(0)});
  EXPECT_EQ(Verify(e),
            "DATA_LOSS: register counts (32769 i32, 2 ref) exceed the maximum of 32768 per bank");
}

TEST_F(VerifierTest, RandomBytesNeverCrash) {
  uint32_t seed = 12345;
  auto next = [&] { seed = seed * 1664525u + 1013904223u; return seed >> 24; };
  for (int c = 0; c < 2000; ++c) {
    std::vector<uint8_t> bytes(next() % 40);
    for (auto& b : bytes) b = static_cast<uint8_t>(next() % 0x18);  // mostly valid opcodes
    (void)VerifyBytecode(bytes, limits_);
    (void)Disassemble(bytes, names_);
  }
}

}  // namespace
}  // namespace kiln::vm
