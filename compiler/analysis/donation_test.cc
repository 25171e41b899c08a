// Piecewise donation (donation.h): the byte ranges of an import's reads
// through views, the writes of an in-place concat's chain, and the
// conflict between them, on hand-written programs.
#include "compiler/analysis/donation.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "compiler/ir/parser.h"

namespace kiln::analysis {
namespace {

// %h (512 bytes) is read through a view of a view (bytes [256 + 64,
// 256 + 128)) and directly (all of it); the target %t is written at
// [0, 256) by %a, then [256, 512) by %b, then [0, 16) by a fill.
constexpr char kProgram[] = R"(
"func.func"() ({
^bb0(%arg0: tensor<128xf32>):
  %h = "stream.tensor.import"(%arg0) {consume = true, size = 512 : i64} : (tensor<128xf32>) -> !stream.resource<external>
  %h1 = "stream.async.slice"(%h) {length = 256 : i64, offset = 256 : i64} : (!stream.resource<external>) -> !stream.resource<external>
  %h1b = "stream.async.slice"(%h1) {length = 64 : i64, offset = 64 : i64} : (!stream.resource<external>) -> !stream.resource<external>
  %g = "stream.async.dispatch"(%h1b) {entry = @neg, sizes = [64], tied_operands = [-1]} : (!stream.resource<external>) -> !stream.resource<transient>
  %t = "stream.async.alloca"() {size = 512 : i64} : () -> !stream.resource<transient>
  %a = "stream.async.dispatch"(%g, %t) {entry = @neg, result_element_offsets = [0], result_lengths = [256], result_offsets = [0], sizes = [512], tied_operands = [1]} : (!stream.resource<transient>, !stream.resource<transient>) -> !stream.resource<transient>
  %w = "stream.async.dispatch"(%h) {entry = @neg, sizes = [512], tied_operands = [-1]} : (!stream.resource<external>) -> !stream.resource<transient>
  %b = "stream.async.dispatch"(%g, %a) {entry = @neg, result_element_offsets = [0], result_lengths = [256], result_offsets = [256], sizes = [512], tied_operands = [1]} : (!stream.resource<transient>, !stream.resource<transient>) -> !stream.resource<transient>
  %f = "stream.async.fill"(%b) {length = 16 : i64, offset = 0 : i64, pattern = 0 : i64, size = 512 : i64} : (!stream.resource<transient>) -> !stream.resource<transient>
  %e = "stream.tensor.export"(%f) {size = 512 : i64} : (!stream.resource<transient>) -> tensor<128xf32>
  "func.return"(%e, %w) : (tensor<128xf32>, !stream.resource<transient>) -> ()
}) {sym_name = "main"} : () -> ()
)";

struct Parsed {
  std::unique_ptr<ir::Module> module;
  std::vector<ir::Operation*> ops;  // the entry block's ops, in order
  std::map<ir::Operation*, int64_t> step;
};

Parsed Parse(const char* text) {
  Parsed p;
  auto parsed = ir::ParseModule(text, "<test>");
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  if (!parsed.ok()) return p;
  p.module = std::move(parsed.value());
  for (auto& op : p.module->functions()[0]->region(0)->block(0)->ops()) {
    p.step[op.get()] = static_cast<int64_t>(p.ops.size());
    p.ops.push_back(op.get());
  }
  return p;
}

TEST(DonationTest, ReadsThroughViewsCarryTheirByteRanges) {
  Parsed p = Parse(kProgram);
  ASSERT_EQ(p.ops.size(), 11u);
  std::vector<ByteAccess> reads = ReadsOf(p.ops[0]->result(0), 512);
  ASSERT_EQ(reads.size(), 2u);
  // %g reads %h1b: 256 + 64 = byte 320, 64 bytes; %w reads all of %h.
  EXPECT_EQ(reads[0].op, p.ops[3]);
  EXPECT_EQ(reads[0].begin, 320);
  EXPECT_EQ(reads[0].end, 384);
  EXPECT_EQ(reads[1].op, p.ops[6]);
  EXPECT_EQ(reads[1].begin, 0);
  EXPECT_EQ(reads[1].end, 512);
}

TEST(DonationTest, WritesOfAnInPlaceConcatChainArePieceByPiece) {
  Parsed p = Parse(kProgram);
  ChainWrites w = WritesInto(p.ops[4]->result(0), 512);
  ASSERT_TRUE(w.ok);
  ASSERT_EQ(w.writes.size(), 3u);
  EXPECT_EQ(w.writes[0].op, p.ops[5]);
  EXPECT_EQ(w.writes[0].begin, 0);
  EXPECT_EQ(w.writes[0].end, 256);
  EXPECT_EQ(w.writes[1].op, p.ops[7]);
  EXPECT_EQ(w.writes[1].begin, 256);
  EXPECT_EQ(w.writes[1].end, 512);
  EXPECT_EQ(w.writes[2].op, p.ops[8]);
  EXPECT_EQ(w.writes[2].begin, 0);
  EXPECT_EQ(w.writes[2].end, 16);
  // Not an alloca: no piecewise writes.
  EXPECT_FALSE(WritesInto(p.ops[3]->result(0), 64).ok);
}

TEST(DonationTest, AReadConflictsOnlyWithAnEarlierWriteOfItsBytes) {
  Parsed p = Parse(kProgram);
  auto step = [&](ir::Operation* op) -> int64_t {
    auto it = p.step.find(op);
    return it == p.step.end() ? -1 : it->second;
  };
  std::vector<ByteAccess> writes = WritesInto(p.ops[4]->result(0), 512).writes;
  // %w (step 6) reads all of %h after %a (step 5) wrote [0, 256).
  std::vector<ByteAccess> reads = ReadsOf(p.ops[0]->result(0), 512);
  const ByteAccess* c = FirstConflict(reads, writes, step);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->op, p.ops[6]);
  // %g (step 3) alone reads [320, 384) before %b (step 7) writes it.
  std::vector<ByteAccess> only_g = {reads[0]};
  EXPECT_EQ(FirstConflict(only_g, writes, step), nullptr);
  // The same read at %a's step but of bytes %a does not write: no conflict;
  // of bytes it writes: a conflict (a producer reading under its own piece).
  EXPECT_EQ(FirstConflict({{p.ops[5], 256, 512}}, {writes[0]}, step), nullptr);
  EXPECT_NE(FirstConflict({{p.ops[5], 0, 4}}, {writes[0]}, step), nullptr);
  // A read outside the steps given (step -1) conflicts with any overlap.
  EXPECT_NE(FirstConflict({{nullptr, 0, 4}}, {writes[0]}, step), nullptr);
}

// Value 0 may take donor 0 or 1, value 1 only donor 0: greedy would give
// value 0 donor 0 and value 1 none; the matching serves both. Where greedy
// serves every value, its choice stands.
TEST(DonationTest, DonorsAreMatchedNotTakenGreedily) {
  EXPECT_EQ(MatchDonors({{0, 1}, {0}}), (std::vector<int>{1, 0}));
  EXPECT_EQ(MatchDonors({{0, 1}, {1}}), (std::vector<int>{0, 1}));
  EXPECT_EQ(MatchDonors({{0}, {0}, {}}), (std::vector<int>{0, -1, -1}));
  EXPECT_EQ(MatchDonors({{1, 0}, {1}, {0}}), (std::vector<int>{0, 1, -1}));
}

}  // namespace
}  // namespace kiln::analysis
