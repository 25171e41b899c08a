// Codegen: flow.dispatch -> GLSL 450 compute shader -> SPIR-V.
//
// Model. Every tensor value inside the dispatch region can be *evaluated at a
// multi-index*: Eval(v, idx) emits GLSL statements that compute element `idx`
// of `v` into a local variable and returns its name. Block arguments load
// from their storage buffer; elementwise ops evaluate their operands at the
// broadcast-adjusted index and combine them; "anchor" ops (conv2d, matmul,
// reduce, pool2d, softmax, ...) emit a scoped block with their window /
// reduction loops. Values evaluated twice at the same index are reused (a
// scoped CSE cache keyed by value and index text), so a DAG-shaped epilogue
// (hard-swish: x * hard_sigmoid(x)) computes its producer once. Producers that
// are evaluated at several indices (a prologue feeding a conv) are recomputed,
// which is correct for any DAG but only efficient for the shapes the fusion
// pass forms (anchor + same-shaped elementwise epilogue).
//
// Schedules (workgroup size is always 64 x 1 x 1; a grid wider than
// CodegenOptions::max_workgroup_count folds into y and is guarded):
//   pointwise: one invocation per element of the results (grouped by shape;
//              results of a smaller shape are guarded). Used for elementwise
//              chains, data-movement anchors, pool2d, small reductions, and
//              as the fallback for every other anchor. tensor.conv_transpose
//              with 1 or 3 spatial dims runs here: a gather over its
//              contributing taps per output element
//              (conv_transpose_schedule.h).
//   conv-tiled: tensor.conv2d: one invocation per TO output channels x TW
//              columns (schedule_table.h SelectConvTile: up to 8 x 8, 1 x 16
//              for depthwise); one input row per (channel, kh) is loaded
//              once and reused across kw and the TW columns.
//   conv-transpose-tiled: tensor.conv_transpose with 2 spatial dims: one
//              invocation per TO output channels x TW columns of one stride
//              phase of an output row (schedule_table.h
//              SelectConvTransposeTile, conv_transpose_schedule.h); per tap
//              and input channel TW inputs and TO weights are loaded once.
//   conv-transpose-upsample: the same with stride == kernel (no pads,
//              dilation or output_padding) where it loads less: one
//              invocation per TO output channels x TW input columns, each
//              input pixel's KH x KW outputs; input rows and weights read
//              as vec4 texels where admitted (SelectConvTransposeTexels).
//   matmul-tiled: tensor.matmul: one invocation per TM x TN output block
//              (SelectMatmulTile); A's rows along K and B's rows along N
//              read as vec4 texels where admitted.
//   matmul-splitk: tensor.matmul with <= 1024 outputs and K >= 256: one
//              workgroup per output, lanes split K, shared-memory sum.
//   reduce-group: tensor.reduce: a segment of L lanes per output element
//              (L a power of two <= 64 from Generator::ReduceLanes: >= 16
//              elements per lane, more lanes while the grid is small), 64 / L
//              outputs per workgroup; lanes stride over the reduced elements
//              and combine through a shared-memory tree over the segment;
//              lane 0 of each segment runs the epilogue. L == 1 (short rows:
//              a 7x7 or 1x1 GlobalAveragePool) is the pointwise schedule, one
//              invocation per output.
//   softmax-rows: tensor.softmax: a segment of L lanes per row (the same
//              ReduceLanes; max and sum through shared memory) or one
//              invocation per row (L == 1); each row's outputs are written
//              with the epilogue applied.
//   workgroup-staged: a region --fuse-workgroup-stages merged from a chain
//              of small dispatches (ops marked `workgroup_stage`): one
//              workgroup computes each marked value into shared memory, a
//              barrier between stages, then the results
//              (schedule_staged.cc).
// All but pointwise and workgroup-staged need exactly one anchor and every result to have the
// anchor's shape (the epilogue then runs per anchor element); otherwise the
// dispatch falls back to pointwise (always correct).
//
// Element types (compute type in registers / storage type in buffers):
//   f32 float/float   i32 int/int   i64 int64_t/int64_t (shaderInt64)
//   i8 int/int8_t  u8 uint/uint8_t  i1 bool/uint8_t (0 or 1)
//   f16 float/float16_t  bf16 float/uint16_t (the bits)  i16 int/int16_t
//   u16 uint/uint16_t  u32 uint/uint  u64 uint64_t/uint64_t (shaderInt64)
//   f64 double/double (shaderFloat64)
// 8-bit tensors use GL_EXT_shader_8bit_storage (+ int8 arithmetic types for
// the conversions), so the device needs storageBuffer8BitAccess and
// shaderInt8; 16-bit tensors GL_EXT_shader_16bit_storage
// (storageBuffer16BitAccess only: no 16-bit arithmetic);
// CompiledDispatch::requires_* say which features a shader uses, and the
// runtime checks the SPIR-V capabilities against the device at load
// (hal/vulkan/vulkan_executable.cc).
#include "compiler/codegen/codegen.h"

