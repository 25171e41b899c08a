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
// concat, gather, expand, pad, reduce (every kind), and on floats matmul,
// conv2d, pool2d, softmax (naive loops: also a host reference for tests).
// Returns false, without error, for anything else (unknown op, dtype, an
// out-of-range gather index, an integer division by zero): the caller then
// keeps the op. Cost: O(result elements * rank).
#ifndef KILN_COMPILER_IMPORT_ONNX_CONST_EVAL_H_
#define KILN_COMPILER_IMPORT_ONNX_CONST_EVAL_H_

#include <map>
#include <string>
#include <vector>

#include "compiler/ir/ir.h"

namespace kiln::onnx_import {

// `out` receives a new DenseElements of type `result_type` on success.
bool EvaluateOp(const std::string& name, const std::vector<const ir::DenseElements*>& operands,
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

}  // namespace kiln::onnx_import

#endif  // KILN_COMPILER_IMPORT_ONNX_CONST_EVAL_H_
