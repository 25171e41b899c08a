// The register-block choices of schedule_table.h (conv, conv-transpose, matmul).
#include "compiler/codegen/schedule_table.h"

#include <algorithm>

namespace kiln::codegen::detail {

ConvTile SelectConvTile(const std::vector<int64_t>& out, const std::vector<int64_t>& weights,
                        int64_t group, int64_t stride_w, int64_t dilation_w) {
  ConvTile t;
  const int64_t per_group = weights[0] / std::max<int64_t>(group, 1);
  while (t.channels * 2 <= kConvMaxTileChannels && per_group % (t.channels * 2) == 0) t.channels *= 2;
  const int64_t OW = std::max<int64_t>(out[3], 1), KW = std::max<int64_t>(weights[3], 1);
  const int64_t max_cols =
      std::min({t.channels == 1 ? kConvMaxTileColumnsDepthwise : kConvMaxTileColumns,
                           kConvMaxTileOutputs / t.channels, OW});
  // Loads per useful multiply-add, tiles * (R + TO * KW) / (TO * OW * KW):
  // the denominator is the same for every TW, so the numerators compare.
  int64_t best = -1;
  for (int64_t tw = 1; tw <= max_cols; tw *= 2) {
    const int64_t row = (tw - 1) * stride_w + (KW - 1) * dilation_w + 1;
    if (tw > 1 && row > kConvMaxInputRow) break;
    const int64_t loads = (OW + tw - 1) / tw * (row + t.channels * KW);
    if (best < 0 || loads < best) {
      best = loads;
      t.columns = tw;
    }
  }
  return t;
}

bool ConvFlattensPositions(const std::vector<int64_t>& in, const std::vector<int64_t>& weights,
                           const std::vector<int64_t>& strides, const std::vector<int64_t>& pads) {
  if (in.size() != 4 || weights.size() != 4 || in[2] <= 1) return false;
  for (int64_t s : strides)
    if (s != 1) return false;
  for (int64_t p : pads)
    if (p != 0) return false;
  return weights[2] == 1 && weights[3] == 1;
}

std::vector<int64_t> ConvTileShape(const std::vector<int64_t>& shape, bool flattened) {
  if (!flattened) return shape;
  return {shape[0], shape[1], 1, shape[2] * shape[3]};
}

ConvTexels SelectConvTexels(const std::vector<int64_t>& in, const std::vector<int64_t>& weights,
                            int64_t stride_w, int64_t dilation_w, const ConvTile& tile,
                            bool input_eligible, bool weights_eligible) {
  ConvTexels t;
  const int64_t KW = weights[3];
  const int64_t row = (tile.columns - 1) * stride_w + (KW - 1) * dilation_w + 1;
  t.input = input_eligible && in[3] % 4 == 0 && (tile.columns * stride_w) % 4 == 0 &&
            row <= kConvMaxInputRow && KW <= 16;
  t.weights = weights_eligible && weights[2] == 1 && KW == 1 && weights[1] % 4 == 0;
  const int64_t taps = weights[2] * KW;
  t.weight_kernels = weights_eligible && !t.weights && taps > 1 && taps <= 16 && weights[1] % 4 == 0 &&
                     row <= kConvMaxInputRow && KW <= 16;
  t.weight_rows = weights_eligible && !t.weights && !t.weight_kernels && taps > 1 && KW <= 13 &&
                  row <= kConvMaxInputRow;
  return t;
}

MatmulTile SelectMatmulTile(int64_t batch, int64_t M, int64_t N, int64_t K, bool a_eligible,
                            bool b_eligible) {
  M = std::max<int64_t>(M, 1);
  N = std::max<int64_t>(N, 1);
  batch = std::max<int64_t>(batch, 1);
  const bool a_texels = a_eligible && K % 4 == 0;
  auto with_texels = [&](int64_t tm, int64_t tn) {
    MatmulTile t;
    t.rows = tm;
    t.columns = tn;
    t.a_texels = a_texels;
    t.b_texels = b_eligible && N % 4 == 0 && tn % 4 == 0;
    return t;
  };
  // The fallback reads no texels: a matmul this small costs little either
  // way, and the plain k loop is the smaller shader (cls's 1 x 2 classifier).
  MatmulTile best;
  best.rows = std::min<int64_t>(M, 4);
  best.columns = std::min<int64_t>(N, 4);
  int64_t best_cost = -1;
  for (int64_t pm = 1; pm <= kMatmulMaxTileRows; pm *= 2) {
    const int64_t tm = std::min(M, pm);
    if (tm != pm && pm > 1 && std::min(M, pm / 2) == tm) continue;  // seen
    for (int64_t pn = 1; pn <= kMatmulMaxTileColumns; pn *= 2) {
      const int64_t tn = std::min(N, pn);
      if (tn != pn && pn > 1 && std::min(N, pn / 2) == tn) continue;
      if (tm * tn > kConvMaxTileOutputs) continue;
      const int64_t tiles = (M + tm - 1) / tm * ((N + tn - 1) / tn);
      if (static_cast<uint64_t>(batch * tiles) < kMatmulMinInvocations) continue;
      const MatmulTile t = with_texels(tm, tn);
      const int64_t cost = tiles * (tm * (t.a_texels ? kTexelElementCost : kFloatLoadCost) +
                                    tn * (t.b_texels ? kTexelElementCost : kFloatLoadCost));
      if (best_cost < 0 || cost < best_cost || (cost == best_cost && tm * tn < best.rows * best.columns)) {
        best_cost = cost;
        best = t;
      }
    }
  }
  return best;
}

namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The fewest-loads (TO, TW) over powers of two, TO dividing `per_group`, TW
// <= `columns`, TO * TW * `taps` accumulators at most; *loads gets the
// count, `cost(TO, TW)`.
template <typename Cost>
ConvTile BestTile(int64_t per_group, int64_t columns, int64_t taps, Cost cost, int64_t* loads) {
  ConvTile best;
  *loads = -1;
  for (int64_t to = 1; to <= kConvMaxTileChannels && per_group % to == 0; to *= 2) {
    if (to * taps > kConvMaxTileOutputs) break;
    const int64_t max_cols = std::min({to == 1 ? kConvMaxTileColumnsDepthwise : kConvMaxTileColumns,
                                       kConvMaxTileOutputs / (to * taps), columns});
    for (int64_t tw = 1; tw <= max_cols; tw *= 2) {
      const int64_t l = cost(to, tw);
      if (*loads < 0 || l < *loads || (l == *loads && to > best.channels)) {
        *loads = l;
        best.channels = to;
        best.columns = tw;
      }
    }
  }
  return best;
}

}  // namespace