#include <glslang/Include/glslang_c_interface.h>
#include <glslang/Public/resource_limits_c.h>

#include <spirv-tools/libspirv.hpp>
#include <spirv-tools/optimizer.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <set>

#include "compiler/codegen/f16_arithmetic.h"
#include "compiler/codegen/generator.h"
#include "compiler/ir/conv_transpose.h"

namespace kiln::codegen {
namespace {

// spirv-opt's -O recipe as SPIRV-Tools 2023.1 (Debian bookworm) registers it
// in Optimizer::RegisterPerformancePasses, less --loop-unroll (see the call
// site). Listed by flag so that the order stays spirv-opt's.
std::vector<std::string> SizeAwarePerformancePasses() {
  return {"--wrap-opkill", "--eliminate-dead-branches", "--merge-return",
          "--inline-entry-points-exhaustive", "--eliminate-dead-functions",
          "--eliminate-dead-code-aggressive", "--private-to-local",
          "--eliminate-local-single-block", "--eliminate-local-single-store",
          "--eliminate-dead-code-aggressive", "--scalar-replacement",
          "--convert-local-access-chains", "--eliminate-local-single-block",
          "--eliminate-local-single-store", "--eliminate-dead-code-aggressive", "--ssa-rewrite",
          "--eliminate-dead-code-aggressive", "--ccp", "--eliminate-dead-code-aggressive",
          "--eliminate-dead-branches", "--redundancy-elimination", "--combine-access-chains",
          "--simplify-instructions", "--scalar-replacement", "--convert-local-access-chains",
          "--eliminate-local-single-block", "--eliminate-local-single-store",
          "--eliminate-dead-code-aggressive", "--ssa-rewrite", "--eliminate-dead-code-aggressive",
          "--vector-dce", "--eliminate-dead-inserts", "--eliminate-dead-branches",
          "--simplify-instructions", "--if-conversion", "--copy-propagate-arrays",
          "--reduce-load-size", "--eliminate-dead-code-aggressive", "--merge-blocks",
          "--redundancy-elimination", "--eliminate-dead-branches", "--merge-blocks",
          "--simplify-instructions"};
}

// Identical kernels (many dispatches of one op on one shape, a block
// repeated through a network) compile to SPIR-V once per process: the
// final SPIR-V is cached by the GLSL text less its comments (which name the
// dispatch and its ONNX nodes) and the SPIR-V options. Bounded: cleared
// when it holds kMaxEntries.
class SpirvCache {
 public:
  static std::string Key(const std::string& glsl, const CodegenOptions& options) {
    std::string key(1, static_cast<char>('0' + (options.optimize_spirv ? 1 : 0) + (options.validate_spirv ? 2 : 0) +
                                         (options.unroll_in_module ? 4 : 0)));
    key.reserve(glsl.size());
    for (size_t i = 0; i < glsl.size();) {  // comments dropped (GLSL has no strings)
      size_t eol = glsl.find('\n', i);
      if (eol == std::string::npos) eol = glsl.size();
      size_t comment = glsl.find("//", i);
      key.append(glsl, i, (comment < eol ? comment : eol) - i);
      key.push_back('\n');
      i = eol + 1;
    }
    return key;
  }
  static bool Lookup(const std::string& key, std::vector<uint32_t>* spirv) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = map().find(key);
    if (it == map().end()) return false;
    *spirv = it->second;
    return true;
  }
  static void Insert(const std::string& key, const std::vector<uint32_t>& spirv) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (map().size() >= kMaxEntries) map().clear();
    map().emplace(key, spirv);
  }

