#include "tests/differential/generator.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <set>
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
  std::string name;      // SSA name, e.g. %3, %arg0, %7#1
  std::string lifetime;  // external | transient | constant | variable | *
  int64_t elems = 0;
  std::vector<float> unused;  // (contents live in the host reference's Env)
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

// The host reference: every generated op appends a closure that computes its
// results from an environment of named values (value semantics: each op
// produces fresh contents). Regions are closure lists, run as many times as
// the control flow says; module globals live in an environment that persists
// across invocations.
struct Env {
  std::map<std::string, std::vector<float>> f;  // resources by SSA name
  std::map<std::string, int64_t> i;             // host index / i1 values
};
using HostOp = std::function<void(Env& env, Env& globals)>;
using HostOps = std::vector<HostOp>;

void RunOps(const HostOps& ops, Env& env, Env& globals) {
  for (const HostOp& op : ops) op(env, globals);
}

std::string ExecutableGreater1(const std::string& sym) {
  std::ostringstream os;
  os << "\"flow.executable\"() ({\n"
     << "^bb0(%a: tensor<1xf32>, %b: tensor<1xf32>):\n"
     << "  %0 = \"flow.dispatch\"(%a, %b) ({\n"
     << "  ^bb0(%x: tensor<1xf32>, %y: tensor<1xf32>):\n"
     << "    %r = \"tensor.greater\"(%x, %y) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xi1>\n"
     << "    \"flow.return\"(%r) : (tensor<1xi1>) -> ()\n"
     << "  }) {name = \"" << sym << "\"} : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xi1>\n"
     << "}) {sym_name = \"" << sym << "\"} : () -> ()\n";
  return os.str();
}

constexpr int kMaxDepth = 2;  // region nesting

// An exported function of the callee module `lib` (called from @main as
// @lib.<name> through a func.func {import = true} declaration).
struct LibFn {
  std::string name;                       // f0, f1, f2
  std::vector<int64_t> arg_elems;         // f32 1-D arguments (arg 0 is always full)
  std::vector<bool> consume;              // per argument: arg_ownership "consume"
  std::vector<std::string> arg_names;     // the callee's stream.tensor.import results
  std::vector<int64_t> result_elems;      // 1-2 f32 1-D results
  std::vector<std::string> result_names;  // the callee values exported as results
  std::string text;                       // the func.func
  HostOps body;                           // the host reference of the body
};

class Generator {
 public:
  explicit Generator(uint64_t seed)
      : rng_(seed), lib_rng_(seed ^ 0x5EEDCA11ull), alias_rng_(seed ^ 0xA11A5EDull),
        structured_rng_(seed ^ 0x51CE5CA7ull), views_rng_(seed ^ 0x71E05EEDull) {
    prog_.seed = seed;
  }

