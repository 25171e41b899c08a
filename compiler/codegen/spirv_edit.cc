#include "compiler/codegen/spirv_edit.h"

#include <map>
#include <set>

namespace kiln::codegen {
namespace {

constexpr uint32_t kMagic = 0x07230203u;
constexpr uint32_t kHeaderWords = 5;
constexpr uint32_t kBoundWord = 3;
// Opcodes (SPIR-V 1.3 spec, section 3.32).
constexpr uint32_t kOpName = 5;
constexpr uint32_t kOpTypePointer = 32;
constexpr uint32_t kOpTypeFunction = 33;
constexpr uint32_t kOpFunction = 54;
constexpr uint32_t kOpFunctionParameter = 55;
constexpr uint32_t kOpFunctionEnd = 56;
constexpr uint32_t kOpFunctionCall = 57;
constexpr uint32_t kOpVariable = 59;
constexpr uint32_t kOpLoad = 61;
constexpr uint32_t kOpStore = 62;
constexpr uint32_t kOpDecorate = 71;
constexpr uint32_t kOpCopyObject = 83;
constexpr uint32_t kOpLabel = 248;
constexpr uint32_t kStorageClassFunction = 7;
constexpr uint32_t kFunctionControlInline = 0x1;
constexpr uint32_t kFunctionControlDontInline = 0x2;

using Instr = std::vector<uint32_t>;

uint32_t Op(const Instr& i) { return i[0] & 0xffffu; }

// Splits the instruction stream; false on a malformed binary.
bool Parse(const std::vector<uint32_t>& s, std::vector<Instr>* out) {
  if (s.size() < kHeaderWords || s[0] != kMagic) return false;
  for (size_t w = kHeaderWords; w < s.size();) {
    uint32_t count = s[w] >> 16;
    if (count == 0 || w + count > s.size()) return false;
    out->emplace_back(s.begin() + static_cast<std::ptrdiff_t>(w),
                      s.begin() + static_cast<std::ptrdiff_t>(w + count));
    w += count;
  }
  return true;
}

// The literal string starting at word `w` of `i` (nul-terminated, packed
// little-endian, SPIR-V 1.3 section 2.2.1).
std::string LiteralString(const Instr& i, size_t w) {
  std::string r;
  for (; w < i.size(); ++w)
    for (int b = 0; b < 4; ++b) {
      char c = static_cast<char>((i[w] >> (8 * b)) & 0xffu);
      if (c == '\0') return r;
      r += c;
    }
  return r;
}

// True if any word after the opcode word equals `id` (conservative: a literal
// operand that happens to equal it counts too).
bool Mentions(const Instr& i, uint32_t id) {
  for (size_t w = 1; w < i.size(); ++w)
    if (i[w] == id) return true;
  return false;
}

}  // namespace

int MarkFunctionsDontInline(std::vector<uint32_t>* spirv, const std::string& name_prefix) {
  std::vector<Instr> ins;
  if (!Parse(*spirv, &ins)) return 0;
  std::set<uint32_t> ids;
  for (const Instr& i : ins)
    if (Op(i) == kOpName && i.size() >= 3 && LiteralString(i, 2).rfind(name_prefix, 0) == 0) ids.insert(i[1]);
  if (ids.empty()) return 0;
  // OpFunction <result type> <result id> <control> <function type>, patched in place.
  int marked = 0;
  std::vector<uint32_t>& s = *spirv;
  for (size_t w = kHeaderWords; w < s.size(); w += s[w] >> 16) {
    uint32_t count = s[w] >> 16, op = s[w] & 0xffffu;
    if (op == kOpFunction && count == 5 && ids.count(s[w + 2])) {
      s[w + 3] = (s[w + 3] & ~kFunctionControlInline) | kFunctionControlDontInline;
      ++marked;
    }
  }
  return marked;
}

int PassArgumentsByValue(std::vector<uint32_t>* spirv) {
  std::vector<Instr> ins;
  if (!Parse(*spirv, &ins)) return 0;
  uint32_t bound = (*spirv)[kBoundWord];
  // Function-storage pointer types: id -> pointee type.
  std::map<uint32_t, uint32_t> fn_ptr;
  for (const Instr& i : ins)
    if (Op(i) == kOpTypePointer && i.size() == 4 && i[2] == kStorageClassFunction) fn_ptr[i[1]] = i[3];

  struct Callee {
    size_t function;                 // index of its OpFunction
    std::vector<size_t> params;      // indices of its OpFunctionParameters
    std::vector<uint32_t> value_types;
  };
  std::map<uint32_t, Callee> callees;  // by function id
  for (size_t k = 0; k < ins.size(); ++k) {
    const Instr& f = ins[k];
    if (Op(f) != kOpFunction || f.size() != 5 || !(f[3] & kFunctionControlDontInline)) continue;
    Callee c{k, {}, {}};
    size_t j = k + 1;
    bool ok = true;
    for (; j < ins.size() && Op(ins[j]) == kOpFunctionParameter; ++j) {
      auto it = ins[j].size() == 3 ? fn_ptr.find(ins[j][1]) : fn_ptr.end();
      if (it == fn_ptr.end()) ok = false;
      else c.value_types.push_back(it->second);
      c.params.push_back(j);
    }
    if (!ok || c.params.empty()) continue;
    // The body may only load from the parameters.
    for (; j < ins.size() && Op(ins[j]) != kOpFunctionEnd && ok; ++j)
      for (size_t p : c.params) {
        uint32_t id = ins[p][2];
        if (Mentions(ins[j], id) && !(Op(ins[j]) == kOpLoad && ins[j].size() == 4 && ins[j][3] == id)) ok = false;
      }
    if (ok) callees[f[2]] = c;
  }
  if (callees.empty()) return 0;

  // Calls: each pointer argument becomes the value last stored into it in the
  // calling block.
  int rewritten = 0;
  std::set<uint32_t> arg_vars;
  for (size_t k = 0; k < ins.size(); ++k) {
    Instr& call = ins[k];
    if (Op(call) != kOpFunctionCall || call.size() < 4) continue;
    auto it = callees.find(call[3]);
    if (it == callees.end()) continue;
    if (call.size() != 4 + it->second.params.size()) return 0;
    for (size_t a = 4; a < call.size(); ++a) {
      uint32_t var = call[a], value = 0;
      for (size_t j = k; j-- > 0 && Op(ins[j]) != kOpLabel;)
        if (Op(ins[j]) == kOpStore && ins[j].size() == 3 && ins[j][1] == var) {
          value = ins[j][2];
          break;
        }
      if (value == 0) return 0;
      arg_vars.insert(var);
      call[a] = value;
    }
    ++rewritten;
  }

  // Callees: value parameters, loads become copies, a new function type.
  std::vector<std::pair<size_t, Instr>> new_types;  // (insert after index, instr)
  for (auto& [id, c] : callees) {
    Instr& f = ins[c.function];
    const Instr* old_type = nullptr;
    size_t old_index = 0;
    for (size_t k = 0; k < ins.size(); ++k)
      if (Op(ins[k]) == kOpTypeFunction && ins[k].size() >= 3 && ins[k][1] == f[4]) {
        old_type = &ins[k];
        old_index = k;
      }
    if (!old_type) return 0;
    Instr t = {0, bound, (*old_type)[2]};
    for (uint32_t v : c.value_types) t.push_back(v);
    t[0] = (static_cast<uint32_t>(t.size()) << 16) | kOpTypeFunction;
    f[4] = bound++;
    new_types.emplace_back(old_index, t);
    for (size_t n = 0; n < c.params.size(); ++n) {
      Instr& p = ins[c.params[n]];
      uint32_t pid = p[2];
      p[1] = c.value_types[n];
      for (size_t j = c.params.back() + 1; j < ins.size() && Op(ins[j]) != kOpFunctionEnd; ++j)
        if (Op(ins[j]) == kOpLoad && ins[j][3] == pid) ins[j][0] = (4u << 16) | kOpCopyObject;
    }
  }

  // Argument variables now only stored to: delete them, their stores and names.
  std::set<uint32_t> dead = arg_vars;
  for (const Instr& i : ins)
    for (size_t w = 1; w < i.size(); ++w) {
      if (!dead.count(i[w])) continue;
      bool allowed = (Op(i) == kOpStore && w == 1) || (Op(i) == kOpVariable && w == 2) ||
                     ((Op(i) == kOpName || Op(i) == kOpDecorate) && w == 1);
      if (!allowed) dead.erase(i[w]);
    }
  std::vector<uint32_t> out(spirv->begin(), spirv->begin() + kHeaderWords);
  out[kBoundWord] = bound;
  for (size_t k = 0; k < ins.size(); ++k) {
    const Instr& i = ins[k];
    bool drop = (Op(i) == kOpStore && dead.count(i[1])) || (Op(i) == kOpVariable && dead.count(i[2])) ||
                ((Op(i) == kOpName || Op(i) == kOpDecorate) && dead.count(i[1]));
    if (!drop) out.insert(out.end(), i.begin(), i.end());
    for (const auto& [after, t] : new_types)
      if (after == k) out.insert(out.end(), t.begin(), t.end());
  }
  *spirv = std::move(out);
  return rewritten;
}

}  // namespace kiln::codegen
