// Recursive-descent parser for the generic textual IR (grammar in
// printer.h / parser.h). Works directly on characters; the first error wins
// and is reported as "file:line:col: message".
#include "compiler/ir/parser.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace kiln::ir {
namespace {

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsSuffixChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.' || c == '-';
}
// `N` and `argN` are the printer's generated names; others are name hints.
bool IsGeneratedName(const std::string& n) {
  if (n.find_first_not_of("0123456789") == std::string::npos) return true;
  return n.size() > 3 && n.compare(0, 3, "arg") == 0 &&
         n.find_first_not_of("0123456789", 3) == std::string::npos;
}

class Parser {
 public:
  Parser(std::string_view text, const std::string& filename, const ParseOptions& options)
      : text_(text), filename_(filename), options_(options) {}

  StatusOr<std::unique_ptr<Module>> Run() {
    module_ = std::make_unique<Module>();
    scopes_.emplace_back();  // module scope
    SkipWs();
    while (ok() && !AtEnd()) {
      ParseOp(module_->body());
      SkipWs();
    }
    if (ok()) PopScope();
    if (!ok()) return std::move(error_);
    Unwrap();
    return std::move(module_);
  }

 private:
  // --- errors and lexing -------------------------------------------------
  bool ok() const { return error_.ok(); }
  bool Fail(const std::string& msg) { return FailAt(pos_, msg); }
  bool FailAt(size_t pos, const std::string& msg) {
    if (!ok()) return false;
    int line = 1, col = 1;
    for (size_t i = 0; i < pos && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    error_ = InvalidArgumentError("%s:%d:%d: %s", filename_.c_str(), line, col, msg.c_str());
    return false;
  }
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  void SkipWs() {
    while (!AtEnd()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '/' && Peek(1) == '/') {
        while (!AtEnd() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  // Skips whitespace, then consumes `s` if it is next.
  bool TryConsume(std::string_view s) {
    SkipWs();
    if (text_.substr(pos_, s.size()) != s) return false;
    pos_ += s.size();
    return true;
  }
  // Like TryConsume, but `s` must not be followed by an identifier character.
  bool TryKeyword(std::string_view s) {
    SkipWs();
    if (text_.substr(pos_, s.size()) != s) return false;
    if (pos_ + s.size() < text_.size() && IsSuffixChar(text_[pos_ + s.size()])) return false;
    pos_ += s.size();
    return true;
  }
  bool Expect(std::string_view s) {
    if (TryConsume(s)) return true;
    return Fail("expected '" + std::string(s) + "'");
  }
  std::string SuffixId() {
    size_t start = pos_;
    while (!AtEnd() && IsSuffixChar(text_[pos_])) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }
  bool ParseString(std::string* out) {
    SkipWs();
    if (Peek() != '"') return Fail("expected string literal");
    const size_t start = pos_;
    ++pos_;
    out->clear();
    while (true) {
      if (AtEnd() || Peek() == '\n') return FailAt(start, "unterminated string literal");
      char c = text_[pos_++];
      if (c == '"') return true;
      if (c != '\\') {
        *out += c;
        continue;
      }
      char e = Peek();
      if (e == '"' || e == '\\') {
        *out += e;
        ++pos_;
      } else if (e == 'n') {
        *out += '\n';
        ++pos_;
      } else if (e == 't') {
        *out += '\t';
        ++pos_;
      } else if (std::isxdigit(static_cast<unsigned char>(e)) &&
                 std::isxdigit(static_cast<unsigned char>(Peek(1)))) {
        *out += static_cast<char>(std::stoi(std::string(text_.substr(pos_, 2)), nullptr, 16));
        pos_ += 2;
      } else {
        return Fail("unknown escape in string literal");
      }
    }
  }
  // A numeric literal: [-+]digits[.digits][e[-+]digits], 0xHEX, nan, inf.
  // `*is_float` tells whether it has a '.', an exponent, or is nan/inf.
  bool ParseNumberToken(std::string* tok, bool* is_float) {
    SkipWs();
    size_t start = pos_;
    if (Peek() == '-' || Peek() == '+') ++pos_;
    if (TryKeyword("nan") || TryKeyword("inf")) {
      *is_float = true;
      *tok = std::string(text_.substr(start, pos_ - start));
      return true;
    }
    *is_float = false;
    if (Peek() == '0' && (Peek(1) == 'x' || Peek(1) == 'X')) {
      pos_ += 2;
      while (std::isxdigit(static_cast<unsigned char>(Peek()))) ++pos_;
    } else {
      if (!std::isdigit(static_cast<unsigned char>(Peek()))) {
        pos_ = start;
        return Fail("expected number");
      }
      while (std::isdigit(static_cast<unsigned char>(Peek()))) ++pos_;
      if (Peek() == '.') {
        *is_float = true;
        ++pos_;
        while (std::isdigit(static_cast<unsigned char>(Peek()))) ++pos_;
      }
      if (Peek() == 'e' || Peek() == 'E') {
        *is_float = true;
        ++pos_;
        if (Peek() == '-' || Peek() == '+') ++pos_;
        if (!std::isdigit(static_cast<unsigned char>(Peek()))) return Fail("bad exponent");
        while (std::isdigit(static_cast<unsigned char>(Peek()))) ++pos_;
      }
    }
    *tok = std::string(text_.substr(start, pos_ - start));
    return true;
  }
  bool ToInt(const std::string& tok, size_t at, int64_t* out) {
    errno = 0;
    char* end = nullptr;
    bool hex = tok.find('x') != std::string::npos || tok.find('X') != std::string::npos;
    if (hex) {
      bool neg = tok[0] == '-';
      uint64_t u = std::strtoull(tok.c_str() + (neg || tok[0] == '+' ? 1 : 0), &end, 16);
      *out = neg ? -static_cast<int64_t>(u) : static_cast<int64_t>(u);
    } else {
      *out = std::strtoll(tok.c_str(), &end, 10);
    }
    if (errno == ERANGE || *end != '\0') return FailAt(at, "integer literal out of range: " + tok);
    return true;
  }
  static double ToDouble(const std::string& tok, bool f32) {
    if (f32) return static_cast<double>(std::strtof(tok.c_str(), nullptr));
    return std::strtod(tok.c_str(), nullptr);
  }

  // --- types ----------------------------------------------------------------
  bool ParseType(Type* t) {
    SkipWs();
    size_t at = pos_;
    if (TryConsume("tensor<")) {
      std::vector<int64_t> shape;
      while (true) {
        if (Peek() == '?') {
          ++pos_;
          shape.push_back(-1);
        } else if (std::isdigit(static_cast<unsigned char>(Peek()))) {
          int64_t d = 0;
          while (std::isdigit(static_cast<unsigned char>(Peek()))) d = d * 10 + (text_[pos_++] - '0');
          shape.push_back(d);
        } else {
          break;
        }
        if (Peek() != 'x') return Fail("expected 'x' in tensor shape");
        ++pos_;
      }
      size_t dt_at = pos_;
      std::string dt;
      while (std::isalnum(static_cast<unsigned char>(Peek()))) dt += text_[pos_++];
      DType dtype = ParseDType(dt);
      if (dtype == DType::kInvalid) return FailAt(dt_at, "unknown element type '" + dt + "'");
      if (Peek() != '>') return Fail("expected '>' to end tensor type");
      ++pos_;
      *t = Type::Tensor(dtype, std::move(shape));
      return true;
    }
    if (TryKeyword("index")) {
      *t = Type::Index();
      return true;
    }
    if (TryKeyword("i1")) {
      *t = Type::I1();
      return true;
    }
    if (TryConsume("!stream.timepoint")) {
      *t = Type::Timepoint();
      return true;
    }
    if (TryConsume("!stream.resource<")) {
      SkipWs();
      size_t lt_at = pos_;
      std::string l = Peek() == '*' ? (++pos_, std::string("*")) : SuffixId();
      Lifetime lt = Lifetime::kUnknown;
      bool found = false;
      for (Lifetime c : {Lifetime::kUnknown, Lifetime::kExternal, Lifetime::kTransient,
                         Lifetime::kConstant, Lifetime::kVariable, Lifetime::kStaging}) {
        if (l == LifetimeName(c)) {
          lt = c;
          found = true;
        }
      }
      if (!found) return FailAt(lt_at, "unknown resource lifetime '" + l + "'");
      if (!Expect(">")) return false;
      *t = Type::Resource(lt);
      return true;
    }
    return FailAt(at, "expected type");
  }
  bool ParseTypeList(std::vector<Type>* out) {  // '(' [type (',' type)*] ')'
    if (!Expect("(")) return false;
    if (TryConsume(")")) return true;
    do {
      Type t;
      if (!ParseType(&t)) return false;
      out->push_back(std::move(t));
    } while (TryConsume(","));
    return Expect(")");
  }

  // --- attributes -----------------------------------------------------------
  bool ParseAttrName(std::string* name) {
    SkipWs();
    if (Peek() == '"') return ParseString(name);
    if (!IsIdentStart(Peek())) return Fail("expected attribute name");
    name->clear();
    while (!AtEnd() && (IsSuffixChar(Peek()) && Peek() != '-')) *name += text_[pos_++];
    return true;
  }

  bool ParseAttrDict(std::map<std::string, Attribute>* attrs) {  // after '{'
    if (TryConsume("}")) return true;
    do {
      SkipWs();
      size_t at = pos_;
      std::string name;
      if (!ParseAttrName(&name)) return false;
      Attribute a = true;  // unit attribute
      if (TryConsume("=") && !ParseAttr(&a)) return false;
      if (attrs->count(name)) return FailAt(at, "duplicate attribute '" + name + "'");
      (*attrs)[name] = std::move(a);
    } while (TryConsume(","));
    return Expect("}");
  }

  bool ParseAttr(Attribute* out) {
    SkipWs();
    char c = Peek();
    if (c == '"') {
      std::string s;
      if (!ParseString(&s)) return false;
      *out = std::move(s);
      return true;
    }
    if (c == '@') {
      ++pos_;
      std::string s;
      if (Peek() == '"') {
        if (!ParseString(&s)) return false;
      } else {
        s = SuffixId();
        if (s.empty()) return Fail("expected symbol name after '@'");
      }
      *out = SymbolRef{std::move(s)};
      return true;
    }
    if (c == '[') return ParseListAttr(out);
    if (TryKeyword("true")) {
      *out = true;
      return true;
    }
    if (TryKeyword("false")) {
      *out = false;
      return true;
    }
    if (TryConsume("dense<")) return ParseDense(out);
    if (TryConsume("array<")) return ParseArrayAttr(out);
    if (c == '!' || text_.substr(pos_, 7) == "tensor<" || text_.substr(pos_, 5) == "index" ||
        (text_.substr(pos_, 2) == "i1" && !IsSuffixChar(Peek(2)))) {
      Type t;
      if (!ParseType(&t)) return false;
      *out = std::move(t);
      return true;
    }
    // Numbers: `3 : i64`, `0.5 : f64`, `0.2 : f32`, bare ints and floats.
    size_t at = pos_;
    std::string tok;
    bool is_float;
    if (!ParseNumberToken(&tok, &is_float)) return FailAt(at, "expected attribute value");
    std::string suffix;
    if (TryConsume(":")) {
      SkipWs();
      suffix = SuffixId();
    }
    bool want_float = suffix == "f32" || suffix == "f64" || (suffix.empty() && is_float);
    bool hex = tok.find_first_of("xX") != std::string::npos && !is_float;
    if (!suffix.empty() && !want_float && suffix != "i64" && suffix != "i32" &&
        suffix != "index" && suffix != "i16" && suffix != "i8")
      return FailAt(at, "unknown number type '" + suffix + "'");
    if (want_float) {
      if (hex) {
        int64_t bits;
        if (!ToInt(tok, at, &bits)) return false;
        if (suffix == "f32") {
          uint32_t b32 = static_cast<uint32_t>(bits);
          float f;
          std::memcpy(&f, &b32, 4);
          *out = static_cast<double>(f);
        } else {
          double d;
          std::memcpy(&d, &bits, 8);
          *out = d;
        }
      } else {
        *out = ToDouble(tok, suffix == "f32");
      }
      return true;
    }
    if (is_float) return FailAt(at, "expected integer literal for type '" + suffix + "'");
    int64_t v;
    if (!ToInt(tok, at, &v)) return false;
    *out = v;
    return true;
  }

  // `[1, 2]` (int array: first element a bare integer) or `[a, b]` (list).
  bool ParseListAttr(Attribute* out) {
    Expect("[");
    if (TryConsume("]")) {
      *out = std::vector<int64_t>{};
      return true;
    }
    // Look ahead: a bare integer not followed by ':' starts an int array.
    size_t save = pos_;
    std::string tok;
    bool is_float = false;
    bool int_array = false;
    SkipWs();
    char c = Peek();
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+') {
      if (ParseNumberToken(&tok, &is_float) && !is_float) {
        SkipWs();
        int_array = Peek() != ':';
      }
      if (!ok()) return false;
    }
    pos_ = save;
    if (int_array) {
      std::vector<int64_t> v;
      do {
        SkipWs();
        size_t at = pos_;
        if (!ParseNumberToken(&tok, &is_float)) return false;
        if (is_float) return FailAt(at, "expected integer in integer array");
        int64_t x;
        if (!ToInt(tok, at, &x)) return false;
        v.push_back(x);
      } while (TryConsume(","));
      if (!Expect("]")) return false;
      *out = std::move(v);
      return true;
    }
    AttrList list;
    do {
      Attribute a;
      if (!ParseAttr(&a)) return false;
      list.push_back(std::move(a));
    } while (TryConsume(","));
    if (!Expect("]")) return false;
    *out = MakeListAttr(std::move(list));
    return true;
  }

  // After `array<`: `f64: 0.5, 1.0>`, `f32: ...>`, `f64>`, `i64: 1, 2>`.
  bool ParseArrayAttr(Attribute* out) {
    SkipWs();
    size_t at = pos_;
    std::string et = SuffixId();
    if (et != "f32" && et != "f64" && et != "i64") return FailAt(at, "expected f32, f64 or i64 array");
    std::vector<double> fv;
    std::vector<int64_t> iv;
    if (TryConsume(":")) {
      do {
        SkipWs();
        size_t eat = pos_;
        std::string tok;
        bool is_float;
        if (!ParseNumberToken(&tok, &is_float)) return false;
        if (et == "i64") {
          int64_t x;
          if (is_float) return FailAt(eat, "expected integer");
          if (!ToInt(tok, eat, &x)) return false;
          iv.push_back(x);
        } else {
          fv.push_back(ToDouble(tok, et == "f32"));
        }
      } while (TryConsume(","));
    }
    if (!Expect(">")) return false;
    if (et == "i64") {
      *out = std::move(iv);
    } else {
      *out = std::move(fv);
    }
    return true;
  }

  bool CollectDenseTokens(std::vector<std::pair<std::string, size_t>>* toks) {
    SkipWs();
    if (TryConsume("[")) {
      if (TryConsume("]")) return true;
      do {
        if (!CollectDenseTokens(toks)) return false;
      } while (TryConsume(","));
      return Expect("]");
    }
    size_t at = pos_;
    if (TryKeyword("true")) {
      toks->push_back({"true", at});
      return true;
    }
    if (TryKeyword("false")) {
      toks->push_back({"false", at});
      return true;
    }
    std::string tok;
    bool is_float;
    if (!ParseNumberToken(&tok, &is_float)) return false;
    toks->push_back({tok, at});
    return true;
  }

  // After `dense<`.
  bool ParseDense(Attribute* out) {
    SkipWs();
    size_t at = pos_;
    bool is_hex = false;
    std::string hex;
    std::vector<std::pair<std::string, size_t>> toks;
    bool bracketed = Peek() == '[';
    if (Peek() == '"') {
      if (!ParseString(&hex)) return false;
      if (hex.size() < 2 || hex[0] != '0' || (hex[1] != 'x' && hex[1] != 'X') || hex.size() % 2)
        return FailAt(at, "expected \"0x<hex bytes>\" in dense attribute");
      is_hex = true;
    } else if (!CollectDenseTokens(&toks)) {
      return false;
    }
    if (!Expect(">") || !Expect(":")) return false;
    SkipWs();
    size_t type_at = pos_;
    Type t;
    if (!ParseType(&t)) return false;
    if (!t.is_tensor() || t.num_elements() < 0)
      return FailAt(type_at, "dense attribute needs a static tensor type");
    const int64_t n = t.num_elements();
    const size_t esize = DTypeSize(t.dtype);
    std::vector<uint8_t> bytes;
    if (is_hex) {
      for (size_t i = 2; i < hex.size(); i += 2) {
        if (!std::isxdigit(static_cast<unsigned char>(hex[i])) ||
            !std::isxdigit(static_cast<unsigned char>(hex[i + 1])))
          return FailAt(at, "bad hex digit in dense attribute");
        bytes.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
      }
      if (static_cast<int64_t>(bytes.size()) != t.byte_size())
        return FailAt(at, "dense hex data has " + std::to_string(bytes.size()) + " bytes, type " +
                              t.ToString() + " needs " + std::to_string(t.byte_size()));
      *out = MakeDense(t, std::move(bytes));
      return true;
    }
    bool splat = !bracketed && toks.size() == 1;
    if (!splat && static_cast<int64_t>(toks.size()) != n)
      return FailAt(at, "dense literal has " + std::to_string(toks.size()) +
                            " elements, type " + t.ToString() + " has " + std::to_string(n));
    std::vector<uint8_t> elems;
    for (auto& [tok, tat] : toks) {
      uint8_t buf[8] = {};
      bool is_bool_tok = tok == "true" || tok == "false";
      bool is_float = tok.find_first_of(".eEni") != std::string::npos &&
                      tok.find_first_of("xX") == std::string::npos;
      switch (t.dtype) {
        case DType::kF32: case DType::kF16: case DType::kF64: case DType::kBF16: {
          if (is_bool_tok) return FailAt(tat, "expected number");
          if (t.dtype == DType::kF64) {
            double d = std::strtod(tok.c_str(), nullptr);
            std::memcpy(buf, &d, 8);
          } else {
            float f = std::strtof(tok.c_str(), nullptr);
            if (t.dtype == DType::kF32) {
              std::memcpy(buf, &f, 4);
            } else if (t.dtype == DType::kBF16) {
              uint16_t b = FloatToBF16(f);
              std::memcpy(buf, &b, 2);
            } else {
              uint16_t h = FloatToHalf(f);
              std::memcpy(buf, &h, 2);
            }
          }
          break;
        }
        case DType::kBool:
          if (is_bool_tok) {
            buf[0] = tok == "true";
          } else {
            int64_t v;
            if (is_float || !ToInt(tok, tat, &v) || v < 0 || v > 1)
              return FailAt(tat, "expected true or false");
            buf[0] = static_cast<uint8_t>(v);
          }
          break;
        default: {
          if (is_bool_tok || is_float) return FailAt(tat, "expected integer element");
          int64_t v;
          if (!ToInt(tok, tat, &v)) return false;
          std::memcpy(buf, &v, esize);  // little-endian truncation
          break;
        }
      }
      elems.insert(elems.end(), buf, buf + esize);
    }
    if (splat) {
      for (int64_t i = 0; i < n; ++i) bytes.insert(bytes.end(), elems.begin(), elems.end());
    } else {
      bytes = std::move(elems);
    }
    *out = MakeDense(t, std::move(bytes));
    return true;
  }

  // --- values and scopes ----------------------------------------------------
  struct Forward {
    Value* placeholder;
    size_t pos;
  };
  struct Scope {
    std::map<std::string, std::vector<Value*>> defs;
    std::map<std::pair<std::string, int>, Forward> forward;  // (name, #k or -1)
  };
  struct ValueRef {
    std::string name;
    int index;  // -1: no #k
    size_t pos;
  };

  bool ParseValueRef(ValueRef* ref) {
    SkipWs();
    ref->pos = pos_;
    if (Peek() != '%') return Fail("expected SSA value");
    ++pos_;
    ref->name = SuffixId();
    if (ref->name.empty()) return Fail("expected SSA value name after '%'");
    ref->index = -1;
    if (Peek() == '#') {
      ++pos_;
      if (!std::isdigit(static_cast<unsigned char>(Peek()))) return Fail("expected result number after '#'");
      int k = 0;
      while (std::isdigit(static_cast<unsigned char>(Peek()))) k = k * 10 + (text_[pos_++] - '0');
      ref->index = k;
    }
    return true;
  }

  static std::string RefText(const std::string& name, int index) {
    return "%" + name + (index >= 0 ? "#" + std::to_string(index) : "");
  }

  bool Resolve(const ValueRef& ref, const Type& type, Value** out) {
    const std::string text = RefText(ref.name, ref.index);
    const std::vector<Value*>* vals = nullptr;
    for (Scope* s : {&scopes_.back(), &scopes_.front()}) {
      auto it = s->defs.find(ref.name);
      if (it != s->defs.end()) {
        vals = &it->second;
        break;
      }
    }
    if (vals) {
      Value* v;
      if (ref.index >= 0) {
        if (ref.index >= static_cast<int>(vals->size()))
          return FailAt(ref.pos, "result number out of range in '" + text + "'");
        v = (*vals)[ref.index];
      } else {
        if (vals->size() != 1)
          return FailAt(ref.pos, "'" + text + "' names " + std::to_string(vals->size()) +
                                     " results; use " + RefText(ref.name, 0));
        v = (*vals)[0];
      }
      if (v->type() != type)
        return FailAt(ref.pos, "use of value '" + text + "' expects different type than prior uses: '" +
                                   type.ToString() + "' vs '" + v->type().ToString() + "'");
      *out = v;
      return true;
    }
    auto& fwd = scopes_.back().forward;
    auto key = std::make_pair(ref.name, ref.index);
    auto it = fwd.find(key);
    if (it != fwd.end()) {
      if (it->second.placeholder->type() != type)
        return FailAt(ref.pos, "use of value '" + text + "' expects different type than prior uses: '" +
                                   type.ToString() + "' vs '" +
                                   it->second.placeholder->type().ToString() + "'");
      *out = it->second.placeholder;
      return true;
    }
    placeholders_.push_back(std::make_unique<Value>());
    Value* p = placeholders_.back().get();
    p->set_type(type);
    fwd[key] = Forward{p, ref.pos};
    *out = p;
    return true;
  }

  bool Define(const std::string& name, std::vector<Value*> vals, size_t pos) {
    Scope& s = scopes_.back();
    if (s.defs.count(name)) return FailAt(pos, "redefinition of value '%" + name + "'");
    if (options_.keep_names && !IsGeneratedName(name) && vals.size() == 1)
      vals[0]->set_name_hint(name);
    for (auto it = s.forward.begin(); it != s.forward.end();) {
      if (it->first.first != name) {
        ++it;
        continue;
      }
      int k = it->first.second;
      const std::string text = RefText(name, k);
      if (k < 0 && vals.size() != 1)
        return FailAt(it->second.pos, "'" + text + "' names " + std::to_string(vals.size()) +
                                          " results; use " + RefText(name, 0));
      if (k >= static_cast<int>(vals.size()))
        return FailAt(it->second.pos, "result number out of range in '" + text + "'");
      Value* v = vals[k < 0 ? 0 : k];
      if (v->type() != it->second.placeholder->type())
        return FailAt(it->second.pos, "use of value '" + text + "' expects different type than prior uses: '" +
                                          it->second.placeholder->type().ToString() + "' vs '" +
                                          v->type().ToString() + "'");
      it->second.placeholder->ReplaceAllUsesWith(v);
      it = s.forward.erase(it);
    }
    s.defs[name] = std::move(vals);
    return true;
  }

  bool PopScope() {
    Scope& s = scopes_.back();
    if (!s.forward.empty()) {
      // Report the first use in text order.
      const std::pair<const std::pair<std::string, int>, Forward>* first = nullptr;
      for (auto& e : s.forward)
        if (!first || e.second.pos < first->second.pos) first = &e;
      return FailAt(first->second.pos, "use of undefined value '" +
                                           RefText(first->first.first, first->first.second) + "'");
    }
    scopes_.pop_back();
    return true;
  }

  // --- regions, blocks and ops ----------------------------------------------
  struct RegionState {
    Region* region;
    std::map<std::string, Block*> defined;
    std::map<std::string, std::pair<std::unique_ptr<Block>, size_t>> pending;  // label -> (block, first use)
  };

  bool ResolveBlock(const std::string& label, size_t pos, Block** out) {
    if (regions_.empty()) return FailAt(pos, "successors are not allowed at the top level");
    RegionState& rs = regions_.back();
    auto it = rs.defined.find(label);
    if (it != rs.defined.end()) {
      *out = it->second;
      return true;
    }
    auto& p = rs.pending[label];
    if (!p.first) p = {std::make_unique<Block>(rs.region), pos};
    *out = p.first.get();
    return true;
  }

  bool ParseRegion(Region* region) {
    if (!Expect("{")) return false;
    regions_.push_back(RegionState{region, {}, {}});
    Block* current = nullptr;
    SkipWs();
    if (Peek() != '^' && Peek() != '}') current = region->AddBlock();
    while (ok()) {
      SkipWs();
      if (AtEnd()) return Fail("expected '}' to end region");
      if (Peek() == '}') {
        ++pos_;
        break;
      }
      if (Peek() == '^') {
        size_t at = pos_;
        ++pos_;
        std::string label = SuffixId();
        if (label.empty()) return Fail("expected block name after '^'");
        RegionState& rs = regions_.back();
        if (rs.defined.count(label)) return FailAt(at, "redefinition of block '^" + label + "'");
        auto pit = rs.pending.find(label);
        if (pit != rs.pending.end()) {
          current = pit->second.first.get();
          region->blocks().push_back(std::move(pit->second.first));
          rs.pending.erase(pit);
        } else {
          current = region->AddBlock();
        }
        rs.defined[label] = current;
        if (TryConsume("(") && !TryConsume(")")) {
          do {
            ValueRef ref;
            if (!ParseValueRef(&ref)) return false;
            if (ref.index >= 0) return FailAt(ref.pos, "block argument names can't use '#'");
            Type t;
            if (!Expect(":") || !ParseType(&t)) return false;
            if (!Define(ref.name, {current->AddArgument(t)}, ref.pos)) return false;
          } while (TryConsume(","));
          if (!Expect(")")) return false;
        }
        if (!Expect(":")) return false;
        continue;
      }
      if (!ParseOp(current)) return false;
    }
    if (!ok()) return false;
    RegionState& rs = regions_.back();
    if (!rs.pending.empty()) {
      auto first = rs.pending.begin();
      for (auto it = rs.pending.begin(); it != rs.pending.end(); ++it)
        if (it->second.second < first->second.second) first = it;
      return FailAt(first->second.second, "reference to an undefined block '^" + first->first + "'");
    }
    regions_.pop_back();
    return true;
  }

  bool ParseOp(Block* into) {
    SkipWs();
    const size_t op_pos = pos_;
    // Results: `%0 =`, `%3:2 =`, `%a, %b =`.
    struct ResultGroup {
      std::string name;
      int count;
      size_t pos;
    };
    std::vector<ResultGroup> groups;
    int num_declared = 0;
    if (Peek() == '%') {
      do {
        ValueRef ref;
        if (!ParseValueRef(&ref)) return false;
        if (ref.index >= 0) return FailAt(ref.pos, "result names can't use '#'");
        int count = 1;
        if (TryConsume(":")) {
          SkipWs();
          size_t at = pos_;
          std::string tok;
          bool is_float;
          int64_t c;
          if (!ParseNumberToken(&tok, &is_float)) return false;
          if (is_float || !ToInt(tok, at, &c) || c < 1) return FailAt(at, "expected result count");
          count = static_cast<int>(c);
        }
        groups.push_back({ref.name, count, ref.pos});
        num_declared += count;
      } while (TryConsume(","));
      if (!Expect("=")) return false;
    }
    SkipWs();
    if (Peek() != '"') return Fail("expected operation name in quotes");
    std::string name;
    if (!ParseString(&name)) return false;
    // Operands.
    std::vector<ValueRef> operand_refs;
    if (!Expect("(")) return false;
    if (!TryConsume(")")) {
      do {
        ValueRef ref;
        if (!ParseValueRef(&ref)) return false;
        operand_refs.push_back(std::move(ref));
      } while (TryConsume(","));
      if (!Expect(")")) return false;
    }
    // Successors.
    std::vector<Block*> successors;
    if (TryConsume("[")) {
      do {
        SkipWs();
        size_t at = pos_;
        if (!Expect("^")) return false;
        std::string label = SuffixId();
        if (label.empty()) return Fail("expected block name after '^'");
        Block* b;
        if (!ResolveBlock(label, at, &b)) return false;
        successors.push_back(b);
      } while (TryConsume(","));
      if (!Expect("]")) return false;
    }
    // Regions: a new value scope for ops at the top level (isolated).
    const bool isolated = op_stack_.empty() || op_stack_.back() == "builtin.module";
    std::vector<std::unique_ptr<Region>> regions;
    SkipWs();
    if (Peek() == '(') {
      ++pos_;
      if (isolated) scopes_.emplace_back();
      op_stack_.push_back(name);
      do {
        regions.push_back(std::make_unique<Region>(nullptr));
        if (!ParseRegion(regions.back().get())) return false;
      } while (TryConsume(","));
      op_stack_.pop_back();
      if (!Expect(")")) return false;
      if (isolated && !PopScope()) return false;
    }
    // Attributes.
    std::map<std::string, Attribute> attrs;
    if (TryConsume("{") && !ParseAttrDict(&attrs)) return false;
    // Type signature.
    if (!Expect(":")) return false;
    SkipWs();
    size_t sig_pos = pos_;
    std::vector<Type> operand_types, result_types;
    if (!ParseTypeList(&operand_types) || !Expect("->")) return false;
    SkipWs();
    if (Peek() == '(') {
      if (!ParseTypeList(&result_types)) return false;
    } else {
      Type t;
      if (!ParseType(&t)) return false;
      result_types.push_back(std::move(t));
    }
    std::string loc;
    if (TryKeyword("loc")) {
      if (!Expect("(") || !ParseString(&loc) || !Expect(")")) return false;
    }
    if (operand_types.size() != operand_refs.size())
      return FailAt(sig_pos, "expected " + std::to_string(operand_refs.size()) +
                                 " operand types but had " + std::to_string(operand_types.size()));
    if (static_cast<int>(result_types.size()) != num_declared)
      return FailAt(op_pos, "operation defines " + std::to_string(result_types.size()) +
                                " results but was provided " + std::to_string(num_declared) +
                                " to bind");
    std::vector<Value*> operands;
    for (size_t i = 0; i < operand_refs.size(); ++i) {
      Value* v;
      if (!Resolve(operand_refs[i], operand_types[i], &v)) return false;
      operands.push_back(v);
    }
    auto op = Operation::Create(name, operands, result_types, std::move(attrs),
                                static_cast<unsigned>(regions.size()));
    for (size_t r = 0; r < regions.size(); ++r) op->region(r)->TakeBody(*regions[r]);
    for (Block* b : successors) op->AddSuccessor(b);
    op->set_loc(std::move(loc));
    Operation* raw = into->Append(std::move(op));
    unsigned next = 0;
    for (auto& g : groups) {
      std::vector<Value*> vals;
      for (int i = 0; i < g.count; ++i) vals.push_back(raw->result(next++));
      if (!Define(g.name, std::move(vals), g.pos)) return false;
    }
    return true;
  }

  // `"builtin.module"() ({ ops }) : () -> ()` as the only top-level op:
  // its ops become the module's.
  void Unwrap() {
    Block* body = module_->body();
    if (body->ops().size() != 1) return;
    Operation* wrapper = body->ops().front().get();
    if (!wrapper->is("builtin.module") || wrapper->num_regions() != 1 ||
        wrapper->num_results() != 0 || wrapper->region(0)->num_blocks() > 1)
      return;
    if (wrapper->region(0)->num_blocks() == 1) {
      Block* inner = wrapper->region(0)->block(0);
      while (!inner->empty()) body->Append(inner->Remove(inner->ops().front().get()));
    }
    wrapper->Erase();
  }

  std::string_view text_;
  std::string filename_;
  ParseOptions options_;
  size_t pos_ = 0;
  Status error_;
  std::vector<Scope> scopes_;
  std::vector<RegionState> regions_;
  std::vector<std::string> op_stack_;
  // Declared before module_ so that they outlive the ops that use them.
  std::vector<std::unique_ptr<Value>> placeholders_;
  std::unique_ptr<Module> module_;
};

}  // namespace

StatusOr<std::unique_ptr<Module>> ParseModule(std::string_view text, const std::string& filename,
                                              const ParseOptions& options) {
  Parser p(text, filename, options);
  return p.Run();
}

StatusOr<std::unique_ptr<Module>> ParseModule(std::string_view text, const std::string& filename) {
  return ParseModule(text, filename, ParseOptions());
}

}  // namespace kiln::ir
