// A kiln-test bundle: one directory holding compiled modules, their inputs,
// the expected outputs and a manifest, made on the host (kiln-bundle) and run
// anywhere the runtime runs (kiln-test, e.g. on a phone through adb).
//
// Layout (paths in the manifest are relative to the bundle directory):
//
//   BUNDLE/manifest.txt
//   BUNDLE/<test>/module.kiln
//   BUNDLE/<test>/input_<i>.npy      argument i of the function, in order
//   BUNDLE/<test>/expected_<i>.npy   result i, in order
//
// manifest.txt is line-oriented UTF-8 text. The first line is
// `kiln-test-bundle 1` (format version); blank lines and lines starting with
// '#' are comments; every other line is one test:
//
//   test <name> dir=<dir> function=<fn> inputs=<n> outputs=<n> atol=<a> rtol=<r> [skip=<reason...>]
//
// <name> and the values hold no spaces, except skip=, which runs to the end
// of the line. A result matches when dtype and shape are equal and every
// element satisfies |got - want| <= atol + rtol * |want| (NaN matches NaN,
// an infinity only the same infinity; integers and booleans compare as
// exact doubles within the same bound). A test with skip= is counted as
// skipped and not run (the bundle maker records why, e.g. a model that was
// not fetched).
#ifndef KILN_TOOLS_KILN_TEST_BUNDLE_H_
#define KILN_TOOLS_KILN_TEST_BUNDLE_H_

#include <string>
#include <vector>

#include "tools/npy.h"

namespace kiln::tools {

inline constexpr const char* kBundleMagic = "kiln-test-bundle";
inline constexpr int kBundleVersion = 1;

// One manifest line.
struct BundleTest {
  std::string name;
  std::string dir;               // relative to the bundle directory
  std::string function = "main";
  int inputs = 0;
  int outputs = 0;
  double atol = 0;
  double rtol = 0;
  std::string skip;              // non-empty: not run, counted as skipped
};

// Parses manifest text. On failure returns false and sets *error to
// "manifest.txt:<line>: <what>" (bad header, unknown key, missing field).
bool ParseManifest(const std::string& text, std::vector<BundleTest>* out, std::string* error);

// Formats the manifest (header line + one line per test); ParseManifest reads
// it back unchanged.
std::string FormatManifest(const std::vector<BundleTest>& tests);

// Compares one result with its expected value under the bundle tolerance
// (see above). Returns "" when they match, else the first difference: a dtype
// or shape mismatch, or "element K: got G want W (max |err| E)".
std::string CompareArrays(const NpyArray& got, const NpyArray& want, double atol, double rtol);

// Element `i` of `a` as a double (f16/f32/f64, integers, bool).
double ElementAsDouble(const NpyArray& a, size_t i);

}  // namespace kiln::tools

#endif  // KILN_TOOLS_KILN_TEST_BUNDLE_H_
