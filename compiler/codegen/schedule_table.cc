// The conv register-block choice of schedule_table.h.
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

ConvTransposeSchedule SelectConvTransposeTile(int spatial, const std::vector<int64_t>& out,
                                              const std::vector<int64_t>& weights, int64_t stride_w) {
  ConvTransposeSchedule s;
  if (spatial != kConvTransposeTiledSpatialDims || out.size() != 4 || weights.size() != 4) return s;
  s.tiled = true;
  ConvTile& t = s.tile;
  const int64_t per_group = std::max<int64_t>(weights[1], 1);
  while (t.channels * 2 <= kConvMaxTileChannels && per_group % (t.channels * 2) == 0) t.channels *= 2;
  const int64_t sw = std::max<int64_t>(stride_w, 1);
  const int64_t J = (std::max<int64_t>(out[3], 1) + sw - 1) / sw;  // columns per phase
  const int64_t max_cols =
      std::min({t.channels == 1 ? kConvMaxTileColumnsDepthwise : kConvMaxTileColumns,
                kConvMaxTileOutputs / t.channels, J});
  int64_t best = -1;
  for (int64_t tw = 1; tw <= max_cols; tw *= 2) {
    const int64_t loads = (J + tw - 1) / tw * (tw + t.channels);
    if (best < 0 || loads < best) {
      best = loads;
      t.columns = tw;
    }
  }
  return s;
}

}  // namespace kiln::codegen::detail
