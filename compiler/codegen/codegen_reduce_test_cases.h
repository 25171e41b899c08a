// Cases for the parallel reductions (reduce-group, softmax-rows; see
// schedule_reduce.cc): lanes per output from 1 to 64, segments past the last
// output in a workgroup, odd extents, extents not a multiple of the lanes or
// of the workgroup, one-element rows; every reduce kind the schedule combines
// (sum, mean, max, min) and softmax rows of 1, 7, 128 and 1000 elements.
// Checked against the double-precision references of codegen_test_util.h.
// Included by codegen_test_cases.h (AllCases).
#ifndef KILN_COMPILER_CODEGEN_CODEGEN_REDUCE_TEST_CASES_H_
#define KILN_COMPILER_CODEGEN_CODEGEN_REDUCE_TEST_CASES_H_

#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace kiln::codegen::testing {


template <typename Add>
void AddReduceCases(Add& add) {
  auto reduce = [&](std::string name, Shape shape, std::string kind, std::vector<int64_t> axes,
                    bool keep, std::string schedule) {
    add([=] {
      Case c(name);
      T x = Random(shape, 200 + static_cast<uint32_t>(shape.back()), -3, 3);
      c.In(x);
      T r = RefReduce(x, kind, axes, keep);
      c.Out(r);
      auto& b = c.Build();
      c.Return({b.Op("tensor.reduce", {b.arg(0)}, F32(r.shape),
                     {{"kind", ir::Attribute(kind)}, {"axes", Ints(axes)}, {"keepdims", keep}})});
      c.schedule = schedule;
      c.atol = 2e-6 * std::sqrt(static_cast<double>(x.size()));
      return c;
    });
  };
  // 77 elements: 8 lanes, 5 outputs in one workgroup of 8 segments (3 dead).
  reduce("reduce_odd_sum", {5, 77}, "sum", {1}, false, "reduce-group: 8 lanes");
  reduce("reduce_odd_max", {5, 77}, "max", {1}, false, "reduce-group: 8 lanes");
  // 37 outputs, 4 per workgroup: the last workgroup has one live segment.
  reduce("reduce_min_37rows", {37, 130}, "min", {1}, true, "reduce-group: 16 lanes");
  reduce("reduce_mean_37rows", {37, 130}, "mean", {1}, true, "reduce-group: 16 lanes");
  // 1001 elements (not a multiple of 64) into one output: 64 lanes.
  reduce("reduce_max_1001", {3, 1001}, "max", {1}, false, "reduce-group: 64 lanes");
  reduce("reduce_sum_1001", {3, 1001}, "sum", {1}, false, "reduce-group: 64 lanes");
  // PP-OCR cls's GlobalAveragePools: 200 channels of 2x96, and 7x7 / 1x1.
  reduce("gap_200x2x96", {1, 200, 2, 96}, "mean", {2, 3}, true, "reduce-group: 8 lanes");
  reduce("gap_7x7", {1, 96, 7, 7}, "mean", {2, 3}, true, "pointwise");
  reduce("gap_1x1", {1, 40, 1, 1}, "mean", {2, 3}, true, "pointwise");
  // One-element rows and a single element.
  reduce("reduce_sum_1elem_rows", {7, 1}, "sum", {1}, false, "pointwise");
  reduce("reduce_max_single", {1}, "max", {0}, true, "pointwise");
  // Reduced axis in the middle (not a suffix) with several lanes.
  reduce("reduce_min_middle", {3, 150, 5}, "min", {1}, false, "reduce-group");

  auto softmax = [&](std::string name, Shape xs, int64_t axis, bool log, std::string sched) {
    add([=] {
      Case c(name);
      T x = Random(xs, 300 + static_cast<uint32_t>(xs[axis]), -6, 6);
      c.In(x);
      c.Out(RefSoftmax(x, axis, log));
      auto& b = c.Build();
      c.Return({b.Op("tensor.softmax", {b.arg(0)}, F32(xs), {{"axis", axis}, {"log", log}})});
      c.schedule = sched;
      c.atol = 1e-6;
      return c;
    });
  };
  softmax("softmax_len1", {3, 1}, 1, false, "softmax-rows: one invocation");
  softmax("softmax_len7", {5, 7}, 1, false, "softmax-rows: one invocation");
  softmax("softmax_len128", {6, 128}, 1, false, "softmax-rows: 16 lanes");
  softmax("softmax_len1000", {2, 1000}, 1, false, "softmax-rows: 64 lanes");
  softmax("logsoftmax_len1000", {3, 1000}, 1, true, "softmax-rows: 64 lanes");
  // 5 rows of 128 along a middle axis, 4 rows per workgroup (3 dead segments).
  softmax("softmax_len128_middle", {1, 128, 5}, 1, false, "softmax-rows: 16 lanes");
}

}  // namespace kiln::codegen::testing

#endif  // KILN_COMPILER_CODEGEN_CODEGEN_REDUCE_TEST_CASES_H_
