// ONNX Einsum → tensor-level ops (transpose, reshape, mul, reduce, matmul).
// The equation "t1,t2,...->out" (or implicit: the letters that appear once,
// alphabetically, after the ellipsis dims) is lowered per operand:
//   1. a letter repeated in one term takes the diagonal: the operand times
//      an identity mask over the two axes, summed over the second one;
//   2. letters that appear in only this term and not in the output are
//      summed out (tensor.reduce sum);
// then one operand is transposed into the output order; two operands become
// one batched tensor.matmul: batch letters (in both and the output), M (only
// the first and the output), N (only the second and the output), K (both,
// not the output): A → [batch.., M, K], B → [batch.., K, N], the product is
// reshaped and transposed into the output order; three or more operands are
// multiplied with broadcasting in one common letter order and the
// non-output letters summed. "..." stands for the leading dims that the
// letters leave, right-aligned and broadcast across operands (numpy.einsum's
// rules). Errors: a malformed equation, or dims that disagree for a letter.
#include <algorithm>
#include <map>

#include "compiler/import/onnx/onnx_importer_internal.h"

namespace kiln::onnx_import::detail {

Status Importer::Einsum(const onnx::NodeProto& n, const std::vector<Value*>& in,
                        std::vector<Value*>& out) {
  if (in.empty()) return Invalid("Einsum needs at least one input");
  for (Value* v : in)
    if (!v) return Invalid("missing input");
  std::string eq;
  for (char ch : AttrStr("equation", ""))
    if (ch != ' ') eq += ch;
  const size_t arrow = eq.find("->");
  const bool explicit_out = arrow != std::string::npos;
  const std::string lhs = explicit_out ? eq.substr(0, arrow) : eq;
  std::vector<std::string> terms;
  {
    size_t s = 0;
    while (true) {
      size_t c = lhs.find(',', s);
      terms.push_back(lhs.substr(s, c == std::string::npos ? std::string::npos : c - s));
      if (c == std::string::npos) break;
      s = c + 1;
    }
  }
  if (terms.size() != in.size())
    return Invalid("equation '" + eq + "' has " + std::to_string(terms.size()) + " terms for " +
                   std::to_string(in.size()) + " inputs");
  // Ellipsis dims become the characters '0', '1', ... (right-aligned).
  int64_t nell = 0;
  std::vector<std::string> t2(terms.size());
  auto expand = [&](const std::string& t, int64_t rank, std::string* r) -> Status {
    size_t e = t.find("...");
    std::string letters = t;
    if (e != std::string::npos) letters.erase(e, 3);
    for (char ch : letters)
      if (!std::isalpha(static_cast<unsigned char>(ch))) return Invalid("bad equation '" + eq + "'");
    int64_t k = rank < 0 ? nell : rank - static_cast<int64_t>(letters.size());
    if (e == std::string::npos) {
      if (rank >= 0 && k != 0) return Invalid("term '" + t + "' does not match rank " + std::to_string(rank));
      *r = t;
      return OkStatus();
    }
    if (k < 0) return Invalid("term '" + t + "' has more letters than rank " + std::to_string(rank));
    std::string ell;
    for (int64_t i = nell - k; i < nell; ++i) ell += static_cast<char>('0' + i);
    *r = t.substr(0, e) + ell + t.substr(e + 3);
    return OkStatus();
  };
  for (size_t i = 0; i < terms.size(); ++i) {
    size_t e = terms[i].find("...");
    if (e != std::string::npos)
      nell = std::max<int64_t>(nell, in[i]->type().rank() - static_cast<int64_t>(terms[i].size() - 3));
  }
  if (nell > 10) return Unimpl("an ellipsis of more than 10 dims");
  for (size_t i = 0; i < terms.size(); ++i) KILN_RETURN_IF_ERROR(expand(terms[i], in[i]->type().rank(), &t2[i]));
  // Letter sizes (1 broadcasts).
  std::map<char, int64_t> size;
  for (size_t i = 0; i < t2.size(); ++i)
    for (size_t a = 0; a < t2[i].size(); ++a) {
      int64_t d = in[i]->type().shape[a];
      auto it = size.find(t2[i][a]);
      if (it == size.end() || it->second == 1) size[t2[i][a]] = d;
      else if (d != 1 && d != it->second)
        return Invalid(std::string("dims disagree for '") + t2[i][a] + "' in '" + eq + "'");
    }
  std::string outt;
  if (explicit_out) {
    KILN_RETURN_IF_ERROR(expand(eq.substr(arrow + 2), -1, &outt));
  } else {
    std::map<char, int> count;
    for (const auto& t : t2)
      for (char ch : t) ++count[ch];
    for (int64_t i = 0; i < nell; ++i) outt += static_cast<char>('0' + i);
    for (auto& kv : count)
      if (std::isalpha(static_cast<unsigned char>(kv.first)) && kv.second == 1) outt += kv.first;
  }
  for (char ch : outt)
    if (!size.count(ch)) return Invalid(std::string("output letter '") + ch + "' is in no input");
  DType dt = in[0]->type().dtype;
  for (Value* v : in)
    if (v->type().dtype != dt) return Invalid("inputs differ in dtype");

  // Per operand: diagonals, then letters used nowhere else summed out.
  std::vector<Value*> ops(in.begin(), in.end());
  for (size_t i = 0; i < ops.size(); ++i) {
    std::string& t = t2[i];
    for (size_t p = 0; p < t.size(); ++p) {
      size_t q;
      while ((q = t.find(t[p], p + 1)) != std::string::npos) {
        const Shape& s = ops[i]->type().shape;
        if (s[p] != s[q]) return Invalid(std::string("diagonal of '") + t[p] + "' over unequal dims");
        Shape ms(s.size(), 1);
        ms[p] = s[p];
        ms[q] = s[q];
        std::vector<double> eye(static_cast<size_t>(s[p] * s[q]), 0.0);
        for (int64_t k = 0; k < s[p]; ++k) eye[static_cast<size_t>(k * s[q] + k)] = 1.0;
        KILN_ASSIGN_OR_RETURN(Value* m, Binary("tensor.mul", ops[i], Constant(MakeDenseFromDoubles(Type::Tensor(dt, ms), eye))));
        Shape rs = s;
        rs.erase(rs.begin() + static_cast<int64_t>(q));
        ops[i] = Emit("tensor.reduce", {m}, Type::Tensor(dt, rs),
                      {{"kind", std::string("sum")}, {"axes", Shape{static_cast<int64_t>(q)}}, {"keepdims", false}});
        t.erase(q, 1);
      }
    }
    Shape axes, rs;
    std::string kept;
    for (size_t a = 0; a < t.size(); ++a) {
      bool elsewhere = outt.find(t[a]) != std::string::npos;
      for (size_t j = 0; j < t2.size() && !elsewhere; ++j) elsewhere = j != i && t2[j].find(t[a]) != std::string::npos;
      if (elsewhere) {
        kept += t[a];
        rs.push_back(ops[i]->type().shape[a]);
      } else {
        axes.push_back(static_cast<int64_t>(a));
      }
    }
    if (!axes.empty()) {
      ops[i] = Emit("tensor.reduce", {ops[i]}, Type::Tensor(dt, rs),
                    {{"kind", std::string("sum")}, {"axes", axes}, {"keepdims", false}});
      t = kept;
    }
  }
  // Transposes `v` (letters `t`) to the letter order `order` (a permutation of t).
  auto permute = [&](Value* v, const std::string& t, const std::string& order) {
    Shape perm;
    for (char ch : order) perm.push_back(static_cast<int64_t>(t.find(ch)));
    bool id = true;
    for (size_t k = 0; k < perm.size(); ++k) id = id && perm[k] == static_cast<int64_t>(k);
    return id ? v : Transpose(v, perm);
  };
  if (ops.size() == 1) {
    out[0] = permute(ops[0], t2[0], outt);
    return OkStatus();
  }
  if (ops.size() == 2) {
    const std::string &ta = t2[0], &tb = t2[1];
    std::string batch, ml, nl, kl;
    for (char ch : outt) {
      bool a = ta.find(ch) != std::string::npos, b = tb.find(ch) != std::string::npos;
      if (a && b) batch += ch;
      else if (a) ml += ch;
      else if (b) nl += ch;
    }
    for (char ch : ta)
      if (outt.find(ch) == std::string::npos) kl += ch;  // in both (others were summed out)
    auto dims = [&](Value* v, const std::string& t, const std::string& ls) {
      Shape s;
      for (char ch : ls) s.push_back(v->type().shape[t.find(ch)]);
      return s;
    };
    Shape ka = dims(ops[0], ta, kl), kb = dims(ops[1], tb, kl);
    if (ka == kb) {
      Shape ba = dims(ops[0], ta, batch), bb = dims(ops[1], tb, batch);
      int64_t M = Product(dims(ops[0], ta, ml)), N = Product(dims(ops[1], tb, nl)), K = Product(ka);
      Value* a = permute(ops[0], ta, batch + ml + kl);
      Shape as = ba;
      as.insert(as.end(), {M, K});
      a = Reshape(a, as);
      Value* b = permute(ops[1], tb, batch + kl + nl);
      Shape bs = bb;
      bs.insert(bs.end(), {K, N});
      b = Reshape(b, bs);
      Shape os;
      for (char ch : batch) os.push_back(size[ch]);
      Shape ms = os;
      ms.insert(ms.end(), {M, N});
      Value* y = Emit("tensor.matmul", {a, b}, Type::Tensor(dt, ms));
      for (char ch : ml + nl) os.push_back(size[ch]);
      y = Reshape(y, os);
      out[0] = permute(y, batch + ml + nl, outt);
      return OkStatus();
    }
  }
  // General: every operand in the common order (output letters, then the
  // summed ones), multiplied with broadcasting, the summed letters reduced.
  std::string all = outt;
  for (const auto& t : t2)
    for (char ch : t)
      if (all.find(ch) == std::string::npos) all += ch;
  Value* acc = nullptr;
  for (size_t i = 0; i < ops.size(); ++i) {
    std::string order;
    Shape full;
    for (char ch : all)
      if (t2[i].find(ch) != std::string::npos) order += ch;
    Value* v = permute(ops[i], t2[i], order);
    for (char ch : all) full.push_back(t2[i].find(ch) != std::string::npos ? v->type().shape[order.find(ch)] : 1);
    v = Reshape(v, full);
    if (!acc) {
      acc = v;
    } else {
      KILN_ASSIGN_OR_RETURN(acc, Binary("tensor.mul", acc, v));
    }
  }
  Shape axes, os;
  for (size_t a = 0; a < all.size(); ++a) {
    if (a < outt.size()) os.push_back(size[all[a]]);
    else axes.push_back(static_cast<int64_t>(a));
  }
  if (!axes.empty())
    acc = Emit("tensor.reduce", {acc}, Type::Tensor(dt, os), {{"kind", std::string("sum")}, {"axes", axes}, {"keepdims", false}});
  else if (acc->type().shape != os)
    acc = Emit("tensor.expand", {acc}, Type::Tensor(dt, os));
  out[0] = acc;
  return OkStatus();
}

}  // namespace kiln::onnx_import::detail
