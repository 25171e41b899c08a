// Printer / parser tests: exact printed form, print -> parse -> print
// identity over a corpus (regions, CFG blocks with arguments and branches,
// multi-result ops, every attribute kind incl. large dense hex), exact
// float round trips, and parse errors with file:line:col.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"

namespace kiln::ir {
namespace {

Type F32(std::vector<int64_t> shape) { return Type::Tensor(DType::kF32, std::move(shape)); }

std::unique_ptr<Module> MustParse(const std::string& text, bool keep_names = false) {
  ParseOptions opts;
  opts.keep_names = keep_names;
  auto m = ParseModule(text, "test.kir", opts);
  EXPECT_TRUE(m.ok()) << m.status().message() << "\n" << text;
  if (!m.ok()) return nullptr;
  return std::move(m).value();
}

std::string ParseError(const std::string& text) {
  auto m = ParseModule(text, "t.kir");
  EXPECT_FALSE(m.ok()) << text;
  return m.ok() ? "" : m.status().message();
}

// print(parse(text)) reparsed and printed again is identical.
void ExpectRoundTrip(const std::string& text, bool keep_names = false) {
  auto m = MustParse(text, keep_names);
  ASSERT_TRUE(m);
  std::string a = PrintModule(*m);
  auto m2 = MustParse(a, keep_names);
  ASSERT_TRUE(m2);
  EXPECT_EQ(a, PrintModule(*m2));
}

TEST(PrinterTest, ExactGenericForm) {
  Module m;
  Operation* f = Builder::AtEnd(m.body()).Create("func.func", {}, {}, {{"sym_name", "main"}}, 1);
  Block* entry = f->region(0)->AddBlock();
  Value* x = entry->AddArgument(F32({1, 4}));
  Builder b = Builder::AtEnd(entry);
  Operation* c = b.Create("tensor.constant", {}, {F32({1, 4})},
                          {{"value", MakeDenseF32({1, 4}, {1, 2, 3, 4})}});
  Operation* add = b.Create("tensor.add", {x, c->result()}, {F32({1, 4})});
  add->set_loc("Add_0");
  b.Create("func.return", {add->result()}, {});
  EXPECT_EQ(PrintModule(m),
            "\"func.func\"() ({\n"
            "^bb0(%arg0: tensor<1x4xf32>):\n"
            "  %0 = \"tensor.constant\"() {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<1x4xf32>} : () -> tensor<1x4xf32>\n"
            "  %1 = \"tensor.add\"(%arg0, %0) : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32> loc(\"Add_0\")\n"
            "  \"func.return\"(%1) : (tensor<1x4xf32>) -> ()\n"
            "}) {sym_name = \"main\"} : () -> ()\n");
  // PrintOp prints one op; outside values get fresh numbers.
  EXPECT_EQ(PrintOp(add),
            "%0 = \"tensor.add\"(%1, %2) : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32> loc(\"Add_0\")\n");
}

TEST(PrinterTest, NameHints) {
  Module m;
  Operation* f = Builder::AtEnd(m.body()).Create("func.func", {}, {}, {{"sym_name", "f"}}, 1);
  Block* entry = f->region(0)->AddBlock();
  Value* x = entry->AddArgument(F32({2}));
  x->set_name_hint("input.1");
  Value* y = entry->AddArgument(F32({2}));
  y->set_name_hint("input.1");  // duplicate: uniqued
  Value* z = entry->AddArgument(F32({2}));
  z->set_name_hint("7");  // would clash with numbering
  Builder b = Builder::AtEnd(entry);
  Operation* add = b.Create("tensor.add", {x, y}, {F32({2})});
  add->result()->set_name_hint("onnx::Add_3");
  Operation* two = b.Create("test.two", {z}, {F32({1}), F32({1})});
  two->result(0)->set_name_hint("ignored");  // multi-result ops use %N:k
  b.Create("func.return", {add->result(), two->result(1)}, {});
  std::string text = PrintModule(m);
  EXPECT_NE(text.find("^bb0(%input.1: tensor<2xf32>, %input.1_1: tensor<2xf32>, %_7: tensor<2xf32>):"),
            std::string::npos) << text;
  EXPECT_NE(text.find("%onnx__Add_3 = \"tensor.add\"(%input.1, %input.1_1)"), std::string::npos) << text;
  EXPECT_NE(text.find("%0:2 = \"test.two\"(%_7)"), std::string::npos) << text;
  EXPECT_NE(text.find("\"func.return\"(%onnx__Add_3, %0#1)"), std::string::npos) << text;
  // With keep_names the hints survive a round trip exactly.
  auto m2 = MustParse(text, /*keep_names=*/true);
  ASSERT_TRUE(m2);
  EXPECT_EQ(PrintModule(*m2), text);
  // By default names are dropped, as in MLIR.
  auto m3 = MustParse(text);
  ASSERT_TRUE(m3);
  EXPECT_NE(PrintModule(*m3).find("^bb0(%arg0: tensor<2xf32>, %arg1: tensor<2xf32>, %arg2: tensor<2xf32>):"),
            std::string::npos);
}

TEST(PrinterTest, FloatFormatting) {
  EXPECT_EQ(FormatFloat(1.0, false), "1.0");
  EXPECT_EQ(FormatFloat(0.5, false), "0.5");
  EXPECT_EQ(FormatFloat(0.1, false), "0.1");
  EXPECT_EQ(FormatFloat(-0.0, false), "-0.0");
  EXPECT_EQ(FormatFloat(1e-7, false), "1e-07");
  EXPECT_EQ(FormatFloat(static_cast<double>(0.2f), true), "0.2");
  EXPECT_EQ(FormatFloat(static_cast<double>(0.2f), false), "0.20000000298023224");
  EXPECT_EQ(FormatFloat(NAN, false), "nan");
  EXPECT_EQ(FormatFloat(-INFINITY, false), "-inf");
  EXPECT_EQ(PrintAttribute(Attribute(0.5)), "0.5 : f64");
  EXPECT_EQ(PrintAttribute(Attribute(static_cast<double>(0.2f))), "0.2 : f32");
  EXPECT_EQ(PrintAttribute(Attribute(0.2)), "0.2 : f64");
  EXPECT_EQ(PrintAttribute(Attribute(std::vector<double>{0.5, 0.2f})), "array<f32: 0.5, 0.2>");
  EXPECT_EQ(PrintAttribute(Attribute(std::vector<double>{0.5, 0.2})), "array<f64: 0.5, 0.2>");
}

TEST(PrinterTest, AttributeKinds) {
  EXPECT_EQ(PrintAttribute(Attribute(3)), "3 : i64");
  EXPECT_EQ(PrintAttribute(Attribute(true)), "true");
  EXPECT_EQ(PrintAttribute(Attribute("a\"b\\c\n\x01")), "\"a\\\"b\\\\c\\n\\01\"");
  EXPECT_EQ(PrintAttribute(Attribute(std::vector<int64_t>{1, 2})), "[1, 2]");
  EXPECT_EQ(PrintAttribute(Attribute(std::vector<int64_t>{})), "[]");
  EXPECT_EQ(PrintAttribute(Attribute(std::vector<double>{})), "array<f64>");
  EXPECT_EQ(PrintAttribute(Attribute(F32({2}))), "tensor<2xf32>");
  EXPECT_EQ(PrintAttribute(Attribute(SymbolRef{"main"})), "@main");
  EXPECT_EQ(PrintAttribute(MakeListAttr({Attribute(1), Attribute("x"), Attribute(std::vector<int64_t>{3})})),
            "[1 : i64, \"x\", [3]]");
  EXPECT_EQ(PrintAttribute(Attribute(MakeDenseF32({}, {2.0f}))), "dense<2.0> : tensor<f32>");
  EXPECT_EQ(PrintAttribute(Attribute(MakeDenseI64({2}, {-1, 5}))), "dense<[-1, 5]> : tensor<2xi64>");
  std::vector<float> many(17, 1.5f);
  std::string hex = PrintAttribute(Attribute(MakeDenseF32({17}, many)));
  EXPECT_EQ(hex.substr(0, 25), "dense<\"0x0000C03F0000C03F");
  EXPECT_EQ(hex.substr(hex.size() - 19), "\"> : tensor<17xf32>");
}

const char* kCorpus[] = {
    // Simple function.
    R"("func.func"() ({
^bb0(%x: tensor<1x4xf32>):
  %c = "tensor.constant"() {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<1x4xf32>} : () -> tensor<1x4xf32>
  %s = "tensor.add"(%x, %c) : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32> loc("Add \"0\"")
  "func.return"(%s) : (tensor<1x4xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)",
    // CFG: blocks with arguments, branches, forward references to blocks and
    // to a value defined in a later block.
    R"("func.func"() ({
^bb0(%x: tensor<2xf32>, %c: i1):
  "cf.cond_br"(%c, %x, %x)[^bb1, ^bb2] {operand_segments = [1, 1, 1]} : (i1, tensor<2xf32>, tensor<2xf32>) -> ()
^bb1(%a: tensor<2xf32>):
  "cf.br"(%a)[^bb3] : (tensor<2xf32>) -> ()
^bb3(%r: tensor<2xf32>):
  %u = "tensor.add"(%r, %n) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  "func.return"(%u) : (tensor<2xf32>) -> ()
^bb2(%b: tensor<2xf32>):
  %n = "tensor.neg"(%b) : (tensor<2xf32>) -> tensor<2xf32>
  "cf.br"(%n)[^bb3] : (tensor<2xf32>) -> ()
}) {sym_name = "cfg"} : () -> ()
)",
    // Multi-result ops, nested regions, several regions, empty blocks.
    R"("func.func"() ({
