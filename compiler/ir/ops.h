// The op set of each IR level. This file is the contract between the ONNX
// importer (producer of the tensor level), the transforms, codegen and the
// bytecode emitter. Every op is written in the generic form of ir.h; result
// types are always fully static.
//
// What each op *is* (level, tied operands, fresh / view / external storage,
// size attribute, terminator, effects) is the one table compiler/ir/ops.def,
// queried through Traits(op) / op->code() (compiler/ir/op_traits.h). To add
// an op: describe it here, add its row to ops.def, and a case to
// op_traits_test.cc when it ties, views or allocates storage or has effects.
//
// ---------------------------------------------------------------------------
// Structural
//   func.func      attrs: sym_name: string, arg_names: [string...] (AttrList),
//                  result_names, arg_ownership: [string "borrow"|"consume"...]
//                  region 0: entry block whose arguments are the function
//                  arguments; terminated by func.return.
//   func.return    operands: the results.
//
// ---------------------------------------------------------------------------
// Tensor level (after import; static shapes; numpy-style broadcasting for
// every elementwise op with more than one operand; ONNX semantics unless
// stated).
//   tensor.constant    attrs: value: DenseElements. No operands.
//   Unary elementwise (1 operand, same shape; dtype same unless noted):
//     tensor.neg abs relu sigmoid tanh exp log sqrt reciprocal floor ceil
//     round erf sin cos not
//     tensor.cast          result dtype = target dtype
//     tensor.leaky_relu    attrs: alpha: f64
//     tensor.hard_sigmoid  attrs: alpha: f64, beta: f64   (max(0,min(1,a*x+b)))
//     tensor.hard_swish
//     tensor.elu           attrs: alpha
//     tensor.softplus
//     tensor.clamp         attrs: min: f64, max: f64  (Clip with constant bounds)
//     tensor.tan asin acos atan sinh cosh asinh acosh atanh   (f32)
//     tensor.sign          -1, 0 or 1 in the operand's dtype (NaN stays NaN)
//     tensor.isnan         f32 -> i1
//     tensor.isinf         f32 -> i1; attrs: detect_negative, detect_positive
//                          (i64 0/1, default 1)
//   Binary elementwise (2 operands, broadcast):
//     tensor.add sub mul div pow max min mod
//     tensor.equal greater less greater_equal less_equal  (result i1)
//     tensor.and or xor                                   (i1)
//     tensor.shift_left shift_right   integer x, y of x's dtype: x << y, x >> y
//                          (logical on the unsigned dtypes, which are all the
//                          importer emits); wraps to the dtype's width; a
//                          shift of the bit width or more gives 0 (ONNX BitShift)
//   Ternary: tensor.select (cond: i1, a, b)  (ONNX Where)
//   tensor.conv2d      operands: input NCHW, filter [O, I/group, KH, KW],
//                      optional bias [O]. attrs: strides [2], pads [4]
//                      (top, left, bottom, right), dilations [2], group.
//                      1-D convolutions are imported as conv2d with H = 1.
//   tensor.conv_transpose  operands: input [N, C, D1..Dk] (k = 1..3), filter
//                      [C, M/group, K1..Kk], optional bias [M]; f32. attrs:
//                      strides [k], dilations [k], pads [2k] (begins, then
//                      ends), output_padding [k], group. ONNX ConvTranspose
//                      with auto_pad / output_shape resolved into pads and
//                      output_padding; the result extents are exactly ONNX's
//                      formula (compiler/ir/conv_transpose.h, which the
//                      verifier checks).
//   tensor.matmul      operands: A [..., M, K], B [..., K, N]; batch dims
//                      broadcast. Rank-1 operands are promoted as in ONNX
//                      MatMul by the importer (via tensor.reshape).
//   tensor.reduce      attrs: kind: "sum"|"mean"|"max"|"min"|"prod"|"sum_square"
//                      |"l2"|"log_sum_exp", axes: [..] (normalized, sorted),
//                      keepdims: bool.
//   tensor.arg_reduce  (x) -> i64 indices; attrs: kind: "max"|"min", axis
//                      (normalized), keepdims: bool, select_last_index: bool.
//                      The index along `axis` of the first (or last) extreme
//                      element (ONNX ArgMax / ArgMin).
//   tensor.gather_elements (x, indices: i32|i64) -> x's dtype, indices' shape;
//                      attrs: axis (normalized). out[i] = x[i with i[axis] =
//                      indices[i]] (ONNX GatherElements); negative indices
//                      count from the end, out-of-range ones are clamped.
//   tensor.scatter_elements (data, indices: i32|i64, updates) -> data's type;
//                      attrs: axis (normalized), reduction: "none"|"add"|
//                      "mul"|"max"|"min". indices and updates have one shape;
//                      update j goes to j with j[axis] = indices[j] (ONNX
//                      ScatterElements; duplicates apply in order, the last
//                      wins for "none"). Out-of-range indices are ignored.
//   tensor.scatter_nd  (data, indices: i64 [..., k], updates) -> data's type;
//                      attrs: reduction. Update slice q goes to data[indices[q]]
//                      (ONNX ScatterND); in order, the last wins for "none".
//   tensor.top_k       (x) -> i64 indices; attrs: axis (normalized), k,
//                      largest: bool. Position j along the axis holds the
//                      index of x's element of rank j (ties: the lower index
//                      first), i.e. ONNX TopK's sorted Indices; the values are
//                      a tensor.gather_elements of x with them.
//   tensor.cumsum      (x) -> same type; attrs: axis (normalized), exclusive:
//                      bool, reverse: bool (ONNX CumSum; sums in scan order).
//   tensor.pool2d      attrs: kind: "max"|"avg", kernel [2], strides [2],
//                      pads [4], dilations [2], count_include_pad: bool.
//                      Input NCHW. ceil_mode is resolved into the result shape.
//   tensor.softmax     attrs: axis (normalized), log: bool (LogSoftmax).
//   tensor.transpose   attrs: perm.
//   tensor.reshape     no data movement: same bytes, result type's shape.
//                      (Flatten, Squeeze, Unsqueeze, Reshape.)
//   tensor.slice       attrs: starts [rank], strides [rank] (>0 or <0); the
//                      result shape gives the sizes. Element i along axis d
//                      reads input[starts[d] + i * strides[d]].
//   tensor.concat      attrs: axis.
//   tensor.pad         attrs: pads [2*rank] (ONNX order: all begins, then all
//                      ends; may be negative), mode: "constant"|"reflect"|"edge",
//                      value: f64.
//   tensor.gather      operands: data, indices (i64/i32). attrs: axis.
//   tensor.resize      operands: x, index (i32 [K]), optional weight (f32 [K]).
//                      attrs: taps [rank] (taps per output coordinate along
//                      each axis; 0 = the axis is copied, out = in),
//                      extrapolation_value: f64, mode: string (the ONNX mode,
//                      informational). ONNX Resize/Upsample with host-computed
//                      separable taps (import/onnx/resize_taps.h): along
//                      axis d (off_d = sum_{e<d} taps[e] * out[e]) output
//                      coordinate o reads x at index[off_d + o*taps[d] + t]
//                      with weight[...] (1 without weights), t < taps[d];
//                      y = the weighted sum over every combination of taps,
//                      or extrapolation_value where the first index of a
//                      coordinate is -1. Without weights every taps[d] <= 1
//                      (a gather; any dtype); with weights x and y are f32.
//   tensor.expand      broadcast operand to the result shape.
//   tensor.batch_norm  is never produced: the importer folds BatchNormalization
//                      into tensor.mul/tensor.add with per-channel constants.
//   tensor.extract     (%t: tensor with exactly one element, any shape) -> i1
//                      (when %t is i1) or index (when %t has an integer dtype).
//                      Reads the single element of %t to the host: the bridge
//                      from a device-computed tensor to an scf condition or
//                      bound (e.g. ONNX If → %c = tensor.extract %cond, then
//                      scf.if %c). It waits for %t to be computed and reads it
//                      back (a host-visible download of a few bytes).
//
// ---------------------------------------------------------------------------
// Dispatch level (after fuse-dispatch-regions)
//   flow.dispatch      operands: tensors read by the dispatch. results: tensors
//                      written. region 0: one block whose arguments mirror the
//                      operands; body: tensor-level ops; terminated by
//                      flow.return (operands = the results).
//                      attrs: name: string ("dispatch_3_conv2d_relu"),
//                      locs: [string] (ONNX node names fused in).
//   flow.return
//   tensor.reshape and tensor.constant stay outside dispatches (host knows the
//   data; reshapes are free views).
//
// ---------------------------------------------------------------------------
// Stream level (DESIGN.md "Data flow"; modelled on IREE's stream dialect).
// Resources (!stream.resource<L>, L = external|transient|constant|variable|
// staging|*) have VALUE semantics until allocation: an op that "writes" a
// resource produces a new SSA value. Sizes are static byte counts in attrs.
// Every op may carry `affinity = "name"` (a device of the topology; absent =
// the default device).
//   stream.tensor.import  (%arg: tensor) -> !stream.resource<external>
//                         attrs: size, consume: bool (ABI ownership; false =
//                         borrow: the callee must never write it).
//   stream.tensor.export  (%r: resource) -> tensor       attrs: size
//   stream.async.constant () -> resource<constant>       attrs: value (dense), size
//   stream.async.alloca   () -> resource<transient>      attrs: size (contents undefined)
//   stream.async.splat    () -> resource                 attrs: size, pattern: i64 (32-bit)
//   stream.async.fill     (%target) -> resource          attrs: offset, length, size, pattern
//                         TIED: the result reuses %target's storage.
//   stream.async.clone    (%src) -> resource             attrs: size. A copy with value
//                         semantics (materialize-copy-on-write inserts these).
//   stream.async.copy     (%target, %src) -> resource    attrs: src_offset, dst_offset,
//                         length, size. TIED to %target.
//   stream.async.transfer (%src) -> resource             attrs: size, source_affinity,
//                         affinity (the target). Changes affinity (elide-transfers).
//   stream.async.slice    (%src) -> resource             attrs: offset, length (a subrange)
//   stream.async.update   (%target, %update) -> resource attrs: offset, length, size
//                         TIED to %target (insert into a subrange).
//                         Optional strides (--fuse-pad): element (i0..ik) of
//                         %update goes to element offset/elem + sum(i_d *
//                         strides[d]) of the target, [offset, offset+length)
//                         being the hull; only --emplace-allocations'
//                         placement lowers it (never a runtime copy).
//   stream.async.dispatch (%operands...) -> results      attrs: entry: @symbol (the
//                         dispatch body), tied_operands: [i64 per result: the
//                         operand index the result is written in place into,
//                         or -1 for a fresh result], sizes: [result bytes],
//                         optional operand_ranges / result_ranges ([offset,
//                         length] pairs: the subrange each binding touches).
//                         Placed results (--emplace-allocations): per result,
//                         result_offsets (byte offset into the tied operand,
//                         the placement target; -1: not placed),
//                         result_lengths (bytes written there) and
//                         result_element_offsets (elements the shader adds
//                         to each index it writes; the binding starts at the
//                         offset aligned down to 256). A placement target is
//                         an extra operand after those the executable binds:
//                         it is neither bound nor read; sizes[r] is the
//                         target's size.
//                         result_strides (optional; a strided placement,
//                         --fuse-pad): per result its rank, then that many
//                         element strides in the target (rank 0: row-major);
//                         result_lengths[r] is then the written hull.
//   stream.cmd.barrier    () -> ()                       attrs: ranges = [storage id,
//                         byte offset, length (0: to the end of the buffer),
//                         ...], command (optional, default 0). The allocated
//                         level only (--place-barriers, place_barriers.h).
//   stream.timepoint.immediate () -> !stream.timepoint
//   stream.timepoint.join  (%tps...) -> timepoint
//   stream.timepoint.await (%tp, %resources...) -> resources (the same values,
//                         usable once %tp is reached)
//   stream.async.execute  (%awaits..., %captures...) attrs: operand_segments =
//                         [n_awaits, n_captures]; region: ^bb(%captures...):
//                         ... stream.yield(%results) -> (results..., timepoint).
//                         A scheduled group of async work (schedule-execution).
//   stream.resource.dealloca (%r, %tp) -> ()  free once %tp is reached (queue-ordered)
//   stream.resource.retain   (%r) -> ()       runtime refcount (escaping values)
//   stream.resource.release  (%r) -> ()
//   util.global           () -> ()   attrs: sym_name, type (a resource type), size
//                         (bytes; the emitter requires it); module level. A
//                         module global (variable lifetime): zero-filled when
//                         the context is created, persists across calls.
//   util.global.load      () -> resource<variable>       attrs: global: @sym
//                         (the emitter records `size` on it). Value
//                         semantics: the contents at the load.
//   util.global.store     (%r) -> ()                      attrs: global: @sym
//                         The global holds a copy of %r from here on (the
//                         emitter copies unless %r already lives in the
//                         global's buffer: a state updated in place).
//   func.call             (%args...) -> results           attrs: callee: @sym,
//                         sizes: [result bytes] (added by convert-to-stream).
//                         At the tensor level operands/results are tensors whose
//                         types equal the callee's; at the stream level they are
//                         resources (results !stream.resource<external>).
//                         Ownership per callee arg_ownership: a `borrow`
//                         operand is only read by the callee; a `consume`
//                         operand is moved (the callee may update or reuse
//                         its storage: copy-on-write treats it as a tied use
//                         and the caller must not read it afterwards). Results
//                         are fresh external storage the caller holds, or a
//                         consumed operand's storage handed back: never a
//                         borrowed operand (a callee that returns a borrowed
//                         argument returns a copy of it, see the emitter's
//                         EmitReturn).
//   func.func             may carry `import = true` (a declaration with an empty
//                         region: a function of another module, or an async
//                         import taking fences) and arg_ownership. An import
//                         declaration is named "module.function" (e.g.
//                         "mel.main") and carries its types as attributes:
//                         arg_types: [tensor types], result_types: [tensor
//                         types]; Module::functions() skips declarations
//                         (Module::import_declarations() lists them). The
//                         emitter lowers a call of one to CALL_IMPORT of a
//                         module import with the typed signature
//                         ("r_r:1x1760xf32->1x1x8x32xf32").
// Structured control flow (regions end in scf.yield unless noted):
//   scf.if       (%cond: i1) -> results; region 0 = then, region 1 = else
//   scf.index_switch (%index: index) -> results; attrs: cases: [i64]; one
//                region per case, then the default region
//   scf.for      (%lb, %ub, %step: index, %inits...) -> results; region 0:
//                ^bb(%iv: index, %iter_args...): ... scf.yield(%next_iter_args)
//   scf.while    (%inits...) -> results; region 0 ("before"): ^bb(%args...):
//                ... scf.condition(%cond: i1, %forwarded...); region 1
//                ("after"): ^bb(%forwarded...): ... scf.yield(%next...)
//   arith.constant () -> index|i1   attrs: value: i64 (0 or 1 for i1)
//   arith.addi / arith.subi / arith.muli (index, index) -> index
//   arith.cmpi   (index, index) -> i1   attrs: predicate: "eq"|"ne"|"slt"|
//                "sle"|"sgt"|"sge". Host scalars (loop counters, switch
//                indices): the emitter keeps them in i32 registers.
//   A block argument or iter_arg of type !stream.resource<*> accepts any
//   resource (inits, branch operands, yields); otherwise types match exactly.
//   Regions of scf ops take no arguments except as listed (scf.for, scf.while)
//   and may use any value defined above them (captured values); scf.yield /
//   scf.condition operand types equal the op's result types, and iter_args /
//   block arguments have the types of the corresponding inits.
//   scf.index_switch / scf.while / cf.br / cf.cond_br may carry host values
//   (index, i1) as well as resources.
//   cf.br / cf.cond_br: see ir.h (successors with block arguments). A
//   function body may have several blocks; every block ends in func.return,
//   cf.br or cf.cond_br.
#ifndef KILN_COMPILER_IR_OPS_H_
#define KILN_COMPILER_IR_OPS_H_

#include <string>

namespace kiln::ir {

// True for ops whose result element i depends only on element i of each
// (broadcast) operand: the unary/binary/ternary elementwise ops above
// (OpFlag kElementwise in ops.def; Traits(op).is_elementwise() when an
// Operation is at hand).
bool IsElementwiseOp(const std::string& name);
// True for ops that stay on the host side of dispatch formation (OpFlag
// kHostSide: tensor.constant, tensor.reshape).
bool IsHostSideOp(const std::string& name);

}  // namespace kiln::ir

#endif  // KILN_COMPILER_IR_OPS_H_
