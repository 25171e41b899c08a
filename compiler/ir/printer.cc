// Printer for the generic textual form (rules in printer.h).
#include "compiler/ir/printer.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <unordered_map>

namespace kiln::ir {

// ---------------------------------------------------------------------------
// Scalars and attributes
// ---------------------------------------------------------------------------
std::string FormatFloat(double v, bool as_f32) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  const int max_digits = as_f32 ? 9 : 17;
  for (int p = 1; p <= max_digits; ++p) {
    std::snprintf(buf, sizeof(buf), "%.*g", p, v);
    bool exact = as_f32 ? std::strtof(buf, nullptr) == static_cast<float>(v)
                        : std::strtod(buf, nullptr) == v;
    if (exact) break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

namespace {

bool IsF32Exact(double v) {
  return std::isfinite(v) && static_cast<double>(static_cast<float>(v)) == v;
}

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.' || c == '-';
}

std::string Quote(const std::string& s) {
  std::string r = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': r += "\\\""; break;
      case '\\': r += "\\\\"; break;
      case '\n': r += "\\n"; break;
      case '\t': r += "\\t"; break;
      default:
        if (c < 0x20 || c >= 0x7F) {
          char buf[4];
          std::snprintf(buf, sizeof(buf), "\\%02X", c);
          r += buf;
        } else {
          r += static_cast<char>(c);
        }
    }
  }
  return r + "\"";
}

// Attribute names and symbols: bare when they are identifiers, else quoted.
std::string BareOrQuoted(const std::string& s) {
  bool bare = !s.empty() && IsIdentStart(s[0]);
  for (char c : s) bare = bare && IsIdentChar(c) && c != '-';
  return bare ? s : Quote(s);
}

// Small dense literal elements; returns false if some element can't be
// printed exactly in decimal (non-finite float, bool byte > 1).
bool DenseElementText(const DenseElements& d, int64_t i, std::string* out) {
  const uint8_t* p = d.bytes();
  switch (d.type.dtype) {
    case DType::kF32: {
      float f;
      std::memcpy(&f, p + 4 * i, 4);
      if (!std::isfinite(f)) return false;
      *out = FormatFloat(f, true);
      return true;
    }
    case DType::kF16: {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      float f = HalfToFloat(h);
      if (!std::isfinite(f)) return false;
      // Shortest text that reads back (via float) to the same half.
      char buf[32];
      for (int p = 1; p <= 9; ++p) {
        std::snprintf(buf, sizeof(buf), "%.*g", p, static_cast<double>(f));
        if (FloatToHalf(std::strtof(buf, nullptr)) == h) break;
      }
      *out = buf;
      if (out->find_first_of(".e") == std::string::npos) *out += ".0";
      return true;
    }
    case DType::kF64: {
      double f;
      std::memcpy(&f, p + 8 * i, 8);
      if (!std::isfinite(f)) return false;
      *out = FormatFloat(f, false);
      return true;
    }
    case DType::kBool:
      if (p[i] > 1) return false;
      *out = p[i] ? "true" : "false";
      return true;
    case DType::kBF16: {
      uint16_t b;
      std::memcpy(&b, p + 2 * i, 2);
      float f = BF16ToFloat(b);
      if (!std::isfinite(f)) return false;
      char buf[32];
      for (int p = 1; p <= 9; ++p) {
        std::snprintf(buf, sizeof(buf), "%.*g", p, static_cast<double>(f));
        if (FloatToBF16(std::strtof(buf, nullptr)) == b) break;
      }
      *out = buf;
      if (out->find_first_of(".e") == std::string::npos) *out += ".0";
      return true;
    }
    case DType::kU8: *out = std::to_string(p[i]); return true;
    case DType::kU16: case DType::kU32: *out = std::to_string(d.GetInt(i)); return true;
    case DType::kU64: {
      uint64_t v;
      std::memcpy(&v, p + 8 * i, 8);
      *out = std::to_string(v);
      return true;
    }
    case DType::kI8: case DType::kI16: case DType::kI32: case DType::kI64:
      *out = std::to_string(d.GetInt(i));
      return true;
    default: return false;
  }
}

std::string PrintDense(const DenseElements& d) {
  const int64_t n = d.type.num_elements();
  const bool size_ok = d.data && static_cast<int64_t>(d.data->size()) == d.type.byte_size();
  if (size_ok && n <= 16) {
    std::vector<std::string> elems;
    bool ok = true;
    for (int64_t i = 0; i < n && ok; ++i) {
      std::string e;
      ok = DenseElementText(d, i, &e);
      elems.push_back(std::move(e));
    }
    if (ok) {
      std::string s = "dense<";
      if (d.type.rank() == 0) {
        s += elems[0];
      } else {
        s += '[';
        for (size_t i = 0; i < elems.size(); ++i) s += (i ? ", " : "") + elems[i];
        s += ']';
      }
      return s + "> : " + d.type.ToString();
    }
  }
  static const char kHex[] = "0123456789ABCDEF";
  std::string s = "dense<\"0x";
  if (d.data) {
    s.reserve(s.size() + 2 * d.data->size() + 32);
    for (uint8_t b : *d.data) {
      s += kHex[b >> 4];
      s += kHex[b & 15];
    }
  }
  return s + "\"> : " + d.type.ToString();
}

}  // namespace