 private:
  static constexpr size_t kMaxEntries = 4096;
  static std::map<std::string, std::vector<uint32_t>>& map() {
    static auto* m = new std::map<std::string, std::vector<uint32_t>>();
    return *m;
  }
  static inline std::mutex mutex_;
};

}  // namespace

namespace detail {

constexpr size_t kMaxRegionOps = 1024;

// The geometry SelectConvTransposeTile reads (spatial 0, so pointwise, for
// an op whose attributes do not verify: the gather reports the error).
ConvTransposeShape ConvTransposeShapeOf(const Operation* op) {
  ConvTransposeShape c;
  ir::ConvTransposeParams p;
  std::string error;
  if (!ir::GetConvTransposeParams(*op, &p, &error)) return c;
  c.spatial = p.spatial;
  c.input = op->operand(0)->type().shape;
  c.weights = op->operand(1)->type().shape;
  c.out = op->result()->type().shape;
  c.strides = p.strides;
  c.dilations = p.dilations;
  c.pads = p.pads;
  c.output_padding = p.output_padding;
  return c;
}

StatusOr<CompiledDispatch> Generator::Run() {
  if (!dispatch_ || !dispatch_->is(ir::OpCode::kFlowDispatch) || dispatch_->num_regions() != 1 ||
      dispatch_->region(0)->num_blocks() != 1)
    return InvalidArgumentError("codegen: expected a flow.dispatch op with one single-block region");
  block_ = dispatch_->region(0)->block(0);
  Operation* term = block_->terminator();
  if (!term || !term->is(ir::OpCode::kFlowReturn))
    return InvalidArgumentError("codegen: dispatch region must end in flow.return");
  if (block_->num_arguments() != dispatch_->num_operands())
    return InvalidArgumentError("codegen: dispatch block arguments must mirror its operands");
  if (term->num_operands() != dispatch_->num_results() || term->num_operands() == 0)
    return InvalidArgumentError("codegen: flow.return operands must match the dispatch results");
  for (unsigned i = 0; i < block_->num_arguments(); ++i) arg_binding_[block_->argument(i)] = i;
  results_ = term->operands();
  KILN_RETURN_IF_ERROR(CheckOps());
  for (unsigned k = 0; k < dispatch_->num_results(); ++k) {
    const ir::Type& t = dispatch_->result(k)->type();
    if (!t.is_tensor() || !SupportedDType(t.dtype))
      return Unsupported(dispatch_, "result type " + t.ToString());
    if (t.shape != ShapeOf(results_[k]))
      return InvalidArgumentError("codegen: result %u shape differs from flow.return operand", k);
  }

  // Element evaluation recurses through the region's expression DAG
  // (generator_eval.cc): bound its depth with a clear error. Fusion makes
  // regions of at most 64 ops; a hand-written region may be larger.
  if (block_->ops().size() > kMaxRegionOps)
    return InvalidArgumentError("codegen: dispatch '%s' holds %zu ops, more than the %zu one region may hold",
                                dispatch_->str_attr("name", "dispatch").c_str(), block_->ops().size(),
                                kMaxRegionOps);
  CompiledDispatch out;
  out.debug_name = dispatch_->str_attr("name", "dispatch");
  const unsigned N = dispatch_->num_operands(), R = dispatch_->num_results();
  out.binding_count = N + R;
  out.binding_readonly.assign(N, true);
  out.binding_readonly.resize(N + R, false);

  // ---- schedule ----
  std::vector<Operation*> anchors;
  for (auto& owned : block_->ops())
    if (IsAnchorOp(owned.get())) anchors.push_back(owned.get());
  // The anchor-specific schedules need one anchor whose shape every result
  // has (the epilogue then runs per anchor element).
  Operation* anchor = anchors.size() == 1 ? anchors[0] : nullptr;
  bool same = anchor != nullptr;
  for (Value* v : results_) same = same && ShapeOf(v) == ShapeOf(anchor->result());
  if (!same) anchor = nullptr;
  const ir::OpCode kind = anchor ? anchor->code() : ir::OpCode::kUnknown;

  cache_.emplace_back();
  uint32_t wx = 1, wy = 1;
  auto invocations = [&](uint64_t n) {
    return Grid((n + kWorkgroupSize - 1) / kWorkgroupSize, &wx, &wy);
  };
  int reduce_lanes = 1;
  if (kind == ir::OpCode::kTensorReduce) {
    int64_t count = 1;
    for (int64_t ax : ReduceAxes(anchor)) count *= ShapeOf(anchor->operand(0))[ax];
    reduce_lanes = ReduceLanes(count, NumElements(ShapeOf(anchor->result())));
  }
  if (HasStages()) {
    schedule_comment_ = "workgroup-staged: one workgroup, each stage's value in shared memory";
    EmitStagedMain();
  } else if (kind == ir::OpCode::kTensorReduce && reduce_lanes > 1) {
    uint64_t rows = static_cast<uint64_t>(NumElements(ShapeOf(anchor->result())));
    uint64_t per_group = static_cast<uint64_t>(kWorkgroupSize / reduce_lanes);
    KILN_RETURN_IF_ERROR(Grid((rows + per_group - 1) / per_group, &wx, &wy));
    schedule_comment_ = "reduce-group: " + std::to_string(reduce_lanes) + " lanes per output (" +
                        std::to_string(rows) + " outputs, " + std::to_string(per_group) +
                        " per workgroup)";
    EmitReduceGroupMain(anchor, reduce_lanes, wx, wy);
  } else if (kind == ir::OpCode::kTensorSoftmax) {
    Shape row_shape = ShapeOf(anchor->operand(0));
    int64_t axis = anchor->int_attr("axis", static_cast<int64_t>(row_shape.size()) - 1);
    if (axis < 0) axis += static_cast<int64_t>(row_shape.size());
    const int64_t extent = row_shape[axis];
    row_shape.erase(row_shape.begin() + axis);
    uint64_t rows = static_cast<uint64_t>(NumElements(row_shape));
    int lanes = ReduceLanes(extent, static_cast<int64_t>(rows));
    if (lanes > 1) {
      uint64_t per_group = static_cast<uint64_t>(kWorkgroupSize / lanes);
      KILN_RETURN_IF_ERROR(Grid((rows + per_group - 1) / per_group, &wx, &wy));
    } else {
      KILN_RETURN_IF_ERROR(invocations(rows));
    }
    schedule_comment_ = "softmax-rows: " +
                        (lanes > 1 ? std::to_string(lanes) + " lanes" : std::string("one invocation")) +
                        " per row (" + std::to_string(rows) + " rows)";
    EmitSoftmaxRowsMain(anchor, lanes, wx, wy);
  } else if (kind == ir::OpCode::kTensorConv2d) {
    const Shape& ws = ShapeOf(anchor->operand(1));
    std::vector<int64_t> st = anchor->ints_attr("strides"), dil = anchor->ints_attr("dilations");
    const bool flat = ConvFlattensPositions(ShapeOf(anchor->operand(0)), ws, st, anchor->ints_attr("pads"));
    const Shape os = ConvTileShape(ShapeOf(anchor->result()), flat);
    const ConvTile tile = SelectConvTile(os, ws, std::max<int64_t>(anchor->int_attr("group", 1), 1),
                                         st.size() == 2 ? st[1] : 1, dil.size() == 2 ? dil[1] : 1);
    const ConvTexels texels = SelectConvTexels(
        ConvTileShape(ShapeOf(anchor->operand(0)), flat), ws, st.size() == 2 ? st[1] : 1,
        dil.size() == 2 ? dil[1] : 1, tile,
        ElementwiseSource(anchor->operand(0)) &&
            TexelEligibleBinding(ElementwiseSource(anchor->operand(0))) >= 0,
        TexelEligibleBinding(anchor->operand(1)) >= 0);
    const int64_t to = tile.channels, tw = tile.columns;
    uint64_t tiles = static_cast<uint64_t>(os[0] * (ws[0] / to) * os[2] * ((os[3] + tw - 1) / tw));
    KILN_RETURN_IF_ERROR(invocations(tiles));
    schedule_comment_ = "conv-tiled: one invocation per " + std::to_string(to) + "x" + std::to_string(tw) +
                        (flat ? " (channel x position) tile (" : " (channel x column) tile (") +
                        std::to_string(tiles) +
                        " invocations)" + (texels.input ? ", input as texels" : "") +
                        (texels.weights ? ", weights as texels" : "") +
                        (texels.weight_kernels ? ", weight kernels as texels" : "") +
                        (texels.weight_rows ? ", weight rows as texels" : "");
    EmitConvTiledMain(anchor, to, tw, texels, wx, wy);
  } else if (kind == ir::OpCode::kTensorConvTranspose &&
             SelectConvTransposeTile(ConvTransposeShapeOf(anchor)).kind != ConvTransposeSchedule::kPointwise) {
    const ConvTransposeShape c = ConvTransposeShapeOf(anchor);
    const ConvTransposeSchedule sched = SelectConvTransposeTile(c);
    const int64_t to = sched.tile.channels, tw = sched.tile.columns;
    const Shape& os = c.out;
    uint64_t tiles = 0;
    ConvTexels texels;
    if (sched.kind == ConvTransposeSchedule::kUpsample)
      texels = SelectConvTransposeTexels(c, sched.tile, TexelEligibleBinding(anchor->operand(0)) >= 0,
                                         TexelEligibleBinding(anchor->operand(1)) >= 0);
    if (sched.kind == ConvTransposeSchedule::kPhase) {
      const int64_t sw = c.strides[1], phases = std::min(sw, os[3]), per_phase = (os[3] + sw - 1) / sw;
      tiles = static_cast<uint64_t>(os[0] * (os[1] / to) * os[2] * phases * ((per_phase + tw - 1) / tw));
      schedule_comment_ = "conv-transpose-tiled: one invocation per " + std::to_string(to) + "x" +
                          std::to_string(tw) + " (channel x column of one stride phase) tile (";
    } else {
      tiles = static_cast<uint64_t>(os[0] * (os[1] / to) * c.input[2] * ((c.input[3] + tw - 1) / tw));
      schedule_comment_ = "conv-transpose-upsample: one invocation per " + std::to_string(to) + "x" +
                          std::to_string(tw) + " (channel x input column, " + std::to_string(c.weights[2]) +
                          "x" + std::to_string(c.weights[3]) + " outputs each) tile (";
    }
    schedule_comment_ += std::to_string(tiles) + " invocations)" + (texels.input ? ", input as texels" : "") +
                         (texels.weights ? ", weights as texels" : "");
    KILN_RETURN_IF_ERROR(invocations(tiles));
    if (sched.kind == ConvTransposeSchedule::kPhase)
      EmitConvTransposeTiledMain(anchor, to, tw, wx, wy);
    else
      EmitConvTransposeUpsampleMain(anchor, to, tw, texels, wx, wy);
  } else if (kind == ir::OpCode::kTensorMatmul && ShapeOf(anchor->operand(0)).size() >= 2 &&
             ShapeOf(anchor->operand(1)).size() >= 2) {
    const Shape& os = ShapeOf(anchor->result());
    int64_t K = ShapeOf(anchor->operand(0)).back(), M = os[os.size() - 2], N = os.back();
    uint64_t outputs = static_cast<uint64_t>(NumElements(os));
    if (outputs <= kSplitKMaxOutputs && K >= kSplitKMinDepth) {
      KILN_RETURN_IF_ERROR(Grid(outputs, &wx, &wy));
      schedule_comment_ = "matmul-splitk: one workgroup per output element (" +
                          std::to_string(outputs) + " workgroups)";
      EmitMatmulSplitKMain(anchor, wx, wy);
    } else {
      const int64_t batch = static_cast<int64_t>(outputs) / std::max<int64_t>(M * N, 1);
      const bool f32 = CTOf(anchor->result()) == CT::kF32;
      const MatmulTile tile =
          SelectMatmulTile(batch, M, N, K, f32 && TexelEligibleBinding(anchor->operand(0)) >= 0,
                           f32 && TexelEligibleBinding(anchor->operand(1)) >= 0);
      const int64_t tm = tile.rows, tn = tile.columns;
      uint64_t tiles = static_cast<uint64_t>(batch) *
                       static_cast<uint64_t>(((M + tm - 1) / tm) * ((N + tn - 1) / tn));
      KILN_RETURN_IF_ERROR(invocations(tiles));
      schedule_comment_ = "matmul-tiled: one invocation per " + std::to_string(tm) + "x" +
                          std::to_string(tn) + " tile (" + std::to_string(tiles) + " invocations)" +
                          (tile.a_texels ? ", A as texels" : "") + (tile.b_texels ? ", B as texels" : "");
      EmitMatmulTiledMain(anchor, tile, wx, wy);
    }
  } else {
    int64_t total = 0;
    for (Value* v : results_) total = std::max(total, NumElements(ShapeOf(v)));
    KILN_RETURN_IF_ERROR(invocations(static_cast<uint64_t>(total)));
    schedule_comment_ = "pointwise: one invocation per output element (" +
                        std::to_string(total) + " invocations)";
    EmitPointwiseMain(wx, wy);
  }
  if (!status_.ok()) return status_;
  if (!texel_.empty()) {
    out.binding_kinds.assign(N + R, 0);
    for (unsigned i = 0; i < N; ++i) out.binding_kinds[i] = IsTexel(static_cast<int>(i)) ? 1 : 0;
  }
  out.workgroup_size[0] = kWorkgroupSize;
  out.workgroup_count[0] = wx;
  out.workgroup_count[1] = wy;
  out.workgroup_count[2] = 1;

  // ---- assemble ----
  bool int64 = false, int8 = false, bit16 = false, fp64 = false;
  auto note = [&](DType t) {
    int64 |= t == DType::kI64 || t == DType::kU64;
    fp64 |= t == DType::kF64;
    int8 |= t == DType::kI8 || t == DType::kU8 || t == DType::kBool;
    bit16 |= DTypeSize(t) == 2;
  };
  for (Value* a : block_->arguments()) note(a->type().dtype);
  for (Value* r : dispatch_->results()) note(r->type().dtype);
  for (auto& owned : block_->ops())
    for (Value* r : owned->results())
      if (r->type().is_tensor()) {
        int64 |= r->type().dtype == DType::kI64 || r->type().dtype == DType::kU64;
        fp64 |= r->type().dtype == DType::kF64;
      }
  out.requires_int64 = int64;
  out.requires_8bit_storage = int8;
  out.requires_16bit_storage = bit16;
  out.requires_float64 = fp64;
  out.exact_fma = dispatch_->bool_attr("exact_fma");

  std::string g = "#version 450\n";
  g += "// Kiln dispatch '" + Sanitize(out.debug_name) + "' (generated by compiler/codegen)\n";
  g += "// schedule: " + schedule_comment_ + "\n";
  g += "// grid: " + std::to_string(wx) + " x " + std::to_string(wy) + " workgroups of " +
       std::to_string(kWorkgroupSize) + "\n";
  g += "// ops:\n";
  for (auto& owned : block_->ops()) {
    Operation* op = owned.get();
    if (op == term) continue;
    g += "//   " + Comment(op) + " -> " + op->result()->type().ToString() + "\n";
  }
  if (uses_ctrl_attr_) g += "#extension GL_EXT_control_flow_attributes : enable\n";
  if (int64) g += "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n";
  if (int8) {
    g += "#extension GL_EXT_shader_8bit_storage : require\n";
    g += "#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require\n";
  }
  if (bit16) g += "#extension GL_EXT_shader_16bit_storage : require\n";
  if (options_.f16_arithmetic)
    g += "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n";
  g += "layout(local_size_x = " + std::to_string(kWorkgroupSize) +
       ", local_size_y = 1, local_size_z = 1) in;\n";
  // `restrict` only where no other binding of this call site may name the
  // same bytes (CodegenOptions::aliased_bindings).
  auto restrict_kw = [&](unsigned b) {
    return b < options_.aliased_bindings.size() && options_.aliased_bindings[b] ? "" : "restrict ";
  };
  for (unsigned i = 0; i < N; ++i) {
    const ir::Type& t = block_->argument(i)->type();
    if (IsTexel(static_cast<int>(i))) {
      g += "layout(set = 0, binding = " + std::to_string(i) + ") uniform samplerBuffer in" + std::to_string(i) +
           "t;  // operand " + std::to_string(i) + ": " + t.ToString() + ", vec4 texels\n";
      continue;
    }
    g += "layout(set = 0, binding = " + std::to_string(i) + ", std430) " + restrict_kw(i) + "readonly buffer Arg" +
         std::to_string(i) + " { " + StorageType(t.dtype) + " in" + std::to_string(i) +
         "[]; };  // operand " + std::to_string(i) + ": " + t.ToString() + "\n";
  }
  for (unsigned k = 0; k < R; ++k) {
    const ir::Type& t = dispatch_->result(k)->type();
    g += "layout(set = 0, binding = " + std::to_string(N + k) + ", std430) " + restrict_kw(N + k) +
         "writeonly buffer Res" + std::to_string(k) + " { " +
         StorageType(t.dtype) + " out" + std::to_string(k) + "[]; };  // result " +
         std::to_string(k) + ": " + t.ToString() + "\n";
  }
  if (uses_shared_)
    g += "shared " + std::string(CTName(shared_ct_)) + " sh[" + std::to_string(kWorkgroupSize) +
         "];\n";
  g += globals_;
  for (const std::string& h : helpers_) g += h;
  g += "void main() {\n" + body_ + "}\n";
  out.glsl = std::move(g);

  const std::string cache_key = SpirvCache::Key(out.glsl, options_);
  if (SpirvCache::Lookup(cache_key, &out.spirv)) return out;
  KILN_ASSIGN_OR_RETURN(out.spirv, CompileGlslToSpirv(out.glsl, out.debug_name));
  if (options_.optimize_spirv) {
    spvtools::Optimizer opt(SPV_ENV_VULKAN_1_2);
    std::string msgs;
    opt.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t&,
                               const char* m) { msgs += std::string(m) + "\n"; });
    // By default spirv-opt's performance recipe (-O) without its
    // loop-unroll pass: loops marked [[unroll]] stay loops in the module,
    // with their Unroll hint for the driver's compiler (Mesa's NIR fully
    // unrolls such a loop when its trip count is known, and so do the
    // vendors' compilers). The driver compiles the same straight-line code;
    // the module carries the loop body once.
    if (options_.unroll_in_module) {
      opt.RegisterPerformancePasses();
    } else if (!opt.RegisterPassesFromFlags(SizeAwarePerformancePasses())) {
      return InternalError("codegen: spirv-opt rejected the pass list");
    }
    std::vector<uint32_t> optimized;
    if (!opt.Run(out.spirv.data(), out.spirv.size(), &optimized))
      return InternalError("codegen: spirv-opt failed on '%s': %s", out.debug_name.c_str(),
                           msgs.c_str());
    out.spirv = std::move(optimized);
    // Debug names and source are stripped: they do not change what the
    // driver compiles.
    spvtools::Optimizer strip(SPV_ENV_VULKAN_1_2);
    strip.RegisterPass(spvtools::CreateStripDebugInfoPass());
    optimized.clear();
    if (!strip.Run(out.spirv.data(), out.spirv.size(), &optimized))
      return InternalError("codegen: stripping debug info failed on '%s'", out.debug_name.c_str());
    out.spirv = std::move(optimized);
  }
  if (options_.validate_spirv) {
    Status s = ValidateSpirv(out.spirv);
    if (!s.ok()) return s.Annotate("codegen: '" + out.debug_name + "'");
  }
  SpirvCache::Insert(cache_key, out.spirv);
  return out;
}

}  // namespace detail

