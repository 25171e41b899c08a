// The tensors of a function's signature (format::TensorSig in the module
// schema): their names and types as text for messages, byte sizes, dims,
// and whether a buffer view matches one. Shared by linking
// (context_link.cc) and invocation (context.cc); internal to kiln_vm.
#ifndef KILN_VM_TENSOR_SIG_H_
#define KILN_VM_TENSOR_SIG_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "vm/module.h"
#include "vm/value.h"

namespace kiln::vm {

// "tensor<1x3x48x192xf32>" (ranks past kMaxRank are cut to kMaxRank).
std::string SigTypeString(const format::TensorSig* sig);
// The tensor's name, or "" when the module gives none.
std::string SigName(const format::TensorSig* sig);
// True when `view` has exactly the signature's dtype and dims.
bool ViewMatches(const BufferView* view, const format::TensorSig* sig);
// Bytes of the tensor: dtype size times the product of the dims.
uint64_t SigByteSize(const format::TensorSig* sig);
// The dims (at most kMaxRank of them) into `dims`, their count into `rank`.
void SigDims(const format::TensorSig* sig, int64_t* dims, size_t* rank);

}  // namespace kiln::vm

#endif  // KILN_VM_TENSOR_SIG_H_
