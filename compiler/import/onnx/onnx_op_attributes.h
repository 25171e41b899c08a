// The attributes the ONNX importer accepts, per claimed op: one table.
//
// Every op the importer claims (SupportedOnnxOps(), default domain) has an
// entry. An attribute of a node is
//   * accepted: its handler reads it and handles every value, or gives an
//     error naming the node and the attribute for a value it does not handle
//     (e.g. Conv's auto_pad "SAME_BOTH", BatchNormalization's spatial = 0);
//     a few attributes that have no effect on inference are accepted too
//     (listed with the reason in onnx_op_attributes.cc);
//   * rejected with a reason (e.g. Constant's value_strings: string tensors);
//   * or unknown to the table: also an error.
// The importer checks every node against the table before its handler runs
// (CheckOnnxNodeAttributes), so no attribute is silently ignored.
// onnx_op_attributes_test.cc checks the table against ONNX's own operator
// schemas (onnx::OpSchemaRegistry, every version): each attribute of a
// claimed op's schema is accepted or rejected with a reason.
#ifndef KILN_COMPILER_IMPORT_ONNX_ONNX_OP_ATTRIBUTES_H_
#define KILN_COMPILER_IMPORT_ONNX_ONNX_OP_ATTRIBUTES_H_

#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h

#include <map>
#include <set>
#include <string>

#include "base/status.h"

namespace kiln::onnx_import {

struct OnnxOpAttributes {
  std::set<std::string> accepted;
  std::map<std::string, std::string> rejected;  // attribute → why it is not supported
};

// ONNX op type (default domain) → its attributes. Static; never null.
const std::map<std::string, OnnxOpAttributes>& OnnxOpAttributeTable();

// Checks the attributes of `node` (named `loc` in errors) against the table:
//   OK when each is accepted (or the op has no entry: the caller reports an
//   unsupported op);
//   kUnimplemented "node 'loc' (Op): attribute 'a' is not supported: <why>"
//   for a rejected one, and "node 'loc' (Op): attribute 'a' is not handled
//   (Op accepts: ...)" for one the table does not list.
Status CheckOnnxNodeAttributes(const onnx::NodeProto& node, const std::string& loc);

}  // namespace kiln::onnx_import

#endif  // KILN_COMPILER_IMPORT_ONNX_ONNX_OP_ATTRIBUTES_H_
