// The storage plan's IR form (storage_plan.h): a plan written into a
// function reads back the same, through the printer and the parser too, and
// a malformed plan is a clear error naming what is wrong.
#include "compiler/analysis/storage_plan.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"

namespace kiln::analysis {
namespace {

// One argument imported, a dispatch into a transient, a dispatch returned.
constexpr char kProgram[] = R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %0 = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %1 = "stream.async.dispatch"(%0) {entry = @neg, sizes = [16], tied_operands = [-1]} : (!stream.resource<external>) -> !stream.resource<transient>
  %2 = "stream.async.dispatch"(%1) {entry = @neg, sizes = [16], tied_operands = [-1]} : (!stream.resource<transient>) -> !stream.resource<transient>
  %3 = "stream.tensor.export"(%2) {size = 16 : i64} : (!stream.resource<transient>) -> tensor<4xf32>
  "func.return"(%3) : (tensor<4xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

ir::Operation* OpAt(ir::Operation* func, unsigned i) {
  auto it = func->region(0)->block(0)->ops().begin();
  std::advance(it, i);
  return it->get();
}

StoragePlan MakePlan(ir::Operation* func) {
  StoragePlan plan;
  StorageSlot arg;
  arg.kind = StorageSlot::kArgument;
  arg.index = 0;
  StorageSlot arena;
  arena.kind = StorageSlot::kArena;
  arena.offset = 256;
  arena.length = 16;
  StorageSlot out;
  out.kind = StorageSlot::kOutput;
  out.index = 0;
  out.slot = 1;
  out.length = 16;
  plan.storages = {arg, arena, out};
  plan.values[OpAt(func, 0)->result(0)] = {0, 0};
  plan.values[OpAt(func, 1)->result(0)] = {1, 0};
  plan.values[OpAt(func, 2)->result(0)] = {2, 0};
  plan.arena_size = 512;
  plan.live_bytes_peak = 256;
  return plan;
}

TEST(StoragePlanTest, RoundTripsThroughTheIrAndItsText) {
  auto parsed = ir::ParseModule(kProgram, "<test>");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  ir::Operation* func = parsed.value()->functions()[0];
  WriteStoragePlan(func, MakePlan(func));
  std::string text = ir::PrintModule(*parsed.value());
  EXPECT_NE(text.find(R"(storages = [["argument", 0 : i64], ["arena", 256 : i64, 16 : i64], ["output", 0 : i64, 1 : i64, 16 : i64]])"),
            std::string::npos)
      << text;
  auto reparsed = ir::ParseModule(text, "<printed>");
  ASSERT_TRUE(reparsed.ok()) << reparsed.status().message();
  ir::Operation* f2 = reparsed.value()->functions()[0];
  StatusOr<StoragePlan> plan = ReadStoragePlan(f2);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan.value().storages.size(), 3u);
  EXPECT_EQ(plan.value().storages[1].kind, StorageSlot::kArena);
  EXPECT_EQ(plan.value().storages[1].offset, 256);
  EXPECT_EQ(plan.value().storages[1].length, 16);
  EXPECT_EQ(plan.value().storages[2].kind, StorageSlot::kOutput);
  EXPECT_EQ(plan.value().storages[2].slot, 1);
  EXPECT_EQ(plan.value().storages[2].first, -1);
  EXPECT_EQ(plan.value().arena_size, 512);
  EXPECT_EQ(plan.value().live_bytes_peak, 256);
  ASSERT_EQ(plan.value().values.size(), 3u);
  EXPECT_EQ(plan.value().values.at(OpAt(f2, 1)->result(0)).id, 1);
  EXPECT_EQ(plan.value().values.at(OpAt(f2, 2)->result(0)).id, 2);
}

TEST(StoragePlanTest, MissingPlanIsAFailedPrecondition) {
  auto parsed = ir::ParseModule(kProgram, "<test>");
  ASSERT_TRUE(parsed.ok());
  StatusOr<StoragePlan> plan = ReadStoragePlan(parsed.value()->functions()[0]);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(plan.status().message().find("run --schedule-allocation"), std::string::npos) << plan.status().message();
}

TEST(StoragePlanTest, MalformedPlansAreNamedErrors) {
  struct Case {
    const char* what;
    std::function<void(ir::Operation*)> spoil;
    const char* message;
  };
  const Case cases[] = {
      {"unknown kind",
       [](ir::Operation* f) {
         f->set_attr("storages", ir::MakeListAttr({ir::MakeListAttr({ir::Attribute(std::string("heap"))})}));
       },
       "storage 0 has no known kind"},
      {"id out of range",
       [](ir::Operation* f) { OpAt(f, 1)->set_attr("storage", ir::Attribute(std::vector<int64_t>{7})); },
       "storage[0] = 7 is not a storage"},
      {"resource without an id",
       [](ir::Operation* f) {
         OpAt(f, 2)->remove_attr("storage");
         OpAt(f, 2)->remove_attr("storage_offset");
       },
       "needs storage and storage_offset"},
      {"negative length",
       [](ir::Operation* f) {
         f->set_attr("storages",
                     ir::MakeListAttr({ir::MakeListAttr({ir::Attribute(std::string("arena")), ir::Attribute(int64_t{0}),
                                                         ir::Attribute(int64_t{-16})})}));
       },
       "missing or negative fields"},
      {"a result-copy group's first storage that is not an earlier one",
       [](ir::Operation* f) {
         auto out = [](int64_t first) {
           return ir::MakeListAttr({ir::Attribute(std::string("output")), ir::Attribute(int64_t{0}),
                                    ir::Attribute(int64_t{1}), ir::Attribute(int64_t{16}), ir::Attribute(first)});
         };
         f->set_attr("storages", ir::MakeListAttr({out(0)}));
       },
       "missing or negative fields"},
  };
  for (const Case& c : cases) {
    auto parsed = ir::ParseModule(kProgram, "<test>");
    ASSERT_TRUE(parsed.ok());
    ir::Operation* func = parsed.value()->functions()[0];
    WriteStoragePlan(func, MakePlan(func));
    c.spoil(func);
    StatusOr<StoragePlan> plan = ReadStoragePlan(func);
    ASSERT_FALSE(plan.ok()) << c.what;
    EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument) << c.what;
    EXPECT_NE(plan.status().message().find(c.message), std::string::npos) << c.what << ": " << plan.status().message();
  }
}

}  // namespace
}  // namespace kiln::analysis