namespace {
std::once_flag g_glslang_once;
std::mutex g_glslang_mutex;
}  // namespace

StatusOr<CompiledDispatch> CompileDispatch(ir::Operation* dispatch, const CodegenOptions& options) {
  CodegenOptions base = options;
  base.f16_arithmetic = false;
  detail::Generator gen(dispatch, base);
  KILN_ASSIGN_OR_RETURN(CompiledDispatch out, gen.Run());
  if (options.f16_arithmetic_variants && F16ArithmeticApplies(dispatch)) {
    CodegenOptions f16 = base;
    f16.f16_arithmetic = true;
    detail::Generator variant(dispatch, f16);
    KILN_ASSIGN_OR_RETURN(CompiledDispatch v, variant.Run());
    out.spirv_f16 = std::move(v.spirv);
  }
  return out;
}

StatusOr<std::vector<uint32_t>> CompileGlslToSpirv(const std::string& glsl, const std::string& name) {
  std::call_once(g_glslang_once, [] { glslang_initialize_process(); });
  // glslang keeps per-thread pools but its symbol tables are process globals;
  // compiles are serialized (codegen is an offline, build-time step).
  std::lock_guard<std::mutex> lock(g_glslang_mutex);
  glslang_input_t input = {};
  input.language = GLSLANG_SOURCE_GLSL;
  input.stage = GLSLANG_STAGE_COMPUTE;
  input.client = GLSLANG_CLIENT_VULKAN;
  // Vulkan 1.1 / SPIR-V 1.3: the widest reach on mobile drivers; the
  // validator still checks against the Vulkan 1.2 environment.
  input.client_version = GLSLANG_TARGET_VULKAN_1_1;
  input.target_language = GLSLANG_TARGET_SPV;
  input.target_language_version = GLSLANG_TARGET_SPV_1_3;
  input.code = glsl.c_str();
  input.default_version = 450;
  input.default_profile = GLSLANG_NO_PROFILE;
  input.force_default_version_and_profile = false;
  input.forward_compatible = false;
  input.messages = static_cast<glslang_messages_t>(GLSLANG_MSG_DEFAULT_BIT | GLSLANG_MSG_SPV_RULES_BIT |
                                                   GLSLANG_MSG_VULKAN_RULES_BIT);
  input.resource = glslang_default_resource();

  glslang_shader_t* shader = glslang_shader_create(&input);
  if (!shader) return InternalError("codegen: glslang_shader_create failed for '%s'", name.c_str());
  auto fail = [&](const char* stage, const char* log) {
    std::string m = "codegen: glslang " + std::string(stage) + " failed for '" + name + "': " +
                    (log ? log : "");
    // Debugging a generator change: the failing source, after the log.
    if (std::getenv("KILN_DUMP_GLSL_ON_ERROR")) m += "\n" + glsl;
    return Status(StatusCode::kInternal, m);
  };
  if (!glslang_shader_preprocess(shader, &input)) {
    Status s = fail("preprocess", glslang_shader_get_info_log(shader));
    glslang_shader_delete(shader);
    return s;
  }
  if (!glslang_shader_parse(shader, &input)) {
    Status s = fail("parse", glslang_shader_get_info_log(shader));
    glslang_shader_delete(shader);
    return s;
  }
  glslang_program_t* program = glslang_program_create();
  glslang_program_add_shader(program, shader);
  if (!glslang_program_link(program, GLSLANG_MSG_SPV_RULES_BIT | GLSLANG_MSG_VULKAN_RULES_BIT)) {
    Status s = fail("link", glslang_program_get_info_log(program));
    glslang_program_delete(program);
    glslang_shader_delete(shader);
    return s;
  }
  glslang_program_SPIRV_generate(program, GLSLANG_STAGE_COMPUTE);
  std::vector<uint32_t> words(glslang_program_SPIRV_get_size(program));
  glslang_program_SPIRV_get(program, words.data());
  const char* msgs = glslang_program_SPIRV_get_messages(program);
  std::string messages = msgs ? msgs : "";
  glslang_program_delete(program);
  glslang_shader_delete(shader);
  if (words.empty()) return InternalError("codegen: no SPIR-V for '%s': %s", name.c_str(), messages.c_str());
  return words;
}

Status ValidateSpirv(const std::vector<uint32_t>& spirv) {
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_2);
  std::string msgs;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t& pos,
                               const char* m) {
    msgs += "word " + std::to_string(pos.index) + ": " + m + "\n";
  });
  if (!tools.Validate(spirv.data(), spirv.size()))
    return Status(StatusCode::kInternal, "codegen: SPIR-V validation failed: " + msgs);
  return OkStatus();
}

}  // namespace kiln::codegen
