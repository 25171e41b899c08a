#include "vm/tensor_sig.h"

#include <algorithm>

namespace kiln::vm {

std::string SigTypeString(const format::TensorSig* sig) {
  int64_t dims[kMaxRank];
  size_t rank = sig->shape() ? sig->shape()->size() : 0;
  for (size_t i = 0; i < rank && i < kMaxRank; ++i) {
    dims[i] = sig->shape()->Get(static_cast<flatbuffers::uoffset_t>(i));
  }
  return TensorTypeString(static_cast<DType>(sig->dtype()), dims, std::min(rank, kMaxRank));
}

bool ViewMatches(const BufferView* view, const format::TensorSig* sig) {
  if (static_cast<uint8_t>(view->dtype()) != static_cast<uint8_t>(sig->dtype())) return false;
  size_t rank = sig->shape() ? sig->shape()->size() : 0;
  if (view->rank() != rank) return false;
  for (size_t i = 0; i < rank; ++i) {
    if (view->dims()[i] != sig->shape()->Get(static_cast<flatbuffers::uoffset_t>(i))) {
      return false;
    }
  }
  return true;
}

std::string SigName(const format::TensorSig* sig) {
  return sig->name() ? sig->name()->str() : std::string();
}

uint64_t SigByteSize(const format::TensorSig* sig) {
  uint64_t n = DTypeSize(static_cast<DType>(sig->dtype()));
  if (sig->shape()) {
    for (flatbuffers::uoffset_t i = 0; i < sig->shape()->size(); ++i) {
      n *= static_cast<uint64_t>(sig->shape()->Get(i));
    }
  }
  return n;
}

void SigDims(const format::TensorSig* sig, int64_t* dims, size_t* rank) {
  *rank = sig->shape() ? std::min<size_t>(sig->shape()->size(), kMaxRank) : 0;
  for (size_t i = 0; i < *rank; ++i) {
    dims[i] = sig->shape()->Get(static_cast<flatbuffers::uoffset_t>(i));
  }
}

}  // namespace kiln::vm
