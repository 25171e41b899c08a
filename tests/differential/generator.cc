#include "tests/differential/generator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>

namespace kiln::difftest {
namespace {

constexpr int64_t kFull = 64;   // elements of a full tensor (256 bytes)
constexpr int64_t kSlice = 16;  // elements of a slice (64 bytes)
constexpr int64_t kAlign = 4;   // offsets in elements: 16-byte aligned

// splitmix64: portable and reproducible everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 0x1234567ull) {}
  uint64_t Next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  int Int(int lo, int hi) { return lo + static_cast<int>(Next() % static_cast<uint64_t>(hi - lo + 1)); }
  bool Chance(int percent) { return Int(0, 99) < percent; }
  // Multiples of 1/8 in [-2, 2]: sums and products stay exact for a while.
  float Value() { return static_cast<float>(Int(-16, 16)) / 8.0f; }

 private:
  uint64_t s_;
};

struct Val {
  std::string name;    // SSA name, e.g. %3 or %arg0
  std::string lifetime;  // external | transient | constant
  int64_t elems = 0;
  std::vector<float> host;  // reference contents (value semantics)
};

struct OpKind {
  const char* name;  // dispatch body op and executable prefix
  int arity;         // 1 or 2; "add_relu" is add then relu
  std::function<float(float, float)> fn;
};

const std::vector<OpKind>& Kinds() {
  static const std::vector<OpKind> kinds = {
      {"add", 2, [](float a, float b) { return a + b; }},
      {"sub", 2, [](float a, float b) { return a - b; }},
      {"mul", 2, [](float a, float b) { return a * b; }},
      {"max", 2, [](float a, float b) { return std::max(a, b); }},
      {"min", 2, [](float a, float b) { return std::min(a, b); }},
      {"add_relu", 2, [](float a, float b) { float s = a + b; return s > 0 ? s : 0.0f; }},
      {"relu", 1, [](float a, float) { return a > 0 ? a : 0.0f; }},
      {"neg", 1, [](float a, float) { return -a; }},
      {"abs", 1, [](float a, float) { return std::fabs(a); }},
  };
  return kinds;
}

std::string TensorType(int64_t elems) { return "tensor<" + std::to_string(elems) + "xf32>"; }
std::string ResType(const std::string& lifetime) { return "!stream.resource<" + lifetime + ">"; }

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

std::string HexDense(const std::vector<float>& v) {
  std::string s = "dense<\"0x";
  char buf[3];
  for (float f : v) {
    uint32_t u = Bits(f);
    for (int b = 0; b < 4; ++b) {
      std::snprintf(buf, sizeof buf, "%02X", static_cast<unsigned>((u >> (8 * b)) & 0xFF));
      s += buf;
    }
  }
  return s + "\"> : " + TensorType(static_cast<int64_t>(v.size()));
}

std::string Executable(const OpKind& k, int64_t elems, const std::string& sym) {
  std::string t = TensorType(elems);
  std::ostringstream os;
  os << "\"flow.executable\"() ({\n";
  if (k.arity == 2) {
    os << "^bb0(%a: " << t << ", %b: " << t << "):\n"
       << "  %0 = \"flow.dispatch\"(%a, %b) ({\n"
       << "  ^bb0(%x: " << t << ", %y: " << t << "):\n";
    if (std::string(k.name) == "add_relu") {
      os << "    %s = \"tensor.add\"(%x, %y) : (" << t << ", " << t << ") -> " << t << "\n"
         << "    %r = \"tensor.relu\"(%s) : (" << t << ") -> " << t << "\n"
         << "    \"flow.return\"(%r) : (" << t << ") -> ()\n";
    } else {
      os << "    %r = \"tensor." << k.name << "\"(%x, %y) : (" << t << ", " << t << ") -> " << t << "\n"
         << "    \"flow.return\"(%r) : (" << t << ") -> ()\n";
    }
    os << "  }) {name = \"" << sym << "\"} : (" << t << ", " << t << ") -> " << t << "\n";
  } else {
    os << "^bb0(%a: " << t << "):\n"
       << "  %0 = \"flow.dispatch\"(%a) ({\n"
       << "  ^bb0(%x: " << t << "):\n"
       << "    %r = \"tensor." << k.name << "\"(%x) : (" << t << ") -> " << t << "\n"
       << "    \"flow.return\"(%r) : (" << t << ") -> ()\n"
       << "  }) {name = \"" << sym << "\"} : (" << t << ") -> " << t << "\n";
  }
  os << "}) {sym_name = \"" << sym << "\"} : () -> ()\n";
  return os.str();
}

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) { prog_.seed = seed; }

  GeneratedProgram Run() {
    int nargs = rng_.Int(1, 3);
    std::vector<std::string> ownership;
    std::ostringstream head;
    for (int i = 0; i < nargs; ++i) {
      bool consume = rng_.Chance(50);
      std::vector<float> data(kFull);
      for (float& f : data) f = rng_.Value();
      prog_.inputs.push_back(data);
      prog_.consume.push_back(consume);
      ownership.push_back(consume ? "\"consume\"" : "\"borrow\"");
      Val v{Fresh(), "external", kFull, data};
      body_ << "  " << v.name << " = \"stream.tensor.import\"(%arg" << i << ") {consume = "
            << (consume ? "true" : "false") << ", size = " << kFull * 4 << " : i64} : (" << TensorType(kFull)
            << ") -> " << ResType("external") << "\n";
      vals_.push_back(v);
    }
    int steps = rng_.Int(3, 12);
    for (int s = 0; s < steps; ++s) Step();
    // 1-3 results, biased to recent values (every value is a candidate).
    int nres = rng_.Int(1, 3);
    std::vector<const Val*> results;
    for (int r = 0; r < nres; ++r) results.push_back(&Pick(-1, /*recent=*/true));
    std::vector<std::string> names, types;
    for (const Val* v : results) {
      std::string n = Fresh();
      body_ << "  " << n << " = \"stream.tensor.export\"(" << v->name << ") {size = " << v->elems * 4
            << " : i64} : (" << ResType(v->lifetime) << ") -> " << TensorType(v->elems) << "\n";
      names.push_back(n);
      types.push_back(TensorType(v->elems));
      prog_.expected.push_back(v->host);
    }
    std::ostringstream os;
    for (const auto& e : executables_) os << e.second;
    os << "\"func.func\"() ({\n^bb0(";
    for (int i = 0; i < nargs; ++i) os << (i ? ", " : "") << "%arg" << i << ": " << TensorType(kFull);
    os << "):\n" << body_.str() << "  \"func.return\"(";
    for (size_t i = 0; i < names.size(); ++i) os << (i ? ", " : "") << names[i];
    os << ") : (";
    for (size_t i = 0; i < types.size(); ++i) os << (i ? ", " : "") << types[i];
    os << ") -> ()\n}) {arg_ownership = [";
    for (size_t i = 0; i < ownership.size(); ++i) os << (i ? ", " : "") << ownership[i];
    os << "], sym_name = \"main\"} : () -> ()\n";
    prog_.kir = os.str();
    return prog_;
  }

 private:
  std::string Fresh() { return "%" + std::to_string(next_id_++); }

  // A value with `elems` elements (-1: any), biased toward recent ones.
  const Val& Pick(int64_t elems, bool recent = true, const Val* exclude = nullptr) {
    std::vector<size_t> c;
    for (size_t i = 0; i < vals_.size(); ++i)
      if ((elems < 0 || vals_[i].elems == elems) && &vals_[i] != exclude) c.push_back(i);
    if (c.empty()) return vals_.front();  // callers check Has() first
    if (recent && rng_.Chance(60)) return vals_[c[c.size() - 1 - rng_.Int(0, std::min<int>(2, c.size() - 1))]];
    return vals_[c[rng_.Int(0, static_cast<int>(c.size()) - 1)]];
  }
  int Count(int64_t elems) const {
    return static_cast<int>(std::count_if(vals_.begin(), vals_.end(), [&](const Val& v) { return v.elems == elems; }));
  }

  std::string Entry(const OpKind& k, int64_t elems) {
    std::string sym = std::string(k.name) + "_" + std::to_string(elems);
    if (!executables_.count(sym)) executables_[sym] = Executable(k, elems, sym);
    return sym;
  }

  void Push(Val v) { vals_.push_back(std::move(v)); }

  void Step() {
    int r = rng_.Int(0, 99);
    if (r < 8) return Constant();
    if (r < 14) return Splat();
    if (r < 34) return Dispatch(/*tied=*/false);
    if (r < 58) return Dispatch(/*tied=*/true);
    if (r < 66) return Clone();
    if (r < 76) return Slice();
    if (r < 86) return Update();
    if (r < 93) return Fill();
    return Copy();
  }

  void Constant() {
    std::vector<float> data(kFull);
    for (float& f : data) f = rng_.Value();
    Val v{Fresh(), "constant", kFull, data};
    body_ << "  " << v.name << " = \"stream.async.constant\"() {size = " << kFull * 4 << " : i64, value = "
          << HexDense(data) << "} : () -> " << ResType("constant") << "\n";
    Push(v);
  }

  void Splat() {
    int64_t elems = rng_.Chance(75) ? kFull : kSlice;
    float f = rng_.Value();
    Val v{Fresh(), "transient", elems, std::vector<float>(elems, f)};
    body_ << "  " << v.name << " = \"stream.async.splat\"() {pattern = " << Bits(f) << " : i64, size = " << elems * 4
          << " : i64} : () -> " << ResType("transient") << "\n";
    Push(v);
  }

  void Dispatch(bool tied) {
    const OpKind& k = Kinds()[rng_.Int(0, static_cast<int>(Kinds().size()) - 1)];
    int64_t elems = (Count(kSlice) > 0 && rng_.Chance(25)) ? kSlice : kFull;
    if (k.arity == 2 && tied && Count(elems) < 2) return Dispatch(false);
    const Val& a = Pick(elems);
    // A tied dispatch never reads the same value twice (its bindings are
    // declared restrict); a fresh one may.
    const Val* b = k.arity == 2 ? &Pick(elems, true, tied ? &a : nullptr) : nullptr;
    std::string sym = Entry(k, elems);
    Val v{Fresh(), tied ? a.lifetime : "transient", elems, std::vector<float>(elems)};
    for (int64_t i = 0; i < elems; ++i) v.host[i] = k.fn(a.host[i], b ? b->host[i] : 0.0f);
    body_ << "  " << v.name << " = \"stream.async.dispatch\"(" << a.name << (b ? ", " + b->name : "")
          << ") {entry = @" << sym << ", sizes = [" << elems * 4 << "], tied_operands = [" << (tied ? 0 : -1)
          << "]} : (" << ResType(a.lifetime) << (b ? ", " + ResType(b->lifetime) : "") << ") -> "
          << ResType(v.lifetime) << "\n";
    if (tied) ++prog_.tied_ops;
    Push(v);
  }

  void Clone() {
    const Val& a = Pick(-1);
    Val v{Fresh(), "transient", a.elems, a.host};
    body_ << "  " << v.name << " = \"stream.async.clone\"(" << a.name << ") {size = " << a.elems * 4
          << " : i64} : (" << ResType(a.lifetime) << ") -> " << ResType(v.lifetime) << "\n";
    Push(v);
  }

  void Slice() {
    if (!Count(kFull)) return Splat();
    const Val& a = Pick(kFull);
    int64_t off = kAlign * rng_.Int(0, (kFull - kSlice) / kAlign);
    Val v{Fresh(), a.lifetime == "transient" ? "transient" : a.lifetime, kSlice,
          std::vector<float>(a.host.begin() + off, a.host.begin() + off + kSlice)};
    body_ << "  " << v.name << " = \"stream.async.slice\"(" << a.name << ") {length = " << kSlice * 4
          << " : i64, offset = " << off * 4 << " : i64} : (" << ResType(a.lifetime) << ") -> "
          << ResType(v.lifetime) << "\n";
    Push(v);
  }

  void Update() {
    if (!Count(kSlice) || !Count(kFull)) return Slice();
    const Val& t = Pick(kFull);
    const Val& u = Pick(kSlice);
    int64_t off = kAlign * rng_.Int(0, (kFull - kSlice) / kAlign);
    Val v{Fresh(), t.lifetime, kFull, t.host};
    std::copy(u.host.begin(), u.host.end(), v.host.begin() + off);
    body_ << "  " << v.name << " = \"stream.async.update\"(" << t.name << ", " << u.name << ") {length = "
          << kSlice * 4 << " : i64, offset = " << off * 4 << " : i64, size = " << kFull * 4 << " : i64} : ("
          << ResType(t.lifetime) << ", " << ResType(u.lifetime) << ") -> " << ResType(v.lifetime) << "\n";
    ++prog_.tied_ops;
    Push(v);
  }

  void Fill() {
    const Val& t = Pick(-1);
    int64_t len = kAlign * rng_.Int(1, static_cast<int>(t.elems / kAlign));
    int64_t off = kAlign * rng_.Int(0, static_cast<int>((t.elems - len) / kAlign));
    float f = rng_.Value();
    Val v{Fresh(), t.lifetime, t.elems, t.host};
    std::fill(v.host.begin() + off, v.host.begin() + off + len, f);
    body_ << "  " << v.name << " = \"stream.async.fill\"(" << t.name << ") {length = " << len * 4
          << " : i64, offset = " << off * 4 << " : i64, pattern = " << Bits(f) << " : i64, size = " << t.elems * 4
          << " : i64} : (" << ResType(t.lifetime) << ") -> " << ResType(v.lifetime) << "\n";
    ++prog_.tied_ops;
    Push(v);
  }

  void Copy() {
    const Val& t = Pick(-1);
    // Usually another value; sometimes the target itself, ranges possibly
    // overlapping (value semantics: the source is read before the write, so
    // copy-on-write must keep a clone that elision may not remove).
    const Val& s = rng_.Chance(15) ? t : Pick(-1, true, &t);
    int64_t maxlen = std::min(t.elems, s.elems);
    int64_t len = kAlign * rng_.Int(1, static_cast<int>(maxlen / kAlign));
    int64_t soff = kAlign * rng_.Int(0, static_cast<int>((s.elems - len) / kAlign));
    int64_t doff = kAlign * rng_.Int(0, static_cast<int>((t.elems - len) / kAlign));
    Val v{Fresh(), t.lifetime, t.elems, t.host};
    std::copy(s.host.begin() + soff, s.host.begin() + soff + len, v.host.begin() + doff);
    body_ << "  " << v.name << " = \"stream.async.copy\"(" << t.name << ", " << s.name << ") {dst_offset = "
          << doff * 4 << " : i64, length = " << len * 4 << " : i64, size = " << t.elems * 4
          << " : i64, src_offset = " << soff * 4 << " : i64} : (" << ResType(t.lifetime) << ", "
          << ResType(s.lifetime) << ") -> " << ResType(v.lifetime) << "\n";
    ++prog_.tied_ops;
    Push(v);
  }

  Rng rng_;
  GeneratedProgram prog_;
  std::vector<Val> vals_;  // never shrinks; references into it are taken before Push
  std::map<std::string, std::string> executables_;
  std::ostringstream body_;
  int next_id_ = 0;
};

}  // namespace

GeneratedProgram Generate(uint64_t seed) { return Generator(seed).Run(); }

}  // namespace kiln::difftest