std::string PrintAttribute(const Attribute& attr) {
  struct Visitor {
    std::string operator()(int64_t v) const { return std::to_string(v) + " : i64"; }
    std::string operator()(double v) const {
      std::string d = FormatFloat(v, false);
      if (IsF32Exact(v)) {
        std::string f = FormatFloat(v, true);
        if (f.size() < d.size()) return f + " : f32";
      }
      return d + " : f64";
    }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const std::string& v) const { return Quote(v); }
    std::string operator()(const std::vector<int64_t>& v) const {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
      return s + "]";
    }
    std::string operator()(const std::vector<double>& v) const {
      if (v.empty()) return "array<f64>";
      bool all_f32 = true;
      size_t len32 = 0, len64 = 0;
      for (double x : v) {
        all_f32 = all_f32 && IsF32Exact(x);
        if (all_f32) len32 += FormatFloat(x, true).size();
        len64 += FormatFloat(x, false).size();
      }
      bool f32 = all_f32 && len32 < len64;
      std::string s = f32 ? "array<f32: " : "array<f64: ";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + FormatFloat(v[i], f32);
      return s + ">";
    }
    std::string operator()(const Type& t) const { return t.ToString(); }
    std::string operator()(const SymbolRef& s) const { return "@" + BareOrQuoted(s.name); }
    std::string operator()(const DenseElements& d) const { return PrintDense(d); }
    std::string operator()(const std::shared_ptr<AttrList>& l) const {
      std::string s = "[";
      if (l)
        for (size_t i = 0; i < l->size(); ++i) s += (i ? ", " : "") + PrintAttribute((*l)[i]);
      return s + "]";
    }
  };
  return std::visit(Visitor{}, attr.value);
}

// ---------------------------------------------------------------------------
// Ops
// ---------------------------------------------------------------------------
namespace {

// SSA names of one naming scope (a top-level op, or the module level).
struct Namer {
  std::unordered_map<const Value*, std::string> names;  // without '%'
  std::set<std::string> used;
  int next_num = 0;
  int next_arg = 0;

  std::string Unique(std::string base) {
    if (!used.count(base)) return base;
    for (int i = 1;; ++i) {
      std::string s = base + "_" + std::to_string(i);
      if (!used.count(s)) return s;
    }
  }
  std::string NextNum() {
    while (used.count(std::to_string(next_num))) ++next_num;
    return std::to_string(next_num++);
  }
  std::string NextArg() {
    while (used.count("arg" + std::to_string(next_arg))) ++next_arg;
    return "arg" + std::to_string(next_arg++);
  }
  void Set(const Value* v, std::string n) {
    used.insert(n);
    names[v] = std::move(n);
  }
  // Sanitized hint, never of the generated forms `N` / `argN`; "" if none.
  static std::string Hint(const Value* v) {
    const std::string& h = v->name_hint();
    if (h.empty()) return "";
    std::string s;
    for (char c : h) s += IsIdentChar(c) || c == '$' ? c : '_';
    bool digits = std::isdigit(static_cast<unsigned char>(s[0]));
    bool argn = s.size() > 3 && s.compare(0, 3, "arg") == 0 &&
                s.find_first_not_of("0123456789", 3) == std::string::npos;
    if (digits || argn) s = "_" + s;
    return s;
  }
  void NameArg(const Value* v, bool entry) {
    std::string h = Hint(v);
    Set(v, !h.empty() ? Unique(h) : entry ? NextArg() : NextNum());
  }
  void NameResults(const Operation* op) {
    if (op->num_results() == 1) {
      std::string h = Hint(op->result(0));
      Set(op->result(0), !h.empty() ? Unique(h) : NextNum());
    } else if (op->num_results() > 1) {
      std::string base = NextNum();
      for (unsigned i = 0; i < op->num_results(); ++i)
        Set(op->result(i), base + "#" + std::to_string(i));
    }
  }
  // Names the values defined inside op's regions, in print order.
  void NameRegions(const Operation* op) {
    for (unsigned r = 0; r < op->num_regions(); ++r) {
      Region* region = op->region(r);
      for (unsigned b = 0; b < region->num_blocks(); ++b) {
        Block* block = region->block(b);
        for (Value* a : block->arguments()) NameArg(a, b == 0);
        for (auto& o : block->ops()) {
          NameResults(o.get());
          NameRegions(o.get());
        }
      }
    }
  }
};

class Printer {
 public:
  explicit Printer(std::ostream& os) : os_(os) {}

