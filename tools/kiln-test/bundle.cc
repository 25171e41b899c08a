#include "tools/kiln-test/bundle.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "tools/input_spec.h"

namespace kiln::tools {
namespace {

bool ParseDouble(const std::string& s, double* out) {
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return !s.empty() && end && *end == '\0';
}

bool ParseInt(const std::string& s, int* out) {
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || !end || *end != '\0' || v < 0 || v > 1 << 20) return false;
  *out = static_cast<int>(v);
  return true;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

bool ParseManifest(const std::string& text, std::vector<BundleTest>* out, std::string* error) {
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  bool header = false;
  auto fail = [&](const std::string& what) {
    *error = "manifest.txt:" + std::to_string(line_no) + ": " + what;
    return false;
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string word;
    ls >> word;
    if (!header) {
      int version = 0;
      if (word != kBundleMagic || !(ls >> version)) return fail("not a kiln-test bundle manifest (want 'kiln-test-bundle 1')");
      if (version != kBundleVersion)
        return fail("bundle version " + std::to_string(version) + " is not supported (want " +
                    std::to_string(kBundleVersion) + ")");
      header = true;
      continue;
    }
    if (word != "test") return fail("expected 'test', got '" + word + "'");
    BundleTest t;
    if (!(ls >> t.name)) return fail("test without a name");
    bool have_dir = false, have_in = false, have_out = false, have_atol = false, have_rtol = false;
    std::string kv;
    while (ls >> kv) {
      size_t eq = kv.find('=');
      if (eq == std::string::npos) return fail(t.name + ": '" + kv + "' is not key=value");
      std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
      if (key == "skip") {
        std::string rest;
        std::getline(ls, rest);
        t.skip = value + rest;
        if (t.skip.empty()) t.skip = "skipped";
        break;
      }
      bool ok = true;
      if (key == "dir") { t.dir = value; have_dir = !value.empty(); }
      else if (key == "function") t.function = value;
      else if (key == "inputs") ok = have_in = ParseInt(value, &t.inputs);
      else if (key == "outputs") ok = have_out = ParseInt(value, &t.outputs);
      else if (key == "atol") ok = have_atol = ParseDouble(value, &t.atol) && t.atol >= 0;
      else if (key == "rtol") ok = have_rtol = ParseDouble(value, &t.rtol) && t.rtol >= 0;
      else return fail(t.name + ": unknown key '" + key + "'");
      if (!ok) return fail(t.name + ": bad value for " + key + ": '" + value + "'");
    }
    if (!have_dir || !have_in || !have_out || !have_atol || !have_rtol)
      return fail(t.name + ": needs dir=, inputs=, outputs=, atol= and rtol=");
    if (t.dir.find("..") != std::string::npos || t.dir[0] == '/')
      return fail(t.name + ": dir must be a relative path inside the bundle");
    out->push_back(std::move(t));
  }
  if (!header) {
    line_no = 1;
    return fail("empty manifest (want 'kiln-test-bundle 1')");
  }
  return true;
}

std::string FormatManifest(const std::vector<BundleTest>& tests) {
  std::ostringstream out;
  out << kBundleMagic << " " << kBundleVersion << "\n";
  out.precision(17);
  for (const BundleTest& t : tests) {
    out << "test " << t.name << " dir=" << t.dir << " function=" << t.function << " inputs=" << t.inputs
        << " outputs=" << t.outputs << " atol=" << t.atol << " rtol=" << t.rtol;
    if (!t.skip.empty()) out << " skip=" << t.skip;
    out << "\n";
  }
  return out.str();
}

double ElementAsDouble(const NpyArray& a, size_t i) {
  const uint8_t* p = a.data.data();
  switch (a.dtype) {
    case KILN_DTYPE_F32: { float v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case KILN_DTYPE_F64: { double v; std::memcpy(&v, p + 8 * i, 8); return v; }
    case KILN_DTYPE_F16: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); return HalfToFloat(v); }
    case KILN_DTYPE_I64: { int64_t v; std::memcpy(&v, p + 8 * i, 8); return static_cast<double>(v); }
    case KILN_DTYPE_I32: { int32_t v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case KILN_DTYPE_I16: { int16_t v; std::memcpy(&v, p + 2 * i, 2); return v; }
    case KILN_DTYPE_I8: return static_cast<int8_t>(p[i]);
    case KILN_DTYPE_U8: case KILN_DTYPE_BOOL: return p[i];
    default: return NAN;
  }
}

std::string CompareArrays(const NpyArray& got, const NpyArray& want, double atol, double rtol) {
  if (got.dtype != want.dtype)
    return std::string("dtype ") + kiln_dtype_name(got.dtype) + ", want " + kiln_dtype_name(want.dtype);
  if (got.shape != want.shape) return "shape " + ShapeString(got.shape) + ", want " + ShapeString(want.shape);
  size_t n = want.element_count();
  if (got.data.size() != want.data.size() || want.data.size() != n * kiln_dtype_size(want.dtype))
    return "byte size " + std::to_string(got.data.size()) + ", want " + std::to_string(want.data.size());
  std::string first;
  double max_err = 0;
  for (size_t i = 0; i < n; ++i) {
    double g = ElementAsDouble(got, i), w = ElementAsDouble(want, i);
    if (std::isnan(g) && std::isnan(w)) continue;
    double err = std::abs(g - w);
    // NaN vs a number fails the comparison; an infinity must match exactly
    // (inf <= atol + rtol * inf would accept any value, -inf included).
    bool ok = (std::isinf(w) || std::isinf(g)) ? g == w : err <= atol + rtol * std::abs(w);
    if (!ok) {
      if (std::isnan(err)) err = INFINITY;
      if (err > max_err) max_err = err;
      if (first.empty()) {
        std::ostringstream os;
        os.precision(9);
        os << "element " << i << ": got " << g << " want " << w;
        first = os.str();
      }
    }
  }
  if (first.empty()) return "";
  std::ostringstream os;
  os.precision(3);
  os << first << " (max |err| " << max_err << ", atol " << atol << " rtol " << rtol << ")";
  return os.str();
}

}  // namespace kiln::tools