ConvTransposeSchedule SelectConvTransposeTile(const ConvTransposeShape& c) {
  ConvTransposeSchedule s;
  if (c.spatial != kConvTransposeTiledSpatialDims || c.out.size() != 4 || c.weights.size() != 4 ||
      c.input.size() != 4 || c.strides.size() != 2 || c.dilations.size() != 2 || c.pads.size() != 4 ||
      c.output_padding.size() != 2)
    return s;
  const int64_t Mg = std::max<int64_t>(c.weights[1], 1), M = std::max<int64_t>(c.out[1], 1);
  const int64_t KH = c.weights[2], KW = c.weights[3], H = c.input[2], W = std::max<int64_t>(c.input[3], 1);
  const int64_t OH = c.out[2], OW = std::max<int64_t>(c.out[3], 1);
  const int64_t sw = std::max<int64_t>(c.strides[1], 1);
  const int64_t P = std::min(sw, OW), J = CeilDiv(OW, sw);
  int64_t phase_loads = 0;
  const ConvTile phase = BestTile(Mg, J, 1, [&](int64_t to, int64_t tw) {
    return M / to * OH * P * CeilDiv(J, tw) * (tw + to);
  }, &phase_loads);
  s.kind = ConvTransposeSchedule::kPhase;
  s.tile = phase;
  const bool upsample = c.strides[0] == KH && c.strides[1] == KW && c.dilations[0] == 1 &&
                        c.dilations[1] == 1 && c.pads[0] == 0 && c.pads[1] == 0 && c.pads[2] == 0 &&
                        c.pads[3] == 0 && c.output_padding[0] == 0 && c.output_padding[1] == 0 &&
                        KH * KW <= kConvMaxTileOutputs;
  if (upsample) {
    int64_t up_loads = 0;
    const ConvTile up = BestTile(Mg, W, KH * KW, [&](int64_t to, int64_t tw) {
      return M / to * H * CeilDiv(W, tw) * (tw + to * KH * KW);
    }, &up_loads);
    if (up_loads <= phase_loads) {
      s.kind = ConvTransposeSchedule::kUpsample;
      s.tile = up;
    }
  }
  return s;
}

ConvTexels SelectConvTransposeTexels(const ConvTransposeShape& c, const ConvTile& tile,
                                     bool input_eligible, bool weights_eligible) {
  ConvTexels t;
  if (c.input.size() != 4 || c.weights.size() != 4) return t;
  t.input = input_eligible && c.input[3] % 4 == 0 && tile.columns % 4 == 0;
  t.weights = weights_eligible && (c.weights[2] * c.weights[3]) % 4 == 0;
  return t;
}

}  // namespace kiln::codegen::detail
