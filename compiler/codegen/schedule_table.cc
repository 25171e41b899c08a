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

ConvTexels SelectConvTexels(const std::vector<int64_t>& in, const std::vector<int64_t>& weights,
                            int64_t stride_w, int64_t dilation_w, const ConvTile& tile,
                            bool input_eligible, bool weights_eligible) {
  ConvTexels t;
  const int64_t KW = weights[3];
  const int64_t row = (tile.columns - 1) * stride_w + (KW - 1) * dilation_w + 1;
  t.input = input_eligible && in[3] % 4 == 0 && (tile.columns * stride_w) % 4 == 0 &&
            row <= kConvMaxInputRow && KW <= 16;
  t.weights = weights_eligible && weights[2] == 1 && KW == 1 && weights[1] % 4 == 0;
  t.weight_rows = weights_eligible && !t.weights && weights[2] * KW > 1 && KW <= 13 &&
                  row <= kConvMaxInputRow;
  return t;
}

}  // namespace kiln::codegen::detail