^bb0(%x: tensor<4xf32>, %p: i1):
  %s:2 = "test.split"(%x) : (tensor<4xf32>) -> (tensor<2xf32>, tensor<2xf32>)
  %d = "flow.dispatch"(%s#1, %s#0) ({
  ^bb0(%in: tensor<2xf32>, %in2: tensor<2xf32>):
    %r = "tensor.relu"(%in) : (tensor<2xf32>) -> tensor<2xf32>
    "flow.return"(%r) : (tensor<2xf32>) -> ()
  }) {locs = ["a", "b"], name = "dispatch_0"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %i:3 = "scf.if"(%p) ({
    "scf.yield"(%d, %d, %x) : (tensor<2xf32>, tensor<2xf32>, tensor<4xf32>) -> ()
  }, {
  ^bb0:
  }, {
  }) : (i1) -> (tensor<2xf32>, tensor<2xf32>, tensor<4xf32>)
  "func.return"(%s#0, %i#2) : (tensor<2xf32>, tensor<4xf32>) -> ()
}) {arg_names = ["x", "p"], arg_ownership = ["borrow", "consume"], sym_name = "regions"} : () -> ()
"func.func"() ({
  "func.return"() : () -> ()
}) {sym_name = "second"} : () -> ()
)",
    // Every attribute kind; types of every kind.
    R"("func.func"() ({