  GeneratedProgram Run() {
    // The callee module `lib` (40% of programs) is drawn from its own PRNG,
    // so programs without one are the same as before calls existed.
    // Half of them are defined in the main module instead (calls within one
    // module: a VM CALL, the same calling convention).
    std::swap(rng_, lib_rng_);
    bool with_lib = rng_.Chance(40);
    if (with_lib) {
      int nfns = rng_.Int(1, 3);
      for (int f = 0; f < nfns; ++f) LibFunction(f);
      local_lib_ = rng_.Chance(50);
    }
    std::swap(rng_, lib_rng_);
    if (local_lib_) Note("call within the module");
    // The device topology elide-transfers reads (transfers are drawn in Step).
    int topo = rng_.Int(0, 99);
    topology_ = topo < 30 ? "" : topo < 65 ? "unified" : "discrete";
    int nargs = rng_.Int(1, 3);
    std::vector<std::string> ownership;
    std::ostringstream& body_ = out_;
    for (int i = 0; i < nargs; ++i) {
      bool consume = rng_.Chance(50);
      std::vector<float> data(kFull);
      for (float& f : data) f = rng_.Value();
      prog_.inputs.push_back(data);
      prog_.consume.push_back(consume);
      ownership.push_back(consume ? "\"consume\"" : "\"borrow\"");
      Val v{Fresh(), "external", kFull, {}};
      body_ << "  " << v.name << " = \"stream.tensor.import\"(%arg" << i << ") {consume = "
            << (consume ? "true" : "false") << ", size = " << kFull * 4 << " : i64} : (" << TensorType(kFull)
            << ") -> " << ResType("external") << "\n";
      std::string name = v.name;
      ops_->push_back([name, data](Env& env, Env&) { env.f[name] = data; });
      vals_.push_back(v);
    }
    // Module globals (variable lifetime): loaded, updated in place by a tied
    // op and stored back (the state-update idiom), read, or overwritten.
    int nglobals = rng_.Chance(35) ? rng_.Int(1, 2) : 0;
    for (int g = 0; g < nglobals; ++g) globals_.push_back("g" + std::to_string(g));
    if (nglobals) Note("util.global");
    for (const std::string& g : globals_)
      if (rng_.Chance(60)) GlobalStateUpdate(g);
    int steps = rng_.Int(3, 12);
    for (int s = 0; s < steps; ++s) Step(0);
    if (!lib_.empty() && calls_ == 0) Call(0);  // every program with a lib calls it
    for (const std::string& g : globals_)
      if (rng_.Chance(40)) GlobalStore(g);
    // 1-3 results, biased to recent values (every value is a candidate).
    int nres = rng_.Int(1, 3);
    std::vector<Val> results;
    for (int r = 0; r < nres; ++r) results.push_back(Pick(-1, /*recent=*/true));
    ReturnTwoViews(&results);
    for (const Val& v : results)
      if (call_results_.count(v.name)) Note("call result returned");
    NoteConsumedOperandUses();
    std::vector<std::string> names, types, sources;
    for (const Val& v : results) {
      std::string n = Fresh();
      out_ << "  " << n << " = \"stream.tensor.export\"(" << v.name << ") {size = " << v.elems * 4
           << " : i64} : (" << ResType(v.lifetime) << ") -> " << TensorType(v.elems) << "\n";
      names.push_back(n);
      types.push_back(TensorType(v.elems));
      sources.push_back(v.name);
    }
    // The host reference, invoked twice: globals carry over.
    Env globals;
    for (const std::string& g : globals_) globals.f[g] = std::vector<float>(kFull, 0.0f);
    for (int inv = 0; inv < 2; ++inv) {
      Env env;
      RunOps(top_, env, globals);
      std::vector<std::vector<float>> expected;
      for (const std::string& src : sources) expected.push_back(env.f.at(src));
      prog_.expected_runs.push_back(expected);
    }
    prog_.expected = prog_.expected_runs[0];
    std::ostringstream os;
    if (local_lib_) {
      // The callees are functions of this module; their executables join
      // the main module's (one name, one text: Entry() derives the body
      // from the name).
      for (const auto& e : lib_executables_) executables_.insert(e);
      // Half of these programs (chosen from the seed, not the PRNG, so every
      // other seed's program is unchanged) make the callees module-internal:
      // --infer-argument-ownership may then turn borrowed arguments that
      // every call site hands over into consumed ones.
      bool internal = ((prog_.seed * 0x9E3779B97F4A7C15ull) >> 40) & 1;
      if (internal) Note("call to an internal function");
      for (const LibFn& fn : lib_) {
        std::string text = fn.text;
        if (internal) {
          const std::string key = "sym_name = \"" + fn.name + "\"}";
          size_t at = text.rfind(key);
          if (at != std::string::npos)
            text.replace(at, key.size(), "sym_name = \"" + fn.name + "\", sym_visibility = \"private\"}");
        }
        os << text;
      }
    } else {
      for (const LibFn& fn : lib_) {
        os << "\"func.func\"() ({\n}) {sym_name = \"lib." << fn.name << "\", import = true, arg_types = ["
           << TensorTypes(fn.arg_elems) << "], result_types = [" << TensorTypes(fn.result_elems)
           << "], arg_ownership = [" << Ownership(fn.consume) << "]} : () -> ()\n";
      }
      if (!lib_.empty()) prog_.lib_kir = LibModule();
    }
    if (!topology_.empty()) os << "\"kiln.topology\"() {spec = \"" << topology_ << "\"} : () -> ()\n";
    for (const std::string& g : globals_)
      os << "\"util.global\"() {size = " << kFull * 4 << " : i64, sym_name = \"" << g
         << "\", type = !stream.resource<variable>} : () -> ()\n";
    for (const auto& e : executables_) os << e.second;
    os << "\"func.func\"() ({\n^bb0(";
    for (int i = 0; i < nargs; ++i) os << (i ? ", " : "") << "%arg" << i << ": " << TensorType(kFull);
    os << "):\n" << out_.str() << "  \"func.return\"(";
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
  void Note(const std::string& construct) { prog_.constructs[construct]++; }

  // A value with `elems` elements (-1: any), biased toward recent ones.
  // Returned by value: vals_ grows and shrinks with region scopes.
  Val Pick(int64_t elems, bool recent = true, const std::string& exclude = "") {
    std::vector<size_t> c;
    for (size_t i = 0; i < vals_.size(); ++i)
      if ((elems < 0 || vals_[i].elems == elems) && vals_[i].name != exclude) c.push_back(i);
    if (c.empty()) return vals_.front();  // callers check Count() first
    if (recent && rng_.Chance(60)) return vals_[c[c.size() - 1 - rng_.Int(0, std::min<int>(2, c.size() - 1))]];
    return vals_[c[rng_.Int(0, static_cast<int>(c.size()) - 1)]];
  }
  int Count(int64_t elems) const {
    return static_cast<int>(std::count_if(vals_.begin(), vals_.end(), [&](const Val& v) { return v.elems == elems; }));
  }

  std::string Entry(const OpKind& k, int64_t elems) {
    std::string sym = std::string(k.name) + "_" + std::to_string(elems);
    if (!exec_->count(sym)) (*exec_)[sym] = Executable(k, elems, sym);
    return sym;
  }

  void Push(Val v) { vals_.push_back(std::move(v)); }
  void Emit(HostOp op) { ops_->push_back(std::move(op)); }

  void Step(int depth) {
    // Drawn from a PRNG of its own before anything else: a seed that draws
    // no structured op at any step gives the program it gave before.
    if (structured_rng_.Chance(10)) return Structured();
    int r = rng_.Int(0, 99);
    if (depth < kMaxDepth && r < 30) {
      int k = rng_.Int(0, 99);
      if (k < 25) return If(depth);
      if (k < 42) return Switch(depth);
      if (k < 62) return For(depth);
      if (k < 80) return While(depth);
      if (depth == 0 && !in_cf_body_) return k < 90 ? CfDiamond() : CfLoop();
      return If(depth);
    }
    if (!lib_.empty() && rng_.Chance(12)) return Call(depth);
    if (depth == 0 && !globals_.empty() && rng_.Chance(8)) {
      const std::string& g = globals_[rng_.Int(0, static_cast<int>(globals_.size()) - 1)];
      return rng_.Chance(50) ? GlobalLoad(g) : GlobalStore(g);
    }
    r = rng_.Int(0, 99);
    if (r < 5) return Transfer();
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

  // Structured ops, whose dispatches read or write subranges: concats of
  // 16-element pieces into a 64-element value (flat, or nested through a
  // 32-element concat used only there), dispatches slicing 16 elements of a
  // 64-element value at any element offset (contiguous, or strided by 2 or
  // 4), and constant pads of a 16-element value into 64 elements. The
  // pieces of a concat are either dispatches made for it just before (which
  // --emplace-allocations places into the concat's target; some stay
  // visible, so later steps may read them after the concat) or earlier
  // values (imports, constants, views, values read again later: it must
  // not). Drawn from structured_rng_ (swapped into rng_ meanwhile).
  void Structured() {
    std::swap(rng_, structured_rng_);
    int k = rng_.Int(0, 99);
    if (k < 40) {
      std::vector<Val> pieces;
      bool fresh = rng_.Chance(50);
      for (int i = 0; i < 4; ++i) pieces.push_back(Piece(fresh));
      Note(fresh ? "concat of producers made for it" : "concat of earlier values");
      Push(StructuredDispatch("concat", pieces, kFull, "tensor.concat", "{axis = 0 : i64}", ConcatFn()));
    } else if (k < 55) {
      bool fresh = rng_.Chance(70);
      Val inner = StructuredDispatch("concat", {Piece(fresh), Piece(fresh)}, 2 * kSlice, "tensor.concat",
                                     "{axis = 0 : i64}", ConcatFn());
      std::vector<Val> pieces = {inner, Piece(fresh), Piece(fresh)};
      if (rng_.Chance(50)) std::swap(pieces[0], pieces[rng_.Int(1, 2)]);
      Note("nested concat");
      Push(StructuredDispatch("concat", pieces, kFull, "tensor.concat", "{axis = 0 : i64}", ConcatFn()));
    } else if (k < 80) {
      if (!Count(kFull)) {
        std::swap(rng_, structured_rng_);
        return Splat();  // (drawn from rng_, as Step would)
      }
      Val a = Pick(kFull);
      const int64_t stride = rng_.Chance(50) ? 1 : rng_.Chance(50) ? 2 : 4;
      const int64_t off = rng_.Int(0, static_cast<int>(kFull - (kSlice - 1) * stride - 1));
      Note(stride == 1 ? "slice dispatch at an element offset" : "strided slice dispatch");
      Push(StructuredDispatch("slice_" + std::to_string(off) + "_" + std::to_string(stride), {a}, kSlice,
                              "tensor.slice",
                              "{starts = [" + std::to_string(off) + "], strides = [" + std::to_string(stride) + "]}",
                              [off, stride](const std::vector<std::vector<float>>& in) {
                                std::vector<float> out(kSlice);
                                for (int64_t i = 0; i < kSlice; ++i) out[i] = in[0][off + i * stride];
                                return out;
                              }));
    } else {
      Val a = Piece(rng_.Chance(50));
      const int64_t lo = rng_.Int(0, static_cast<int>(kFull - kSlice));
      const float value = rng_.Value();
      char v[32];
      std::snprintf(v, sizeof v, "%.4f", static_cast<double>(value));
      Note("constant pad");
      Push(StructuredDispatch("pad_" + std::to_string(lo) + "_" + std::to_string(Bits(value)), {a}, kFull,
                              "tensor.pad",
                              "{mode = \"constant\", pads = [" + std::to_string(lo) + ", " +
                                  std::to_string(kFull - kSlice - lo) + "], value = " + v + " : f64}",
                              [lo, value](const std::vector<std::vector<float>>& in) {
                                std::vector<float> out(kFull, value);
                                for (int64_t i = 0; i < kSlice; ++i) out[lo + i] = in[0][i];
                                return out;
                              }));
    }
    std::swap(rng_, structured_rng_);
  }

  using StructuredFn = std::function<std::vector<float>(const std::vector<std::vector<float>>&)>;
  static StructuredFn ConcatFn() {
    return [](const std::vector<std::vector<float>>& in) {
      std::vector<float> out;
      for (const std::vector<float>& x : in) out.insert(out.end(), x.begin(), x.end());
      return out;
    };
  }

  // A 16-element value: when `fresh`, an elementwise dispatch made now (of
  // an earlier 16-element value, or of a slice of a 64-element one), used
  // only by what the caller makes of it; otherwise an earlier value.
  Val Piece(bool fresh) {
    if (!Count(kSlice)) {
      if (!Count(kFull)) return SplatOf(kSlice);
      return SliceOf(Pick(kFull), kAlign * rng_.Int(0, (kFull - kSlice) / kAlign), kSlice);
    }
    if (!fresh) return Pick(kSlice);
    const OpKind& k = Kinds()[rng_.Int(0, static_cast<int>(Kinds().size()) - 1)];
    Val a = Pick(kSlice);
    Val b = k.arity == 2 ? Pick(kSlice) : Val{};
    Val v = DispatchOf(k, a, k.arity == 2 ? &b : nullptr, /*tied=*/false);
    // Visible to later steps 40% of the time: read after the concat (a view
    // of the concat's target), written in place or captured by a region
    // (the piece then stays a copy).
    if (rng_.Chance(40)) {
      Push(v);
      Note("concat piece visible after the concat");
    }
    return v;
  }

  // A dispatch of the executable `prefix`_<operand elems>... whose body is
  // one `op` `attrs` over its operands, giving `elems` f32 elements; `fn`
  // is its host reference.
  Val StructuredDispatch(const std::string& prefix, const std::vector<Val>& operands, int64_t elems,
                         const std::string& op, const std::string& attrs, StructuredFn fn) {
    std::string sym = prefix, in_types;
    for (size_t i = 0; i < operands.size(); ++i) {
      sym += "_" + std::to_string(operands[i].elems);
      in_types += (i ? ", " : "") + TensorType(operands[i].elems);
    }
    const std::string out_type = TensorType(elems);
    if (!exec_->count(sym)) {
      std::ostringstream os;
      os << "\"flow.executable\"() ({\n^bb0(";
      for (size_t i = 0; i < operands.size(); ++i) os << (i ? ", " : "") << "%a" << i << ": " << TensorType(operands[i].elems);
      os << "):\n  %0 = \"flow.dispatch\"(";
      for (size_t i = 0; i < operands.size(); ++i) os << (i ? ", " : "") << "%a" << i;
      os << ") ({\n  ^bb0(";
      for (size_t i = 0; i < operands.size(); ++i) os << (i ? ", " : "") << "%x" << i << ": " << TensorType(operands[i].elems);
      os << "):\n    %r = \"" << op << "\"(";
      for (size_t i = 0; i < operands.size(); ++i) os << (i ? ", " : "") << "%x" << i;
      os << ") " << attrs << " : (" << in_types << ") -> " << out_type << "\n"
         << "    \"flow.return\"(%r) : (" << out_type << ") -> ()\n"
         << "  }) {name = \"" << sym << "\"} : (" << in_types << ") -> " << out_type << "\n"
         << "}) {sym_name = \"" << sym << "\"} : () -> ()\n";
      (*exec_)[sym] = os.str();
    }
    Val v{Fresh(), "transient", elems, {}};
    out_ << "  " << v.name << " = \"stream.async.dispatch\"(";
    for (size_t i = 0; i < operands.size(); ++i) out_ << (i ? ", " : "") << operands[i].name;
    out_ << ") {entry = @" << sym << ", sizes = [" << elems * 4 << "], tied_operands = [-1]} : (";
    for (size_t i = 0; i < operands.size(); ++i) out_ << (i ? ", " : "") << ResType(operands[i].lifetime);
    out_ << ") -> " << ResType(v.lifetime) << "\n";
    std::vector<std::string> names;
    for (const Val& o : operands) names.push_back(o.name);
    std::string vn = v.name;
    Emit([fn, names, vn](Env& e, Env&) {
      std::vector<std::vector<float>> in;
      for (const std::string& n : names) in.push_back(e.f.at(n));
      e.f[vn] = fn(in);
    });
    return v;
  }

  void Constant() {
    std::vector<float> data(kFull);
    for (float& f : data) f = rng_.Value();
    Val v{Fresh(), "constant", kFull, {}};
    out_ << "  " << v.name << " = \"stream.async.constant\"() {size = " << kFull * 4 << " : i64, value = "
         << HexDense(data) << "} : () -> " << ResType("constant") << "\n";
    std::string n = v.name;
    Emit([n, data](Env& e, Env&) { e.f[n] = data; });
    Push(v);
  }

  void Splat() {
    int64_t elems = rng_.Chance(75) ? kFull : kSlice;
    float f = rng_.Value();
    Val v{Fresh(), "transient", elems, {}};
    out_ << "  " << v.name << " = \"stream.async.splat\"() {pattern = " << Bits(f) << " : i64, size = " << elems * 4
         << " : i64} : () -> " << ResType("transient") << "\n";
    std::string n = v.name;
    Emit([n, elems, f](Env& e, Env&) { e.f[n] = std::vector<float>(elems, f); });
    Push(v);
  }

  // A dispatch of an elementwise kind over `a` (and `b`); tied writes `a`'s storage.
  Val DispatchOf(const OpKind& k, const Val& a, const Val* b, bool tied) {
    int64_t elems = a.elems;
    std::string sym = Entry(k, elems);
    Val v{Fresh(), tied ? a.lifetime : "transient", elems, {}};
    out_ << "  " << v.name << " = \"stream.async.dispatch\"(" << a.name << (b ? ", " + b->name : "")
         << ") {entry = @" << sym << ", sizes = [" << elems * 4 << "], tied_operands = [" << (tied ? 0 : -1)
         << "]} : (" << ResType(a.lifetime) << (b ? ", " + ResType(b->lifetime) : "") << ") -> "
         << ResType(v.lifetime) << "\n";
    if (tied) ++prog_.tied_ops;
    auto fn = k.fn;
    std::string vn = v.name, an = a.name, bn = b ? b->name : "";
    Emit([fn, vn, an, bn, elems](Env& e, Env&) {
      const std::vector<float>& x = e.f.at(an);
      std::vector<float> out(elems);
      for (int64_t i = 0; i < elems; ++i) out[i] = fn(x[i], bn.empty() ? 0.0f : e.f.at(bn)[i]);
      e.f[vn] = out;
    });
    return v;
  }

  void Dispatch(bool tied) {
    const OpKind& k = Kinds()[rng_.Int(0, static_cast<int>(Kinds().size()) - 1)];
    int64_t elems = (Count(kSlice) > 0 && rng_.Chance(25)) ? kSlice : kFull;
    if (k.arity == 2 && tied && Count(elems) < 2) return Dispatch(false);
    Val a = Pick(elems);
    Val b;
    if (k.arity == 2) b = Pick(elems, true, tied ? a.name : "");
    if (k.arity == 2 && tied) MaybeReadTiedOperand(a, &b);
    Push(DispatchOf(k, a, k.arity == 2 ? &b : nullptr, tied));
  }

  // A tied dispatch that also reads the value it writes in place, through
  // its second operand (IREE's dispatch_aliased_buffer: elide-async-copies'
  // aliased read rule may remove the clone; the dispatch then binds one
  // buffer three times, codegen::CodegenOptions::aliased_bindings): `*b`
  // becomes `a` itself or a full-size slice of it at offset 0. Drawn from
  // its own PRNG after the operands were picked, so a seed whose program
  // draws none gives the program it gave before this existed.
  void MaybeReadTiedOperand(const Val& a, Val* b) {
    if (!alias_rng_.Chance(25)) return;
    if (alias_rng_.Chance(70)) {
      *b = a;
      Note("tied dispatch reads its tied operand");
    } else {
      *b = SliceOf(a, 0, a.elems);
      Note("tied dispatch reads a full-size view of its tied operand");
    }
  }

  // A tied update of `a` in place (used to bias loop bodies and globals).
  Val TiedUpdate(const Val& a) {
    const OpKind& k = Kinds()[rng_.Int(0, static_cast<int>(Kinds().size()) - 1)];
    if (k.arity == 2 && Count(a.elems) >= 2) {
      Val b = Pick(a.elems, true, a.name);
      MaybeReadTiedOperand(a, &b);
      return DispatchOf(k, a, &b, true);
    }
    if (k.arity == 2) return DispatchOf(Kinds()[6], a, nullptr, true);  // relu
    return DispatchOf(k, a, nullptr, true);
  }

  void Clone() {
    Val a = Pick(-1);
    Val v{Fresh(), "transient", a.elems, {}};
    out_ << "  " << v.name << " = \"stream.async.clone\"(" << a.name << ") {size = " << a.elems * 4
         << " : i64} : (" << ResType(a.lifetime) << ") -> " << ResType(v.lifetime) << "\n";
    std::string vn = v.name, an = a.name;
    Emit([vn, an](Env& e, Env&) { e.f[vn] = e.f.at(an); });
    Push(v);
  }

  Val SliceOf(const Val& a, int64_t off, int64_t len) {
    Val v{Fresh(), a.lifetime == "transient" ? "transient" : a.lifetime, len, {}};
    out_ << "  " << v.name << " = \"stream.async.slice\"(" << a.name << ") {length = " << len * 4
         << " : i64, offset = " << off * 4 << " : i64} : (" << ResType(a.lifetime) << ") -> " << ResType(v.lifetime)
         << "\n";
    std::string vn = v.name, an = a.name;
    Emit([vn, an, off, len](Env& e, Env&) {
      const std::vector<float>& x = e.f.at(an);
      e.f[vn] = std::vector<float>(x.begin() + off, x.begin() + off + len);
    });
    return v;
  }

  void Slice() {
    if (!Count(kFull)) return Splat();
    Val a = Pick(kFull);
    int64_t off = kAlign * rng_.Int(0, (kFull - kSlice) / kAlign);
    Push(SliceOf(a, off, kSlice));
  }

  void Update() {
    if (!Count(kSlice) || !Count(kFull)) return Slice();
    Val t = Pick(kFull);
    Val u = Pick(kSlice);
    int64_t off = kAlign * rng_.Int(0, (kFull - kSlice) / kAlign);
    Val v{Fresh(), t.lifetime, kFull, {}};
    out_ << "  " << v.name << " = \"stream.async.update\"(" << t.name << ", " << u.name << ") {length = "
         << kSlice * 4 << " : i64, offset = " << off * 4 << " : i64, size = " << kFull * 4 << " : i64} : ("
         << ResType(t.lifetime) << ", " << ResType(u.lifetime) << ") -> " << ResType(v.lifetime) << "\n";
    ++prog_.tied_ops;
    std::string vn = v.name, tn = t.name, un = u.name;
    Emit([vn, tn, un, off](Env& e, Env&) {
      std::vector<float> out = e.f.at(tn);
      const std::vector<float>& x = e.f.at(un);
      std::copy(x.begin(), x.end(), out.begin() + off);
      e.f[vn] = out;
    });
    Push(v);
  }

  // An in-place fill of a subrange of `t` (tied: the result reuses t's storage).
  Val FillOf(const Val& t) {
    int64_t len = kAlign * rng_.Int(1, static_cast<int>(t.elems / kAlign));
    int64_t off = kAlign * rng_.Int(0, static_cast<int>((t.elems - len) / kAlign));
    float f = rng_.Value();
    Val v{Fresh(), t.lifetime, t.elems, {}};
    out_ << "  " << v.name << " = \"stream.async.fill\"(" << t.name << ") {length = " << len * 4
         << " : i64, offset = " << off * 4 << " : i64, pattern = " << Bits(f) << " : i64, size = " << t.elems * 4
         << " : i64} : (" << ResType(t.lifetime) << ") -> " << ResType(v.lifetime) << "\n";
    ++prog_.tied_ops;
    std::string vn = v.name, tn = t.name;
    Emit([vn, tn, off, len, f](Env& e, Env&) {
      std::vector<float> out = e.f.at(tn);
      std::fill(out.begin() + off, out.begin() + off + len, f);
      e.f[vn] = out;
    });
    return v;
  }

  void Fill() { Push(FillOf(Pick(-1))); }

  // ---- transfers (the module's topology: none, unified or discrete) ----

  // A transfer of `a` from affinity `from` to `to` ("host", "gpu"). Value
  // semantics: a copy. The result keeps a's type (so elide-transfers may
  // replace it by its source) unless a is a constant, a global's value or a
  // region value: those become transient, a type change the pass must keep.
  Val TransferOf(const Val& a, const char* from, const char* to) {
    bool keep = a.lifetime == "external" || a.lifetime == "transient";
    Val v{Fresh(), keep ? a.lifetime : "transient", a.elems, {}};
    out_ << "  " << v.name << " = \"stream.async.transfer\"(" << a.name << ") {affinity = \"" << to
         << "\", size = " << a.elems * 4 << " : i64, source_affinity = \"" << from << "\"} : ("
         << ResType(a.lifetime) << ") -> " << ResType(v.lifetime) << "\n";
    std::string vn = v.name, an = a.name;
    Emit([vn, an](Env& e, Env&) { e.f[vn] = e.f.at(an); });
    transfer_results_.insert(v.name);
    return v;
  }

  // Two views of one value returned together (15% of programs, drawn from
  // views_rng_ so a seed's program is unchanged where none is drawn): a
  // full value whole and a slice of it, the latest visible transfer result
  // when there is one, else usually a new transfer of a full value
  // (elide-transfers may make it its source, a borrowed argument or a
  // constant, whose result copies --share-result-copies shares: the
  // non-elided build copies once, at the transfer). Added after the
  // results drawn as before.
  void ReturnTwoViews(std::vector<Val>* results) {
    if (!views_rng_.Chance(15)) return;
    std::vector<size_t> full, transfers;
    for (size_t i = 0; i < vals_.size(); ++i) {
      if (vals_[i].elems != kFull) continue;
      full.push_back(i);
      if (transfer_results_.count(vals_[i].name)) transfers.push_back(i);
    }
    if (full.empty()) return;
    Val v = transfers.empty() ? vals_[full[views_rng_.Int(0, static_cast<int>(full.size()) - 1)]]
                              : vals_[transfers.back()];
    // Without one, usually a transfer made for it (host -> gpu).
    if (transfers.empty() && views_rng_.Chance(60)) {
      Note(topology_.empty() ? "transfer (no topology)" : "transfer " + topology_);
      v = TransferOf(v, "host", "gpu");
      transfers.push_back(0);
    }
    Note("two views of one value returned");
    if (!transfers.empty()) Note("two views of a transfer returned");
    Val s = SliceOf(v, kAlign * views_rng_.Int(0, (kFull - kSlice) / kAlign), kSlice);
    if (views_rng_.Chance(50)) {
      results->push_back(v);
      results->push_back(s);
    } else {
      results->push_back(s);
      results->push_back(v);
    }
  }

  // host -> gpu, sometimes back to the host (a round trip gives the original
  // back: elided even across a discrete link), sometimes with the SOURCE
  // filled in place between the legs and the transferred value read after
  // the fill (the pattern that once made elision wrong).
  void Transfer() {
    Note(topology_.empty() ? "transfer (no topology)" : "transfer " + topology_);
    Val a = Pick(-1);
    Val t = TransferOf(a, "host", "gpu");
    Val f;
    bool fill_between = rng_.Chance(40);
    if (fill_between) {
      Note("fill between transfer legs");
      f = FillOf(a);
    }
    Val last = t;
    if (rng_.Chance(50)) {
      Note("transfer round trip");
      Push(t);
      last = TransferOf(t, "gpu", "host");
    }
    if (fill_between) {
      Push(f);
      Push(DispatchOf(Kinds()[0], last, &f, /*tied=*/false));  // read after the fill
    }
    Push(last);
  }

  void Copy() {
    Val t = Pick(-1);
    // Usually another value; sometimes the target itself, ranges possibly
    // overlapping (value semantics: the source is read before the write, so
    // copy-on-write must keep a clone that elision may not remove).
    Val s = rng_.Chance(15) ? t : Pick(-1, true, t.name);
    int64_t maxlen = std::min(t.elems, s.elems);
    int64_t len = kAlign * rng_.Int(1, static_cast<int>(maxlen / kAlign));
    int64_t soff = kAlign * rng_.Int(0, static_cast<int>((s.elems - len) / kAlign));
    int64_t doff = kAlign * rng_.Int(0, static_cast<int>((t.elems - len) / kAlign));
    Val v{Fresh(), t.lifetime, t.elems, {}};
    out_ << "  " << v.name << " = \"stream.async.copy\"(" << t.name << ", " << s.name << ") {dst_offset = "
         << doff * 4 << " : i64, length = " << len * 4 << " : i64, size = " << t.elems * 4
         << " : i64, src_offset = " << soff * 4 << " : i64} : (" << ResType(t.lifetime) << ", "
         << ResType(s.lifetime) << ") -> " << ResType(v.lifetime) << "\n";
    ++prog_.tied_ops;
    std::string vn = v.name, tn = t.name, sn = s.name;
    Emit([vn, tn, sn, soff, doff, len](Env& e, Env&) {
      std::vector<float> out = e.f.at(tn);
      const std::vector<float>& x = e.f.at(sn);
      std::copy(x.begin() + soff, x.begin() + soff + len, out.begin() + doff);
      e.f[vn] = out;
    });
    Push(v);
  }

  // ---- host values and conditions ----

  std::string IndexConst(int64_t v) {
    std::string n = Fresh();
    out_ << "  " << n << " = \"arith.constant\"() {value = " << v << " : i64} : () -> index\n";
    Emit([n, v](Env& e, Env&) { e.i[n] = v; });
    return n;
  }

  // An i1 condition: a host constant, or computed on the device (x[0] > 0 of
  // a visible full value, read back with stream.async.load).
  std::string Condition() {
    std::string n = Fresh();
    if (rng_.Chance(50) || !Count(kFull)) {
      int64_t v = rng_.Int(0, 1);
      out_ << "  " << n << " = \"arith.constant\"() {value = " << v << " : i64} : () -> i1\n";
      Emit([n, v](Env& e, Env&) { e.i[n] = v; });
      return n;
    }
    Note("device condition");
    Val a = Pick(kFull);
    Val s = SliceOf(a, 0, 1);
    if (!executables_.count("greater_1")) executables_["greater_1"] = ExecutableGreater1("greater_1");
    std::string zero = Fresh(), t = Fresh();
    out_ << "  " << zero << " = \"stream.async.constant\"() {size = 4 : i64, value = " << HexDense({0.0f})
         << "} : () -> " << ResType("constant") << "\n";
    out_ << "  " << t << " = \"stream.async.dispatch\"(" << s.name << ", " << zero
         << ") {entry = @greater_1, sizes = [1], tied_operands = [-1]} : (" << ResType(s.lifetime) << ", "
         << ResType("constant") << ") -> " << ResType("transient") << "\n";
    out_ << "  " << n << " = \"stream.async.load\"(" << t << ") {dtype = \"i1\", offset = 0 : i64} : ("
         << ResType("transient") << ") -> i1\n";
    std::string sn = s.name;
    Emit([n, sn](Env& e, Env&) { e.i[n] = e.f.at(sn)[0] > 0.0f ? 1 : 0; });
    return n;
  }

  // ---- regions ----

  // Generates a region body: 1..max_steps steps at `depth`, then picks the
  // values to yield (one per entry of `elems`). Values defined inside stay
  // inside (scope). Returns the yielded values and the region's host ops.
  std::pair<std::vector<Val>, HostOps> Region(int depth, int max_steps, const std::vector<int64_t>& elems,
                                              const std::vector<Val>& args, const std::vector<Val>& bias_tied) {
    size_t mark = vals_.size();
    HostOps ops;
    HostOps* saved = ops_;
    ops_ = &ops;
    for (const Val& a : args) Push(a);
    std::vector<Val> updated;
    for (const Val& b : bias_tied) {
      if (rng_.Chance(70)) {
        Val u = TiedUpdate(b);
        Push(u);
        updated.push_back(u);
      } else {
        updated.push_back(b);
      }
    }
    int steps = rng_.Int(0, max_steps);
    for (int s = 0; s < steps; ++s) Step(depth);
    std::vector<Val> yields;
    for (size_t i = 0; i < elems.size(); ++i) {
      // Loop-carried values: usually the updated carried value itself.
      if (i < updated.size() && rng_.Chance(70)) {
        yields.push_back(updated[i]);
      } else {
        yields.push_back(Count(elems[i]) ? Pick(elems[i]) : updated.at(i));
      }
    }
    vals_.resize(mark);
    ops_ = saved;
    return {yields, std::move(ops)};
  }

  static std::string Types(const std::vector<Val>& vs) {
    std::string s;
    for (size_t i = 0; i < vs.size(); ++i) s += (i ? ", " : "") + ResType(vs[i].lifetime);
    return s;
  }
  static std::string Names(const std::vector<Val>& vs) {
    std::string s;
    for (size_t i = 0; i < vs.size(); ++i) s += (i ? ", " : "") + vs[i].name;
    return s;
  }
  void Yield(const char* op, const std::vector<Val>& ys) {
    out_ << "  \"" << op << "\"(" << Names(ys) << ") : (" << Types(ys) << ") -> ()\n";
  }
  int64_t ResultElems() { return (Count(kSlice) > 0 && rng_.Chance(25)) ? kSlice : kFull; }

  void If(int depth) {
    Note("scf.if");
    std::string c = Condition();
    int64_t elems = ResultElems();
    Val r{Fresh(), "*", elems, {}};
    out_ << "  " << r.name << " = \"scf.if\"(" << c << ") ({\n";
    auto [ty, tops] = Region(depth + 1, 3, {elems}, {}, {});
    Yield("scf.yield", ty);
    out_ << "  }, {\n";
    auto [ey, eops] = Region(depth + 1, 3, {elems}, {}, {});
    Yield("scf.yield", ey);
    out_ << "  }) : (i1) -> " << ResType("*") << "\n";
    std::string rn = r.name, tn = ty[0].name, en = ey[0].name;
    HostOps t = tops, el = eops;
    Emit([c, rn, tn, en, t, el](Env& e, Env& g) {
      bool cond = e.i.at(c) != 0;
      RunOps(cond ? t : el, e, g);
      e.f[rn] = e.f.at(cond ? tn : en);
    });
    Push(r);
  }

  // The switch index: a host constant, or the induction variable of an
  // enclosing scf.for.
  void Switch(int depth) {
    Note("scf.index_switch");
    std::string idx;
    if (!ivs_.empty() && rng_.Chance(60)) {
      idx = ivs_.back();
    } else {
      idx = IndexConst(rng_.Int(0, 3));
    }
    std::vector<int64_t> cases = rng_.Chance(50) ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{1, 2, 5};
    int64_t elems = ResultElems();
    Val r{Fresh(), "*", elems, {}};
    out_ << "  " << r.name << " = \"scf.index_switch\"(" << idx << ") ({\n";
    std::vector<std::string> ynames;
    std::vector<HostOps> regions;
    for (size_t k = 0; k <= cases.size(); ++k) {
      if (k) out_ << "  }, {\n";
      auto [ys, ops] = Region(depth + 1, 2, {elems}, {}, {});
      Yield("scf.yield", ys);
      ynames.push_back(ys[0].name);
      regions.push_back(std::move(ops));
    }
    out_ << "  }) {cases = [";
    for (size_t k = 0; k < cases.size(); ++k) out_ << (k ? ", " : "") << cases[k];
    out_ << "]} : (index) -> " << ResType("*") << "\n";
    std::string rn = r.name;
    Emit([idx, rn, cases, ynames, regions](Env& e, Env& g) {
      int64_t v = e.i.at(idx);
      size_t k = cases.size();
      for (size_t j = 0; j < cases.size(); ++j)
        if (cases[j] == v) k = j;
      RunOps(regions[k], e, g);
      e.f[rn] = e.f.at(ynames[k]);
    });
    Push(r);
  }

  // 1-2 loop-carried resources with inits picked among visible values (an
  // init may stay live after the loop: it is a candidate for later ops).
  std::vector<Val> Inits() {
    std::vector<Val> inits;
    int n = rng_.Int(1, 2);
    for (int i = 0; i < n; ++i) {
      Val v = Pick(ResultElems());
      bool dup = false;
      for (const Val& o : inits) dup |= o.name == v.name;
      if (!dup) inits.push_back(v);
    }
    return inits;
  }

  void For(int depth) {
    Note("scf.for");
    std::vector<Val> inits = Inits();
    int64_t trips = rng_.Int(0, 3);
    std::string lb = IndexConst(0), ub = IndexConst(trips), st = IndexConst(1);
    std::vector<Val> results, args;
    std::vector<int64_t> elems;
    for (const Val& v : inits) {
      results.push_back(Val{Fresh(), "*", v.elems, {}});
      elems.push_back(v.elems);
    }
    std::string iv = Fresh();
    for (const Val& v : inits) args.push_back(Val{Fresh(), "*", v.elems, {}});
    out_ << "  " << (results.size() == 1 ? results[0].name : results[0].name + ":" + std::to_string(results.size()))
         << " = \"scf.for\"(" << lb << ", " << ub << ", " << st << ", " << Names(inits) << ") ({\n"
         << "  ^bb0(" << iv << ": index";
    for (const Val& a : args) out_ << ", " << a.name << ": " << ResType("*");
    out_ << "):\n";
    ivs_.push_back(iv);
    auto [ys, body] = Region(depth + 1, 3, elems, args, args);
    ivs_.pop_back();
    Yield("scf.yield", ys);
    out_ << "  }) : (index, index, index, " << Types(inits) << ") -> (" << Types(results) << ")\n";
    FixMultiResultNames(&results);
    std::vector<std::string> in, an, yn, rn;
    for (size_t i = 0; i < inits.size(); ++i) {
      in.push_back(inits[i].name);
      an.push_back(args[i].name);
      yn.push_back(ys[i].name);
      rn.push_back(results[i].name);
    }
    HostOps b = body;
    Emit([trips, iv, in, an, yn, rn, b](Env& e, Env& g) {
      std::vector<std::vector<float>> cur;
      for (const std::string& n : in) cur.push_back(e.f.at(n));
      for (int64_t t = 0; t < trips; ++t) {
        e.i[iv] = t;
        for (size_t i = 0; i < an.size(); ++i) e.f[an[i]] = cur[i];
        RunOps(b, e, g);
        for (size_t i = 0; i < yn.size(); ++i) cur[i] = e.f.at(yn[i]);
      }
      for (size_t i = 0; i < rn.size(); ++i) e.f[rn[i]] = cur[i];
    });
    for (const Val& r : results) Push(r);
  }

  // scf.while with a host counter carried next to 1-2 resources:
  //   before: %lt = arith.cmpi slt %i, %n; scf.condition(%lt, %i, %x...)
  //   after:  <steps, tied updates of the carried values>; %k = %j + 1; yield
  void While(int depth) {
    Note("scf.while");
    std::vector<Val> inits = Inits();
    int64_t trips = rng_.Int(0, 3);
    std::string c0 = IndexConst(0), c1 = IndexConst(1), n = IndexConst(trips);
    std::vector<Val> results, bargs, aargs;
    std::vector<int64_t> elems;
    for (const Val& v : inits) {
      results.push_back(Val{Fresh(), "*", v.elems, {}});
      elems.push_back(v.elems);
    }
    std::string i = Fresh(), lt = Fresh(), j = Fresh(), k = Fresh();
    for (const Val& v : inits) bargs.push_back(Val{Fresh(), "*", v.elems, {}});
    for (const Val& v : inits) aargs.push_back(Val{Fresh(), "*", v.elems, {}});
    std::string rtypes = "index, " + Types(results);
    out_ << "  " << results[0].name << ":" << results.size() + 1 << " = \"scf.while\"(" << c0 << ", " << Names(inits)
         << ") ({\n  ^bb0(" << i << ": index";
    for (const Val& a : bargs) out_ << ", " << a.name << ": " << ResType("*");
    out_ << "):\n"
         << "  " << lt << " = \"arith.cmpi\"(" << i << ", " << n << ") {predicate = \"slt\"} : (index, index) -> i1\n"
         << "  \"scf.condition\"(" << lt << ", " << i << ", " << Names(bargs) << ") : (i1, " << rtypes << ") -> ()\n"
         << "  }, {\n  ^bb0(" << j << ": index";
    for (const Val& a : aargs) out_ << ", " << a.name << ": " << ResType("*");
    out_ << "):\n";
    auto [ys, body] = Region(depth + 1, 3, elems, aargs, aargs);
    out_ << "  " << k << " = \"arith.addi\"(" << j << ", " << c1 << ") : (index, index) -> index\n";
    out_ << "  \"scf.yield\"(" << k << ", " << Names(ys) << ") : (index, " << Types(ys) << ") -> ()\n";
    out_ << "  }) : (index, " << Types(inits) << ") -> (" << rtypes << ")\n";
    // Result #0 is the counter; the resources are #1.. .
    std::string base = results[0].name;
    for (size_t r = 0; r < results.size(); ++r) results[r].name = base + "#" + std::to_string(r + 1);
    std::vector<std::string> in, an, yn, rn;
    for (size_t q = 0; q < inits.size(); ++q) {
      in.push_back(inits[q].name);
      an.push_back(aargs[q].name);
      yn.push_back(ys[q].name);
      rn.push_back(results[q].name);
    }
    HostOps b = body;
    Emit([trips, in, an, yn, rn, b](Env& e, Env& g) {
      std::vector<std::vector<float>> cur;
      for (const std::string& q : in) cur.push_back(e.f.at(q));
      for (int64_t t = 0; t < trips; ++t) {
        for (size_t q = 0; q < an.size(); ++q) e.f[an[q]] = cur[q];
        RunOps(b, e, g);
        for (size_t q = 0; q < yn.size(); ++q) cur[q] = e.f.at(yn[q]);
      }
      for (size_t q = 0; q < rn.size(); ++q) e.f[rn[q]] = cur[q];
    });
    for (const Val& r : results) Push(r);
  }

  // %r:2 results are referred to as %r#0, %r#1.
  static void FixMultiResultNames(std::vector<Val>* results) {
    if (results->size() < 2) return;
    std::string base = (*results)[0].name;
    for (size_t r = 0; r < results->size(); ++r) (*results)[r].name = base + "#" + std::to_string(r);
  }

  std::string NewBlock() { return "^bb" + std::to_string(++next_block_); }

  // A branch diamond in the function body:
  //   cf.cond_br %c, ^T(%a), ^F(%b); ^T(%ta): ...; cf.br ^J(%x)
  //   ^F(%fb): ...; cf.br ^J(%y); ^J(%j): (continues)
  void CfDiamond() {
    Note("cf.cond_br");
    std::string c = Condition();
    int64_t elems = ResultElems();
    Val a = Pick(elems), b = Pick(elems);
    std::string T = NewBlock(), F = NewBlock(), J = NewBlock();
    Val ta{Fresh(), "*", elems, {}}, fb{Fresh(), "*", elems, {}}, jv{Fresh(), "*", elems, {}};
    out_ << "  \"cf.cond_br\"(" << c << ", " << a.name << ", " << b.name << ")[" << T << ", " << F
         << "] {operand_segments = [1, 1, 1]} : (i1, " << ResType(a.lifetime) << ", " << ResType(b.lifetime)
         << ") -> ()\n";
    in_cf_body_ = true;
    out_ << T << "(" << ta.name << ": " << ResType("*") << "):\n";
    auto [ty, tops] = Region(1, 3, {elems}, {ta}, {ta});
    out_ << "  \"cf.br\"(" << ty[0].name << ")[" << J << "] : (" << ResType(ty[0].lifetime) << ") -> ()\n";
    out_ << F << "(" << fb.name << ": " << ResType("*") << "):\n";
    auto [fy, fops] = Region(1, 3, {elems}, {fb}, {fb});
    out_ << "  \"cf.br\"(" << fy[0].name << ")[" << J << "] : (" << ResType(fy[0].lifetime) << ") -> ()\n";
    out_ << J << "(" << jv.name << ": " << ResType("*") << "):\n";
    in_cf_body_ = false;
    std::string an = a.name, bn = b.name, tan = ta.name, fbn = fb.name, tyn = ty[0].name, fyn = fy[0].name,
                jn = jv.name;
    HostOps t = tops, f = fops;
    Emit([c, an, bn, tan, fbn, tyn, fyn, jn, t, f](Env& e, Env& g) {
      if (e.i.at(c)) {
        e.f[tan] = e.f.at(an);
        RunOps(t, e, g);
        e.f[jn] = e.f.at(tyn);
      } else {
        e.f[fbn] = e.f.at(bn);
        RunOps(f, e, g);
        e.f[jn] = e.f.at(fyn);
      }
    });
    Push(jv);
  }

  // A loop built from blocks:
  //   cf.br ^H(%c0, %init)
  //   ^H(%i, %x): %lt = %i < n; cf.cond_br %lt, ^B(%i, %x), ^E(%x)
  //   ^B(%j, %y): ...; %k = %j + 1; cf.br ^H(%k, %next)
  //   ^E(%z): (continues)
  void CfLoop() {
    Note("cf.br loop");
    int64_t elems = ResultElems();
    Val init = Pick(elems);
    int64_t trips = rng_.Int(0, 3);
    std::string c0 = IndexConst(0), c1 = IndexConst(1), n = IndexConst(trips);
    std::string H = NewBlock(), B = NewBlock(), E = NewBlock();
    std::string i = Fresh(), lt = Fresh(), j = Fresh(), k = Fresh();
    Val x{Fresh(), "*", elems, {}}, y{Fresh(), "*", elems, {}}, z{Fresh(), "*", elems, {}};
    out_ << "  \"cf.br\"(" << c0 << ", " << init.name << ")[" << H << "] : (index, " << ResType(init.lifetime)
         << ") -> ()\n";
    out_ << H << "(" << i << ": index, " << x.name << ": " << ResType("*") << "):\n";
    out_ << "  " << lt << " = \"arith.cmpi\"(" << i << ", " << n << ") {predicate = \"slt\"} : (index, index) -> i1\n";
    out_ << "  \"cf.cond_br\"(" << lt << ", " << i << ", " << x.name << ", " << x.name << ")[" << B << ", " << E
         << "] {operand_segments = [1, 2, 1]} : (i1, index, " << ResType("*") << ", " << ResType("*") << ") -> ()\n";
    out_ << B << "(" << j << ": index, " << y.name << ": " << ResType("*") << "):\n";
    in_cf_body_ = true;
    auto [ys, body] = Region(1, 3, {elems}, {y}, {y});
    in_cf_body_ = false;
    out_ << "  " << k << " = \"arith.addi\"(" << j << ", " << c1 << ") : (index, index) -> index\n";
    out_ << "  \"cf.br\"(" << k << ", " << ys[0].name << ")[" << H << "] : (index, " << ResType(ys[0].lifetime)
         << ") -> ()\n";
    out_ << E << "(" << z.name << ": " << ResType("*") << "):\n";
    std::string inn = init.name, yn = y.name, yyn = ys[0].name, zn = z.name;
    HostOps b = body;
    Emit([trips, inn, yn, yyn, zn, b](Env& e, Env& g) {
      std::vector<float> cur = e.f.at(inn);
      for (int64_t t = 0; t < trips; ++t) {
        e.f[yn] = cur;
        RunOps(b, e, g);
        cur = e.f.at(yyn);
      }
      e.f[zn] = cur;
    });
    Push(z);
  }

  // ---- calls into the callee module `lib` ----

  static std::string TensorTypes(const std::vector<int64_t>& elems) {
    std::string s;
    for (size_t i = 0; i < elems.size(); ++i) s += (i ? ", " : "") + TensorType(elems[i]);
    return s;
  }
  static std::string Ownership(const std::vector<bool>& consume) {
    std::string s;
    for (size_t i = 0; i < consume.size(); ++i) s += std::string(i ? ", " : "") + (consume[i] ? "\"consume\"" : "\"borrow\"");
    return s;
  }

  std::string LibModule() const {
    std::ostringstream os;
    for (const auto& e : lib_executables_) os << e.second;
    for (const LibFn& fn : lib_) os << fn.text;
    return os.str();
  }

  // Generates the exported function lib.f<index>: 1-2 f32 arguments (borrow
  // or consume), a tied update in place of a consumed argument (60%), 0-3
  // elementwise dispatches (fresh or tied), fills and clones, and 1-2 results,
  // often an argument itself (returned unchanged, or updated in place).
  void LibFunction(int index) {
    LibFn fn;
    fn.name = "f" + std::to_string(index);
    std::vector<Val> saved_vals;
    std::swap(vals_, saved_vals);
    std::ostringstream body;
    std::swap(out_, body);
    HostOps ops;
    HostOps* saved_ops = ops_;
    ops_ = &ops;
    exec_ = &lib_executables_;
    int nargs = rng_.Int(1, 2);
    std::vector<Val> args;
    for (int i = 0; i < nargs; ++i) {
      int64_t elems = (i == 0 || rng_.Chance(50)) ? kFull : kSlice;
      bool consume = rng_.Chance(50);
      fn.arg_elems.push_back(elems);
      fn.consume.push_back(consume);
      Val v{Fresh(), "external", elems, {}};
      out_ << "  " << v.name << " = \"stream.tensor.import\"(%" << fn.name << "a" << i << ") {consume = "
           << (consume ? "true" : "false") << ", size = " << elems * 4 << " : i64} : (" << TensorType(elems)
           << ") -> " << ResType("external") << "\n";
      fn.arg_names.push_back(v.name);
      args.push_back(v);
      Push(v);
    }
    for (int i = 0; i < nargs; ++i)
      if (fn.consume[i] && rng_.Chance(60)) Push(TiedUpdate(args[i]));
    int steps = rng_.Int(0, 3);
    for (int s = 0; s < steps; ++s) {
      int r = rng_.Int(0, 99);
      if (r < 45) Dispatch(false);
      else if (r < 80) Dispatch(true);
      else if (r < 90) Fill();
      else Clone();
    }
    int nres = rng_.Chance(25) ? 2 : 1;
    std::vector<std::string> exports;
    for (int r = 0; r < nres; ++r) {
      Val v = rng_.Chance(30) ? args[rng_.Int(0, nargs - 1)] : Pick(-1, /*recent=*/true);
      std::string n = Fresh();
      out_ << "  " << n << " = \"stream.tensor.export\"(" << v.name << ") {size = " << v.elems * 4 << " : i64} : ("
           << ResType(v.lifetime) << ") -> " << TensorType(v.elems) << "\n";
      fn.result_elems.push_back(v.elems);
      fn.result_names.push_back(v.name);
      exports.push_back(n);
    }
    std::ostringstream os;
    os << "\"func.func\"() ({\n^bb0(";
    for (int i = 0; i < nargs; ++i) os << (i ? ", " : "") << "%" << fn.name << "a" << i << ": " << TensorType(fn.arg_elems[i]);
    os << "):\n" << out_.str() << "  \"func.return\"(";
    for (size_t i = 0; i < exports.size(); ++i) os << (i ? ", " : "") << exports[i];
    os << ") : (" << TensorTypes(fn.result_elems) << ") -> ()\n}) {arg_ownership = [" << Ownership(fn.consume)
       << "], sym_name = \"" << fn.name << "\"} : () -> ()\n";
    fn.text = os.str();
    fn.body = std::move(ops);
    exec_ = &executables_;
    ops_ = saved_ops;
    std::swap(out_, body);
    std::swap(vals_, saved_vals);
    lib_.push_back(std::move(fn));
  }

  Val SplatOf(int64_t elems) {
    float f = rng_.Value();
    Val v{Fresh(), "transient", elems, {}};
    out_ << "  " << v.name << " = \"stream.async.splat\"() {pattern = " << Bits(f) << " : i64, size = " << elems * 4
         << " : i64} : () -> " << ResType("transient") << "\n";
    std::string n = v.name;
    Emit([n, elems, f](Env& e, Env&) { e.f[n] = std::vector<float>(elems, f); });
    Push(v);
    return v;
  }

  // A func.call of a random lib function. Operands are visible values of the
  // right size (any lifetime: imports, constants, globals, slices, call
  // results, region values); a consumed operand is never also another
  // operand of the same call. The host reference runs the callee's body on
  // copies of the operands (value semantics: the caller never sees a
  // consumed operand change).
  void Call(int depth) {
    const LibFn& fn = lib_[rng_.Int(0, static_cast<int>(lib_.size()) - 1)];
    Note("func.call");
    if (depth > 0 || in_cf_body_) Note("call in a region or branch");
    std::vector<Val> operands;
    for (size_t i = 0; i < fn.arg_elems.size(); ++i) {
      int64_t elems = fn.arg_elems[i];
      std::string exclude = (i == 1 && (fn.consume[0] || fn.consume[1])) ? operands[0].name : "";
      Val a = Pick(elems, true, exclude);
      if (a.elems != elems || (!exclude.empty() && a.name == exclude)) a = SplatOf(elems);
      Note(fn.consume[i] ? "call consume operand" : "call borrow operand");
      if (call_results_.count(a.name)) Note("call result passed to a call");
      operands.push_back(a);
    }
    ++calls_;
    std::vector<Val> results;
    for (int64_t e : fn.result_elems) results.push_back(Val{Fresh(), "external", e, {}});
    out_ << "  " << (results.size() == 1 ? results[0].name : results[0].name + ":" + std::to_string(results.size()))
         << " = \"func.call\"(" << Names(operands) << ") {callee = @" << (local_lib_ ? "" : "lib.") << fn.name
         << ", sizes = [";
    for (size_t r = 0; r < results.size(); ++r) out_ << (r ? ", " : "") << results[r].elems * 4;
    out_ << "]} : (" << Types(operands) << ") -> "
         << (results.size() == 1 ? Types(results) : "(" + Types(results) + ")") << "\n";
    FixMultiResultNames(&results);
    for (size_t i = 0; i < operands.size(); ++i)
      if (fn.consume[i]) consumed_operands_.push_back({operands[i].name, static_cast<size_t>(out_.tellp())});
    std::vector<std::string> on, rn;
    for (const Val& v : operands) on.push_back(v.name);
    for (const Val& v : results) rn.push_back(v.name);
    std::vector<std::string> an = fn.arg_names, cr = fn.result_names;
    HostOps body = fn.body;
    Emit([on, rn, an, cr, body](Env& e, Env&) {
      Env callee, no_globals;
      for (size_t i = 0; i < on.size(); ++i) callee.f[an[i]] = e.f.at(on[i]);
      RunOps(body, callee, no_globals);
      for (size_t r = 0; r < rn.size(); ++r) e.f[rn[r]] = callee.f.at(cr[r]);
    });
    for (const Val& r : results) {
      call_results_.insert(r.name);
      Push(r);
    }
  }

  // Counts consumed call operands that @main still reads textually after the
  // call (copy-on-write must keep a copy) and those that are dead after it
  // (moved, no copy once elided). A value read again by a later trip of an
  // enclosing loop counts as dead here: the split is a statistic only.
  void NoteConsumedOperandUses() {
    std::string text = out_.str();
    for (const auto& [name, pos] : consumed_operands_) {
      bool later = false;
      for (size_t at = text.find(name, pos); at != std::string::npos && !later; at = text.find(name, at + 1)) {
        char next = at + name.size() < text.size() ? text[at + name.size()] : ' ';
        later = !std::isdigit(static_cast<unsigned char>(next)) && next != '#';
      }
      Note(later ? "call consume operand read later" : "call consume operand dead after");
    }
  }

  // ---- globals ----

  // `v` forwarded by a stream.timepoint.await on an immediate timepoint (an
  // alias of the same contents).
  Val AwaitOf(const Val& v) {
    std::string tp = Fresh();
    Val w{Fresh(), v.lifetime, v.elems, {}};
    out_ << "  " << tp << " = \"stream.timepoint.immediate\"() : () -> !stream.timepoint\n";
    out_ << "  " << w.name << " = \"stream.timepoint.await\"(" << tp << ", " << v.name
         << ") : (!stream.timepoint, " << ResType(v.lifetime) << ") -> " << ResType(w.lifetime) << "\n";
    std::string wn = w.name, vn = v.name;
    Emit([wn, vn](Env& e, Env&) { e.f[wn] = e.f.at(vn); });
    return w;
  }

  void GlobalLoad(const std::string& g) {
    Note("util.global.load");
    Val v{Fresh(), "variable", kFull, {}};
    out_ << "  " << v.name << " = \"util.global.load\"() {global = @" << g << "} : () -> " << ResType("variable")
         << "\n";
    std::string vn = v.name;
    Emit([vn, g](Env& e, Env& gl) { e.f[vn] = gl.f.at(g); });
    Push(v);
  }

  void GlobalStore(const std::string& g) {
    if (!Count(kFull)) return;
    Note("util.global.store");
    Val v = Pick(kFull);
    if (call_results_.count(v.name)) Note("call result stored to a global");
    out_ << "  \"util.global.store\"(" << v.name << ") {global = @" << g << "} : (" << ResType(v.lifetime)
         << ") -> ()\n";
    std::string vn = v.name;
    Emit([vn, g](Env& e, Env& gl) { gl.f[g] = e.f.at(vn); });
  }

  // The state-update idiom: load, maybe read, update in place (tied), store
  // back to the same global (zero copies once elided).
  void GlobalStateUpdate(const std::string& g) {
    Note("global state update");
    GlobalLoad(g);
    Val s = vals_.back();
    if (rng_.Chance(50)) Push(DispatchOf(Kinds()[0], s, &vals_.front(), false));  // out = state + arg0
    // A view of the loaded (old) state, read after the update: a slice or
    // an await alias. It must still see the old contents.
    Val view;
    int kind = rng_.Int(0, 99);
    if (kind < 25) {
      Note("global slice read after update");
      view = SliceOf(s, kAlign * rng_.Int(0, (kFull - kSlice) / kAlign), kSlice);
    } else if (kind < 45) {
      Note("global await read after update");
      view = AwaitOf(s);
    }
    Val u = TiedUpdate(s);
    out_ << "  \"util.global.store\"(" << u.name << ") {global = @" << g << "} : (" << ResType(u.lifetime)
         << ") -> ()\n";
    std::string un = u.name;
    Emit([un, g](Env& e, Env& gl) { gl.f[g] = e.f.at(un); });
    if (!view.name.empty()) {
      Push(view);  // later steps (and regions) may read it too
      Push(DispatchOf(Kinds()[7], view, nullptr, /*tied=*/false));  // neg(view): a read after the store
    }
  }

  Rng rng_;
  Rng lib_rng_;  // draws the callee module (swapped into rng_ while it is generated)
  Rng alias_rng_;  // draws tied dispatches reading their tied operand (MaybeReadTiedOperand)
  Rng structured_rng_;  // draws concats, slice and pad dispatches (Structured)
  Rng views_rng_;  // draws two views of one value returned together (ReturnTwoViews)
  std::set<std::string> transfer_results_;  // SSA names of stream.async.transfer results
  GeneratedProgram prog_;
  std::vector<Val> vals_;  // visible values (scoped: regions truncate it)
  std::map<std::string, std::string> executables_;
  std::map<std::string, std::string> lib_executables_;
  std::map<std::string, std::string>* exec_ = &executables_;  // where Entry() adds executables
  std::vector<LibFn> lib_;
  bool local_lib_ = false;  // lib_ functions defined in the main module (VM CALL)
  std::set<std::string> call_results_;  // SSA names of func.call results in @main
  // Consumed call operands of @main and the offset in out_ after their call.
  std::vector<std::pair<std::string, size_t>> consumed_operands_;
  int calls_ = 0;
  std::ostringstream out_;
  HostOps top_;
  HostOps* ops_ = &top_;
  std::vector<std::string> globals_;
  std::string topology_;  // "", "unified" or "discrete": the module's kiln.topology
  std::vector<std::string> ivs_;  // induction variables of enclosing scf.for
  bool in_cf_body_ = false;
  int next_id_ = 0;
  int next_block_ = 0;
};

}  // namespace

GeneratedProgram Generate(uint64_t seed) { return Generator(seed).Run(); }

}  // namespace kiln::difftest
