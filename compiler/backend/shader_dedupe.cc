#include "compiler/backend/shader_dedupe.h"

#include <set>

namespace kiln::backend {
namespace {

// Opcodes and enums: SPIR-V 1.3 specification, sections 3.32 and 3.20.
enum : uint32_t {
  kOpSourceContinued = 2, kOpSource = 3, kOpSourceExtension = 4, kOpName = 5, kOpMemberName = 6,
  kOpString = 7, kOpLine = 8, kOpExtension = 10, kOpExtInstImport = 11, kOpMemoryModel = 14,
  kOpEntryPoint = 15, kOpExecutionMode = 16, kOpCapability = 17, kOpTypeInt = 21,
  kOpTypeVector = 23, kOpTypeMatrix = 24, kOpTypeArray = 28, kOpTypeRuntimeArray = 29,
  kOpTypeStruct = 30, kOpTypePointer = 32, kOpConstant = 43, kOpConstantComposite = 44,
  kOpSpecConstant = 50, kOpSpecConstantComposite = 51, kOpSpecConstantOp = 52,
  kOpFunctionParameter = 55, kOpVariable = 59, kOpAccessChain = 65, kOpInBoundsAccessChain = 66,
  kOpPtrAccessChain = 67, kOpInBoundsPtrAccessChain = 70, kOpDecorate = 71, kOpMemberDecorate = 72,
  kOpDecorationGroup = 73, kOpGroupDecorate = 74, kOpGroupMemberDecorate = 75, kOpCopyObject = 83,
  kOpNoLine = 317, kOpModuleProcessed = 330, kOpExecutionModeId = 331, kOpDecorateId = 332,
  kOpDecorateString = 5632, kOpMemberDecorateString = 5633,
  kDecorationSpecId = 1,
};

// Instructions whose id operands include a Scope or memory semantics (which
// must be constant instructions): barriers, atomics, group and subgroup ops.
bool HasScopeOperands(uint32_t op) {
  return op == 224 || op == 225 || (op >= 227 && op <= 242) || op == 318 || op == 319 ||
         (op >= 259 && op <= 270) || (op >= 333 && op <= 366) || (op >= 4421 && op <= 4432) ||
         (op >= 5000 && op <= 5007);
}

// Instructions that may precede type declarations (the preamble and
// annotation sections of SPIR-V 1.3 section 2.4).
bool IsPreamble(uint32_t op) {
  switch (op) {
    case kOpSourceContinued: case kOpSource: case kOpSourceExtension: case kOpName:
    case kOpMemberName: case kOpString: case kOpLine: case kOpExtension: case kOpExtInstImport:
    case kOpMemoryModel: case kOpEntryPoint: case kOpExecutionMode: case kOpCapability:
    case kOpNoLine: case kOpModuleProcessed: case kOpExecutionModeId: case kOpDecorate:
    case kOpMemberDecorate: case kOpDecorationGroup: case kOpGroupDecorate:
    case kOpGroupMemberDecorate: case kOpDecorateId: case kOpDecorateString:
    case kOpMemberDecorateString:
      return true;
    default:
      return false;
  }
}

struct Analysis {
  bool ok = false;
  std::vector<size_t> starts;         // word index of each instruction
  std::vector<size_t> value_words;    // candidates: word index of the value
  std::vector<uint32_t> constant_ids;
  std::vector<uint32_t> values;
};

Analysis Analyze(const std::vector<uint32_t>& s) {
  Analysis a;
  if (s.size() < 5 || s[0] != 0x07230203u) return a;
  for (size_t w = 5; w < s.size();) {
    uint32_t count = s[w] >> 16;
    if (count == 0 || w + count > s.size()) return a;
    a.starts.push_back(w);
    w += count;
  }
  std::set<uint32_t> int32_types;
  std::map<uint32_t, size_t> candidates;      // constant id -> value word
  std::map<uint32_t, uint32_t> int_values;    // every 32-bit int constant's value
  std::map<uint32_t, uint32_t> type_of;       // pointer-valued ids -> pointer type
  std::map<uint32_t, uint32_t> pointee;       // pointer type -> pointee type
  std::map<uint32_t, std::vector<uint32_t>> struct_members;
  std::map<uint32_t, uint32_t> element;       // array / vector / matrix type -> element type
  std::set<uint32_t> keep;                    // constants that must stay constants
  for (size_t w : a.starts) {
    uint32_t op = s[w] & 0xffffu, n = s[w] >> 16;
    auto word = [&](uint32_t k) { return k < n ? s[w + k] : 0u; };
    switch (op) {
      case kOpTypeInt:
        if (word(2) == 32) int32_types.insert(word(1));
        break;
      case kOpConstant:
        if (n == 4 && int32_types.count(word(1))) {
          candidates[word(2)] = w + 3;
          int_values[word(2)] = word(3);
        }
        break;
      case kOpTypePointer: pointee[word(1)] = word(3); break;
      case kOpTypeStruct:
        struct_members[word(1)].assign(s.begin() + static_cast<std::ptrdiff_t>(w + 2),
                                       s.begin() + static_cast<std::ptrdiff_t>(w + n));
        break;
      case kOpTypeArray:
        element[word(1)] = word(2);
        keep.insert(word(3));
        break;
      case kOpTypeRuntimeArray: case kOpTypeVector: case kOpTypeMatrix:
        element[word(1)] = word(2);
        break;
      case kOpVariable: case kOpFunctionParameter: case kOpCopyObject:
        type_of[word(2)] = word(1);
        break;
      case kOpAccessChain: case kOpInBoundsAccessChain: case kOpPtrAccessChain:
      case kOpInBoundsPtrAccessChain: {
        type_of[word(2)] = word(1);
        uint32_t first = (op == kOpPtrAccessChain || op == kOpInBoundsPtrAccessChain) ? 5 : 4;
        auto t = type_of.find(word(3));
        uint32_t cur = 0;
        if (t != type_of.end() && pointee.count(t->second)) cur = pointee[t->second];
        for (uint32_t k = first; k < n; ++k) {
          uint32_t index = word(k);
          auto members = struct_members.find(cur);
          if (members != struct_members.end()) {
            keep.insert(index);
            auto v = int_values.find(index);
            cur = v != int_values.end() && v->second < members->second.size() ? members->second[v->second] : 0;
          } else if (element.count(cur)) {
            cur = element[cur];
          } else {
            // Unknown type: keep every remaining index.
            for (; k < n; ++k) keep.insert(word(k));
          }
        }
        break;
      }
      case kOpConstantComposite: case kOpSpecConstantComposite: case kOpSpecConstantOp:
      case kOpExecutionModeId: case kOpDecorateId:
        for (uint32_t k = 1; k < n; ++k) keep.insert(word(k));
        break;
      default:
        if (HasScopeOperands(op))
          for (uint32_t k = 1; k < n; ++k) keep.insert(word(k));
        break;
    }
  }
  for (const auto& [id, value_word] : candidates) {
    if (keep.count(id)) continue;
    a.constant_ids.push_back(id);
    a.value_words.push_back(value_word);
    a.values.push_back(s[value_word]);
  }
  a.ok = true;
  return a;
}

}  // namespace

ShaderDeduper::Placement ShaderDeduper::Add(const std::vector<uint32_t>& spirv,
                                            const std::vector<uint32_t>& extra_key,
                                            const std::vector<uint32_t>& variant) {
  Analysis a = Analyze(spirv);
  std::vector<uint32_t> key = spirv;
  for (size_t w : a.value_words) key[w] = 0;
  key.push_back(a.ok ? 1u : 0u);
  key.push_back(static_cast<uint32_t>(extra_key.size()));
  key.insert(key.end(), extra_key.begin(), extra_key.end());
  // The variant's candidates follow the main module's in a member's values.
  Analysis v = variant.empty() ? Analysis{} : Analyze(variant);
  key.push_back(static_cast<uint32_t>(variant.size()));
  if (!variant.empty()) {
    const size_t at = key.size();
    key.insert(key.end(), variant.begin(), variant.end());
    for (size_t w : v.value_words) key[at + w] = 0;
    key.push_back(v.ok ? 1u : 0u);
  }
  std::vector<uint32_t> values = a.values;
  values.insert(values.end(), v.values.begin(), v.values.end());
  auto it = by_key_.find(key);
  if (it != by_key_.end()) {
    Group& g = groups_[it->second];
    // The same values as an earlier member: the same pipeline.
    for (size_t m = 0; m < g.member_values.size(); ++m)
      if (g.member_values[m] == values) return {it->second, static_cast<uint32_t>(m)};
    g.member_values.push_back(std::move(values));
    return {it->second, static_cast<uint32_t>(g.member_values.size() - 1)};
  }
  Group g;
  g.spirv = spirv;
  g.value_words = std::move(a.value_words);
  g.constant_ids = std::move(a.constant_ids);
  g.variant = variant;
  g.variant_value_words = std::move(v.value_words);
  g.variant_constant_ids = std::move(v.constant_ids);
  g.member_values.push_back(std::move(values));
  groups_.push_back(std::move(g));
  uint32_t index = static_cast<uint32_t>(groups_.size() - 1);
  by_key_.emplace(std::move(key), index);
  return {index, 0};
}

namespace {

// `s` with the constants at `value_words` (ids `constant_ids`) listed in
// `varying` turned into OpSpecConstants with SpecIds first_id, first_id + 1,
// ... in that order.
std::vector<uint32_t> Specialize(const std::vector<uint32_t>& spirv, const std::vector<size_t>& value_words,
                                 const std::vector<uint32_t>& constant_ids, const std::vector<size_t>& varying,
                                 uint32_t first_id) {
  if (varying.empty()) return spirv;
  std::vector<uint32_t> s = spirv;
  std::vector<uint32_t> decorations;
  for (size_t j = 0; j < varying.size(); ++j) {
    size_t k = varying[j];
    s[value_words[k] - 3] = (4u << 16) | kOpSpecConstant;  // OpConstant -> OpSpecConstant
    decorations.insert(decorations.end(), {(4u << 16) | kOpDecorate, constant_ids[k], kDecorationSpecId,
                                           first_id + static_cast<uint32_t>(j)});
  }
  size_t at = 5;
  while (at < s.size() && IsPreamble(s[at] & 0xffffu)) at += s[at] >> 16;
  s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), decorations.begin(), decorations.end());
  return s;
}

}  // namespace

std::vector<uint32_t> ShaderDeduper::Finish(uint32_t shader, std::vector<std::vector<uint32_t>>* specializations,
                                            std::vector<uint32_t>* variant) const {
  const Group& g = groups_[shader];
  specializations->assign(g.member_values.size(), {});
  const size_t main_count = g.value_words.size();
  std::vector<size_t> varying, variant_varying;
  for (size_t k = 0; k < g.member_values[0].size(); ++k)
    for (const auto& m : g.member_values)
      if (m[k] != g.member_values[0][k]) {
        (k < main_count ? varying : variant_varying).push_back(k);
        break;
      }
  for (size_t m = 0; m < g.member_values.size(); ++m) {
    for (size_t k : varying) (*specializations)[m].push_back(g.member_values[m][k]);
    for (size_t k : variant_varying) (*specializations)[m].push_back(g.member_values[m][k]);
  }
  for (size_t& k : variant_varying) k -= main_count;
  if (variant)
    *variant = Specialize(g.variant, g.variant_value_words, g.variant_constant_ids, variant_varying,
                          static_cast<uint32_t>(varying.size() + 1));
  return Specialize(g.spirv, g.value_words, g.constant_ids, varying, 1);
}

}  // namespace kiln::backend