^bb0(%r: !stream.resource<transient>, %t: !stream.timepoint, %n: index, %u: !stream.resource<*>):
  "test.attrs"(%r, %t, %n, %u) {a = 3 : i64, b = -9223372036854775808 : i64, c = 0.1 : f64, d = 0.2 : f32,
      e = 1e300 : f64, f = nan : f64, g = -inf : f64, h = true, i = false, j = "s\n\t\"\\\7F",
      k = [1, -2, 3], l = [], m = array<f64: 0.1, 2.5>, n = array<f32: 0.3>, o = array<f64>,
      p = tensor<1x2x3xi8>, q = index, r = @sym, s = @"quoted sym", t = [1 : i64, "x", [2], @f, i1],
      u = dense<[1.0, -2.5]> : tensor<2xf32>, v = dense<3> : tensor<i32>,
      w = dense<[true, false, true]> : tensor<3xi1>, x = dense<[0.5, 1.0e-3]> : tensor<2xf64>,
      y = dense<[255, 0]> : tensor<2xu8>, z = dense<[-1, 1]> : tensor<2xi16>,
      aa = dense<[1.5, 0.1]> : tensor<2xf16>, ab = dense<[]> : tensor<0xf32>,
      ac = dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>, ad = dense<"0x0000C07F" > : tensor<1xf32>,
      ae = dense<[3.140625, -0.5]> : tensor<2xbf16>, af = dense<[65535, 0]> : tensor<2xu16>,
      ag = dense<[4294967295]> : tensor<1xu32>, ah = dense<[9223372036854775807, 7]> : tensor<2xu64>,
      big = dense<0.25> : tensor<4x5xf32>, "quoted-name" = 1 : i64, unit} : (!stream.resource<transient>, !stream.timepoint, index, !stream.resource<*>) -> ()
  "func.return"() : () -> ()
}) {sym_name = "attrs"} : () -> ()
)",
    // Module wrapper and comments.
    R"(// leading comment
"builtin.module"() ({
  "func.func"() ({  // trailing comment
  ^bb0(%a: tensor<f32>):
    "func.return"(%a) : (tensor<f32>) -> ()
  }) {sym_name = "f1"} : () -> ()
}) : () -> ()
)",
};

