// CTC greedy decoding of the recognition model's output.
//
// Source: PaddleOCR ppocr/postprocess/rec_postprocess.py (BaseRecLabelDecode,
// CTCLabelDecode): the character list is ["blank"] + the dictionary's lines
// + [" "] (use_space_char); per time step take the arg-max class and its
// probability; drop class 0 (blank) and repeats of the previous step's class;
// the confidence is the mean probability of the kept steps (0 when none).
// Graves et al., "Connectionist Temporal Classification", ICML 2006.
#ifndef KILN_SAMPLES_OCR_CTC_DECODE_H_
#define KILN_SAMPLES_OCR_CTC_DECODE_H_

#include <string>
#include <vector>

namespace ocr {

// Reads a PaddleOCR dictionary (one UTF-8 character per line, e.g.
// ppocr_keys_v1.txt: 6623 lines) and returns the class labels: index 0 is
// the blank (""), then the lines in order (without "\n" / "\r\n"), then " ".
// Returns false with *error set when the file cannot be read or is empty.
bool LoadCharacters(const std::string& path, std::vector<std::string>* characters,
                    std::string* error);

struct Decoded {
  std::string text;   // UTF-8
  float confidence;   // mean max-probability of the kept steps, 0 if none
};

// Greedy CTC decoding of `probs` (time_steps x num_classes floats, row-major:
// the rec model's softmax output [1, T, C]). Classes at or beyond
// characters.size() decode to "" (a model/dictionary mismatch is caught by
// the caller comparing C with characters.size()).
Decoded CtcGreedyDecode(const float* probs, int time_steps, int num_classes,
                        const std::vector<std::string>& characters);

}  // namespace ocr

#endif  // KILN_SAMPLES_OCR_CTC_DECODE_H_