  void PrintTopLevel(Operation* op) {
    module_namer_.NameResults(op);
    namer_ = Namer();
    namer_.NameRegions(op);
    PrintOperation(op, 0);
  }

  // Debug form of a single op: everything named in one scope.
  void PrintSingle(Operation* op) {
    namer_ = Namer();
    namer_.NameResults(op);
    namer_.NameRegions(op);
    PrintOperation(op, 0);
  }

 private:
  std::string Name(const Value* v) {
    if (!v) return "%<null>";
    auto it = namer_.names.find(v);
    if (it != namer_.names.end()) return "%" + it->second;
    it = module_namer_.names.find(v);
    if (it != module_namer_.names.end()) return "%" + it->second;
    // Defined outside what is printed (PrintOp) or not yet attached.
    std::string n = namer_.NextNum();
    namer_.Set(v, n);
    return "%" + n;
  }

  static std::string BlockName(const Block* b) {
    if (!b) return "^<null>";
    if (Region* r = b->parent())
      for (unsigned i = 0; i < r->num_blocks(); ++i)
        if (r->block(i) == b) return "^bb" + std::to_string(i);
    return "^<detached>";
  }

  void Indent(int n) {
    for (int i = 0; i < n; ++i) os_ << ' ';
  }

  void PrintOperation(Operation* op, int indent) {
    Indent(indent);
    if (op->num_results() == 1) {
      os_ << Name(op->result(0)) << " = ";
    } else if (op->num_results() > 1) {
      std::string n = Name(op->result(0));
      os_ << n.substr(0, n.find('#')) << ':' << op->num_results() << " = ";
    }
    os_ << Quote(op->name()) << '(';
    for (unsigned i = 0; i < op->num_operands(); ++i) os_ << (i ? ", " : "") << Name(op->operand(i));
    os_ << ')';
    if (op->num_successors() > 0) {
      os_ << '[';
      for (unsigned i = 0; i < op->num_successors(); ++i)
        os_ << (i ? ", " : "") << BlockName(op->successor(i));
      os_ << ']';
    }
    if (op->num_regions() > 0) {
      os_ << " (";
      for (unsigned r = 0; r < op->num_regions(); ++r) {
        if (r) os_ << ", ";
        PrintRegion(op->region(r), indent);
      }
      os_ << ')';
    }
    if (!op->attrs().empty()) {
      os_ << " {";
      bool first = true;
      for (auto& [name, attr] : op->attrs()) {
        os_ << (first ? "" : ", ") << BareOrQuoted(name) << " = " << PrintAttribute(attr);
        first = false;
      }
      os_ << '}';
    }
    os_ << " : (";
    for (unsigned i = 0; i < op->num_operands(); ++i)
      os_ << (i ? ", " : "") << (op->operand(i) ? op->operand(i)->type().ToString() : "<null>");
    os_ << ") -> ";
    if (op->num_results() == 1) {
      os_ << op->result(0)->type().ToString();
    } else {
      os_ << '(';
      for (unsigned i = 0; i < op->num_results(); ++i)
        os_ << (i ? ", " : "") << op->result(i)->type().ToString();
      os_ << ')';
    }
    if (!op->loc().empty()) os_ << " loc(" << Quote(op->loc()) << ')';
    os_ << '\n';
  }

  void PrintRegion(Region* region, int indent) {
    os_ << "{\n";
    for (unsigned b = 0; b < region->num_blocks(); ++b) {
      Block* block = region->block(b);
      bool label = b > 0 || block->num_arguments() > 0 || block->empty();
      if (label) {
        Indent(indent);
        os_ << "^bb" << b;
        if (block->num_arguments() > 0) {
          os_ << '(';
          for (unsigned i = 0; i < block->num_arguments(); ++i) {
            Value* a = block->argument(i);
            os_ << (i ? ", " : "") << Name(a) << ": " << a->type().ToString();
          }
          os_ << ')';
        }
        os_ << ":\n";
      }
      for (auto& op : block->ops()) PrintOperation(op.get(), indent + 2);
    }
    Indent(indent);
    os_ << '}';
  }

  std::ostream& os_;
  Namer module_namer_;
  Namer namer_;
};

}  // namespace

void PrintModule(Module& module, std::ostream& os) {
  Printer p(os);
  for (auto& op : module.body()->ops()) p.PrintTopLevel(op.get());
}

std::string PrintModule(Module& module) {
  std::ostringstream os;
  PrintModule(module, os);
  return os.str();
}

std::string PrintOp(Operation* op) {
  std::ostringstream os;
  Printer(os).PrintSingle(op);
  return os.str();
}

}  // namespace kiln::ir