TEST(RoundTripTest, Corpus) {
  for (const char* text : kCorpus) {
    SCOPED_TRACE(text);
    ExpectRoundTrip(text);
    ExpectRoundTrip(text, /*keep_names=*/true);
  }
}

TEST(RoundTripTest, ParsedStructure) {
  auto m = MustParse(kCorpus[1]);
  ASSERT_TRUE(m);
  Operation* f = m->LookupFunction("cfg");
  ASSERT_NE(f, nullptr);
  Region* r = f->region(0);
  ASSERT_EQ(r->num_blocks(), 4u);
  // Blocks keep their textual order; successors point at them.
  Operation* cond = r->block(0)->terminator();
  EXPECT_EQ(cond->num_successors(), 2u);
  EXPECT_EQ(cond->successor(0), r->block(1));
  EXPECT_EQ(cond->successor(1), r->block(3));
  // The forward-referenced %n resolves to the neg in the last block.
  Operation* add = r->block(2)->ops().front().get();
  EXPECT_EQ(add->operand(1)->defining_op()->name(), "tensor.neg");
  EXPECT_EQ(add->operand(1)->uses().size(), 2u);

  auto m2 = MustParse(kCorpus[2]);
  ASSERT_TRUE(m2);
  Operation* split = m2->LookupFunction("regions")->region(0)->block(0)->ops().front().get();
  EXPECT_EQ(split->num_results(), 2u);
  Operation* disp = split->result(1)->uses()[0].user;
  EXPECT_EQ(disp->name(), "flow.dispatch");
  EXPECT_EQ(disp->region(0)->block(0)->num_arguments(), 2u);
  EXPECT_EQ(m2->LookupFunction("regions")->strs_attr("arg_ownership"),
            (std::vector<std::string>{"borrow", "consume"}));

  auto m3 = MustParse(kCorpus[4]);
  ASSERT_TRUE(m3);
  EXPECT_EQ(m3->body()->ops().size(), 1u);
  EXPECT_NE(m3->LookupFunction("f1"), nullptr);
}

TEST(RoundTripTest, AttributeValuesExact) {
  auto m = MustParse(kCorpus[3]);
  ASSERT_TRUE(m);
  Operation* op = m->LookupFunction("attrs")->region(0)->block(0)->ops().front().get();
  EXPECT_EQ(op->int_attr("b"), INT64_MIN);
  EXPECT_EQ(op->float_attr("c"), 0.1);
  EXPECT_EQ(op->float_attr("d"), static_cast<double>(0.2f));
  EXPECT_EQ(op->float_attr("e"), 1e300);
  EXPECT_TRUE(std::isnan(op->float_attr("f")));
  EXPECT_EQ(op->str_attr("j"), "s\n\t\"\\\x7F");
  EXPECT_EQ(op->floats_attr("n"), (std::vector<double>{static_cast<double>(0.3f)}));
  EXPECT_TRUE(op->bool_attr("unit"));
  const DenseElements* big = op->dense_attr("big");
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->type.num_elements(), 20);
  EXPECT_EQ(big->GetDouble(19), 0.25);
  const DenseElements* nanv = op->dense_attr("ad");
  ASSERT_NE(nanv, nullptr);
  EXPECT_TRUE(std::isnan(nanv->GetDouble(0)));
  EXPECT_EQ(op->dense_attr("y")->GetInt(0), 255);
  EXPECT_EQ(op->dense_attr("aa")->GetDouble(0), 1.5);
  EXPECT_EQ(op->dense_attr("ac")->GetInt(3), 4);
  EXPECT_EQ(op->dense_attr("ae")->GetDouble(0), 3.140625);  // bf16 bits 0x4049
  EXPECT_EQ(op->dense_attr("ae")->GetDouble(1), -0.5);
  EXPECT_EQ(op->dense_attr("af")->GetInt(0), 65535);
  EXPECT_EQ(op->dense_attr("ag")->GetInt(0), 4294967295);
  EXPECT_EQ(op->dense_attr("ah")->GetInt(0), INT64_MAX);
}

