// Host evaluation of tensor-level ops (compiler/ir/ops.h) on constant
// operands: the constant folder used by the ONNX importer.
//
// EvaluateOp computes the op's single result from DenseElements operands,
// with the op's own (static) result type and attributes, exactly as the
// runtime would: float dtypes are computed in double and rounded to the result
// dtype once per op (for add/sub/mul/div/sqrt that equals f32 arithmetic);
// integer dtypes stay integers (Div truncates toward zero, as ONNX Runtime);
// Cast float→int truncates toward zero. Broadcasting is numpy-style.
//
// Supported: the unary/binary/ternary elementwise ops (float-only ones on
// float dtypes), tensor.cast, clamp, select, reshape, transpose, slice,
// concat, gather, expand, pad, resize, reduce (every kind), and on floats matmul,
// conv2d, pool2d, softmax (naive loops: also a host reference for tests).
// Returns false, without error, for anything else (unknown op, dtype, an
// out-of-range gather index, an integer division by zero): the caller then
// keeps the op. Cost: O(result elements * rank).
#ifndef KILN_COMPILER_IMPORT_ONNX_CONST_EVAL_H_
#define KILN_COMPILER_IMPORT_ONNX_CONST_EVAL_H_

#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/ir/ir.h"

namespace kiln::onnx_import {

// `out` receives a new DenseElements of type `result_type` on success.
bool EvaluateOp(const std::string& name, const std::vector<const ir::DenseElements*>& operands,
                const ir::Type& result_type, const std::map<std::string, ir::Attribute>& attrs,
                ir::DenseElements* out);

// tensor.conv_transpose on float constants (EvaluateOp calls it; it lives in
// const_eval_conv_transpose.cc: a
// scatter over the input elements, independent of codegen's gather): false
// when the attributes or shapes do not fit together.
bool EvalConvTranspose(const std::vector<const ir::DenseElements*>& operands, const ir::Type& result_type,
                       const std::map<std::string, ir::Attribute>& attrs, ir::DenseElements* out);

// tensor.gather_elements / tensor.scatter_elements / tensor.arg_reduce on constants
// (const_eval_index.cc; EvaluateOp calls it): false when the attributes or
// shapes do not fit together.
bool EvalIndexOp(const std::string& op, const std::vector<const ir::DenseElements*>& operands,
                 const ir::Type& result_type, const std::map<std::string, ir::Attribute>& attrs,
                 ir::DenseElements* out);

// Element access helpers on DenseElements of any numeric dtype (f16 included).
double ReadElementAsDouble(const ir::DenseElements& d, int64_t i);
int64_t ReadElementAsInt(const ir::DenseElements& d, int64_t i);
// Builds a DenseElements of `type` from doubles (float/int dtypes; ints are
// truncated toward zero, bool is value != 0).
ir::DenseElements MakeDenseFromDoubles(const ir::Type& type, const std::vector<double>& values);
ir::DenseElements MakeDenseFromInts(const ir::Type& type, const std::vector<int64_t>& values);

bool IsFloatDType(DType t);

// --- Host scalars, structured control flow, whole functions -------------------------
// The evaluator below represents every SSA value as DenseElements: tensors as
// themselves, `index` values as tensor<i64> scalars and `i1` values as
// tensor<i1> scalars.

// tensor.extract of a constant: its single element as int64 (bool: 0/1).
// False when `d` does not hold exactly one element.
bool EvaluateExtract(const ir::DenseElements& d, int64_t* out);

// Evaluates a region op (scf.if, scf.for, scf.while, scf.index_switch) on the
// host when its operands and every value its regions read from outside are
// constants (tensor.constant / arith.constant results): scf.if with a
// constant condition runs only the taken region. Nested ops: the tensor level
// (EvaluateOp), arith.constant, tensor.extract and nested scf ops. At most
// `max_trips` loop trips and 2^26 computed result elements in all. On
// success `results` gets one value per op result; false, without error, when
// anything is not evaluable or a bound is hit. Cost: the evaluated ops times
// the trips (bounded as above).
bool EvaluateRegionOp(ir::Operation* op, std::vector<ir::DenseElements>* results,
                      int64_t max_trips);

// Reference interpreter for a func.func of the tensor level plus scf.* and
// arith.constant (e.g. to check imported control flow numerically without a
// device): binds `args` to the entry block arguments (types must match
// exactly) and returns the func.return operands.
// Errors: kInvalidArgument (argument count or types), kUnimplemented naming
// the op that cannot be evaluated, kResourceExhausted beyond `max_trips` loop
// trips. Cost: every op evaluated with the naive host kernels.
StatusOr<std::vector<ir::DenseElements>> InterpretFunction(
    ir::Operation* func, const std::vector<ir::DenseElements>& args,
    int64_t max_trips = int64_t{1} << 20);

}  // namespace kiln::onnx_import

#endif  // KILN_COMPILER_IMPORT_ONNX_CONST_EVAL_H_
