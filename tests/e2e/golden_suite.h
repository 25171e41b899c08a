// The real-model goldens of tests/golden/ (format: tests/golden/README.md):
// how a golden directory's model is compiled and how closely its outputs
// must match. Shared by model_golden_test.cc and the bundle maker
// (tools/kiln-test/kiln_bundle.cc).
#ifndef KILN_TESTS_E2E_GOLDEN_SUITE_H_
#define KILN_TESTS_E2E_GOLDEN_SUITE_H_

#include <string>
#include <vector>

namespace kiln::e2e {

// The first line of `path` ("" when unreadable): model.txt's model file name.
std::string ReadFirstLine(const std::string& path);

// `dir`/inputs.txt ("name [1,16,96] float32" lines) as --input-shape values
// ("name=1x16x96"); scalars ("[]") are left out (static already).
std::vector<std::string> GoldenInputShapes(const std::string& dir);

// The golden tolerance (issue #2): 1e-4 absolute where |want| <= 1, 1e-3
// relative where |want| > 1. As one bound |got - want| <= atol + rtol*|want|
// (kiln-test bundles): atol 1e-4, rtol 1e-3, at most 2x looser.
constexpr double kGoldenAtol = 1e-4;
constexpr double kGoldenRtol = 1e-3;

}  // namespace kiln::e2e

#endif  // KILN_TESTS_E2E_GOLDEN_SUITE_H_
