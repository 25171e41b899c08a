#include "compiler/transforms/transient_planner.h"

#include <gtest/gtest.h>

namespace kiln::transforms {
namespace {

TEST(TransientPlannerTest, DisjointLifetimesShareBytes) {
  // A (steps 0-1) and C (steps 2-3) never coexist: C reuses A's bytes.
  auto plan = PlanTransients({{1000, 0, 1}, {500, 1, 2}, {1000, 2, 3}}, 256);
  EXPECT_EQ(plan.offsets[0], 0);
  EXPECT_EQ(plan.offsets[2], 0);
  EXPECT_EQ(plan.offsets[1], 1024);  // 1000 rounded up to 256
  EXPECT_EQ(plan.arena_size, 1024 + 512);
}

TEST(TransientPlannerTest, OverlappingLifetimesNeverOverlapInMemory) {
  std::vector<TransientRequest> reqs;
  for (int i = 0; i < 40; ++i) reqs.push_back({(i * 37 % 11 + 1) * 100, i % 7, i % 7 + i % 5});
  auto plan = PlanTransients(reqs, 64);
  for (size_t a = 0; a < reqs.size(); ++a) {
    EXPECT_EQ(plan.offsets[a] % 64, 0);
    EXPECT_LE(plan.offsets[a] + reqs[a].size, plan.arena_size);
    for (size_t b = a + 1; b < reqs.size(); ++b) {
      bool live_together = !(reqs[a].last_use < reqs[b].first_use || reqs[b].last_use < reqs[a].first_use);
      bool bytes_overlap = plan.offsets[a] < plan.offsets[b] + reqs[b].size &&
                           plan.offsets[b] < plan.offsets[a] + reqs[a].size;
      EXPECT_FALSE(live_together && bytes_overlap) << a << " vs " << b;
    }
  }
}

TEST(TransientPlannerTest, EmptyPlan) {
  auto plan = PlanTransients({}, 256);
  EXPECT_EQ(plan.arena_size, 0);
}

}  // namespace
}  // namespace kiln::transforms