TEST(RoundTripTest, RandomFloatsAndLargeDense) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<uint64_t> bits;
  Module m;
  Operation* op = Builder::AtEnd(m.body()).Create("test.floats", {}, {});
  std::vector<double> doubles;
  std::vector<float> floats;
  for (int i = 0; i < 200; ++i) {
    uint64_t b = bits(rng);
    double d;
    std::memcpy(&d, &b, 8);
    if (!std::isfinite(d)) d = 1.0 / (i + 3);
    doubles.push_back(d);
    uint32_t b32 = static_cast<uint32_t>(b);
    float f;
    std::memcpy(&f, &b32, 4);
    floats.push_back(std::isfinite(f) ? f : 0.1f * i);
  }
  op->set_attr("d", doubles);
  op->set_attr("s", doubles[7]);
  op->set_attr("fs", std::vector<double>(floats.begin(), floats.end()));
  op->set_attr("small", MakeDenseF32({16}, std::vector<float>(floats.begin(), floats.begin() + 16)));
  op->set_attr("large", MakeDenseF32({200}, floats));
  std::string text = PrintModule(m);
  auto m2 = MustParse(text);
  ASSERT_TRUE(m2);
  Operation* op2 = m2->body()->ops().front().get();
  EXPECT_EQ(op2->floats_attr("d"), doubles);
  EXPECT_EQ(op2->float_attr("s"), doubles[7]);
  EXPECT_EQ(op2->floats_attr("fs"), std::vector<double>(floats.begin(), floats.end()));
  const DenseElements* small = op2->dense_attr("small");
  const DenseElements* large = op2->dense_attr("large");
  ASSERT_TRUE(small && large);
  EXPECT_EQ(0, std::memcmp(small->bytes(), floats.data(), 16 * 4));
  EXPECT_EQ(0, std::memcmp(large->bytes(), floats.data(), 200 * 4));
  EXPECT_EQ(PrintModule(*m2), text);
}

TEST(ParseErrorTest, Messages) {
  EXPECT_EQ(ParseError("\"f\"() : () -> (\n  tensor<2xq9>)"),
            "t.kir:2:12: unknown element type 'q9'");
  EXPECT_EQ(ParseError("\"func.func\"() ({\n  \"t.use\"(%x) : (index) -> ()\n}) : () -> ()"),
            "t.kir:2:11: use of undefined value '%x'");
  EXPECT_EQ(ParseError("\"func.func\"() ({\n^bb0(%x: index):\n  %x = \"t.d\"() : () -> index\n}) : () -> ()"),
            "t.kir:3:3: redefinition of value '%x'");
  EXPECT_EQ(ParseError("\"func.func\"() ({\n  \"cf.br\"()[^nowhere] : () -> ()\n}) : () -> ()"),
            "t.kir:2:13: reference to an undefined block '^nowhere'");
  EXPECT_EQ(ParseError("\"func.func\"() ({\n^bb0(%x: index):\n  \"t.use\"(%x) : (i1) -> ()\n}) : () -> ()"),
            "t.kir:3:11: use of value '%x' expects different type than prior uses: 'i1' vs 'index'");
  EXPECT_EQ(ParseError("%0 = \"t.d\"() : () -> (index, index)"),
            "t.kir:1:1: operation defines 2 results but was provided 1 to bind");
  EXPECT_EQ(ParseError("\"t.d\"(%a, %b) : (index) -> ()"),
            "t.kir:1:17: expected 2 operand types but had 1");
  EXPECT_EQ(ParseError("\"t.d\"() {v = dense<[1.0, 2.0]> : tensor<3xf32>} : () -> ()"),
            "t.kir:1:20: dense literal has 2 elements, type tensor<3xf32> has 3");
  EXPECT_EQ(ParseError("\"t.d\"() {v = dense<\"0x00\"> : tensor<1xf32>} : () -> ()"),
            "t.kir:1:20: dense hex data has 1 bytes, type tensor<1xf32> needs 4");
  EXPECT_EQ(ParseError("\"t.d\"() {a = 1, a = 2} : () -> ()"), "t.kir:1:17: duplicate attribute 'a'");
  EXPECT_EQ(ParseError("\"t.d\"() : () -> ()\n\"t.e\"() : () -> ()  \"oops"),
            "t.kir:2:21: unterminated string literal");
  EXPECT_EQ(ParseError("\"t.d\"() {a = [1, 2.5]} : () -> ()"),
            "t.kir:1:18: expected integer in integer array");
  EXPECT_EQ(ParseError("%0:2 = \"t.d\"() : () -> (index, index)\n\"t.u\"(%0) : (index) -> ()"),
            "t.kir:2:7: '%0' names 2 results; use %0#0");
  EXPECT_EQ(ParseError("\"t.d\"() : () -> ()\n\"t.e\"() (\n"), "t.kir:3:1: expected '{'");
}

}  // namespace
}  // namespace kiln::ir
