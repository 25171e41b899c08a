#include "ctc_decode.h"

#include <fstream>

namespace ocr {

bool LoadCharacters(const std::string& path, std::vector<std::string>* characters,
                    std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot open the dictionary " + path;
    return false;
  }
  std::vector<std::string> chars = {""};
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    chars.push_back(line);
  }
  if (chars.size() == 1) {
    *error = "the dictionary " + path + " is empty";
    return false;
  }
  chars.push_back(" ");
  *characters = std::move(chars);
  return true;
}

Decoded CtcGreedyDecode(const float* probs, int time_steps, int num_classes,
                        const std::vector<std::string>& characters) {
  Decoded out{"", 0.f};
  double sum = 0;
  int kept = 0, prev = -1;
  for (int t = 0; t < time_steps; ++t) {
    const float* row = probs + static_cast<size_t>(t) * num_classes;
    int best = 0;
    for (int c = 1; c < num_classes; ++c) {
      if (row[c] > row[best]) best = c;
    }
    if (best != 0 && best != prev) {
      if (best < static_cast<int>(characters.size())) out.text += characters[best];
      sum += row[best];
      ++kept;
    }
    prev = best;
  }
  if (kept) out.confidence = static_cast<float>(sum / kept);
  return out;
}

}  // namespace ocr
