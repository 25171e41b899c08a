// Kiln IR core: SSA values, operations, blocks, regions (an MLIR-like design,
// reduced to what Kiln needs). The same core carries every level of the
// pipeline (DESIGN.md "Data flow"): the tensor level after import, dispatch
// regions after fusion, and the stream/vm levels. Ops are identified by name
// ("tensor.conv2d", "flow.dispatch", ...); the op set of each level is listed
// in compiler/ir/ops.h, and what each op is (tied operands, storage, effects,
// terminator) in the table compiler/ir/ops.def, queried through
// op->code() / Traits(op) (compiler/ir/op_traits.h).
//
// Ownership: a Region owns its Blocks, a Block owns its arguments and
// Operations, an Operation owns its results and Regions. The top-level Module
// owns a list of function ops. Values are referenced by raw pointer; every use
// is recorded in the value's use list so RAUW and erasure are cheap and safe.
//
// Textual form (printer.h / parser.h) is MLIR's generic form:
//   %0, %1 = "dialect.op"(%a, %b) {attr = 1 : i64} ({ ^bb0(%x: tensor<2xf32>): ... })
//            : (tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
#ifndef KILN_COMPILER_IR_IR_H_
#define KILN_COMPILER_IR_IR_H_

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "base/dtype.h"
#include "base/half.h"
#include "compiler/ir/op_traits.h"

namespace kiln::ir {

class Operation;
class Block;
class Region;

// ---------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------
// Kinds of SSA value. `kTensor` has a dtype and a static shape (dims >= 0; a
// rank-0 shape is a scalar). The stream level adds resources and timepoints.
enum class TypeKind : uint8_t {
  kTensor = 0,     // tensor<1x3x48x192xf32>, tensor<f32> (scalar)
  kIndex = 1,      // index (host integer: sizes, offsets, loop counters)
  kI1 = 2,         // i1 (host boolean: branch conditions)
  kResource = 3,   // !stream.resource<transient> (device memory, value semantics)
  kTimepoint = 4,  // !stream.timepoint
};

// Lifetime class of a resource (DESIGN.md "Resource").
enum class Lifetime : uint8_t { kUnknown, kExternal, kTransient, kConstant, kVariable, kStaging };
const char* LifetimeName(Lifetime l);

struct Type {
  TypeKind kind = TypeKind::kTensor;
  DType dtype = DType::kInvalid;      // tensors only
  std::vector<int64_t> shape;         // tensors only
  Lifetime lifetime = Lifetime::kUnknown;  // resources only

  static Type Tensor(DType dtype, std::vector<int64_t> shape) {
    Type t; t.kind = TypeKind::kTensor; t.dtype = dtype; t.shape = std::move(shape); return t;
  }
  static Type Index() { Type t; t.kind = TypeKind::kIndex; return t; }
  static Type I1() { Type t; t.kind = TypeKind::kI1; return t; }
  static Type Resource(Lifetime l) { Type t; t.kind = TypeKind::kResource; t.lifetime = l; return t; }
  static Type Timepoint() { Type t; t.kind = TypeKind::kTimepoint; return t; }

  bool is_tensor() const { return kind == TypeKind::kTensor; }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  // Number of elements (1 for scalars). Tensors only.
  int64_t num_elements() const;
  // Size in bytes of a dense, row-major tensor. Tensors only.
  int64_t byte_size() const { return num_elements() * static_cast<int64_t>(DTypeSize(dtype)); }
  bool operator==(const Type& o) const {
    return kind == o.kind && dtype == o.dtype && shape == o.shape && lifetime == o.lifetime;
  }
  bool operator!=(const Type& o) const { return !(*this == o); }
  // "tensor<1x3xf32>", "tensor<f32>", "index", "i1", "!stream.resource<transient>",
  // "!stream.timepoint".
  std::string ToString() const;
};

// ---------------------------------------------------------------------------
// Attributes
// ---------------------------------------------------------------------------
// Dense constant data, row-major, shared between copies of the attribute
// (weights are not duplicated when IR is cloned). Printed as
// dense<[1.0, 2.0]> : tensor<2xf32> (small) or dense<"0xHEX"> (large).
struct DenseElements {
  Type type;                                      // a tensor type
  std::shared_ptr<const std::vector<uint8_t>> data;  // type.byte_size() bytes
  // Element i converted to double / int64 (any numeric dtype).
  double GetDouble(int64_t i) const;
  int64_t GetInt(int64_t i) const;
  const uint8_t* bytes() const { return data->data(); }
};
DenseElements MakeDense(const Type& type, std::vector<uint8_t> bytes);
DenseElements MakeDenseF32(std::vector<int64_t> shape, const std::vector<float>& values);
DenseElements MakeDenseI64(std::vector<int64_t> shape, const std::vector<int64_t>& values);
// IEEE binary16 <-> binary32 conversion (base/half.h: round to nearest even;
// NaN/Inf kept).
using ::kiln::FloatToHalf;
using ::kiln::HalfToFloat;
// bfloat16 <-> float: the top 16 bits of an IEEE f32; FloatToBF16 rounds to
// nearest even and keeps NaN a (quiet) NaN.
float BF16ToFloat(uint16_t b);
uint16_t FloatToBF16(float f);

struct Attribute;
using AttrList = std::vector<Attribute>;
// Attribute values: integer (printed `3 : i64`), float (`0.5 : f64`), bool
// (`true`), string (`"x"`), integer array (`[1, 2]`), float array
// (`[0.5, 1.0] : f64`... printed as `array<f64: 0.5, 1.0>`), a type
// (`tensor<2xf32>`), a symbol reference (`@name`), dense elements, or a list
// of attributes (`[...]` mixed).
struct SymbolRef { std::string name; bool operator==(const SymbolRef& o) const { return name == o.name; } };
struct Attribute {
  std::variant<int64_t, double, bool, std::string, std::vector<int64_t>,
               std::vector<double>, Type, SymbolRef, DenseElements,
               std::shared_ptr<AttrList>>
      value;
  Attribute() : value(int64_t{0}) {}
  template <typename T>
  Attribute(T v) : value(std::move(v)) {}  // NOLINT: implicit by design
  Attribute(int v) : value(int64_t{v}) {}  // NOLINT
  Attribute(const char* v) : value(std::string(v)) {}  // NOLINT
};
// Wraps a list of attributes (e.g. arg_names) as one attribute.
inline Attribute MakeListAttr(AttrList list) {
  return Attribute(std::make_shared<AttrList>(std::move(list)));
}

// ---------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------
struct Use {
  Operation* user;
  unsigned operand_index;
};

// An SSA value: an operation result or a block argument.
class Value {
 public:
  const Type& type() const { return type_; }
  void set_type(Type t) { type_ = std::move(t); }
  // Defining op, or nullptr for block arguments.
  Operation* defining_op() const { return def_op_; }
  // Owning block for block arguments, else the defining op's block.
  Block* parent_block() const;
  // Result number or argument number.
  unsigned index() const { return index_; }
  bool is_block_argument() const { return def_op_ == nullptr; }
  const std::vector<Use>& uses() const { return uses_; }
  bool use_empty() const { return uses_.empty(); }
  // Rewrites every use of this value to `other`.
  void ReplaceAllUsesWith(Value* other);
  // Optional name hint used by the printer ("%x" instead of "%3").
  const std::string& name_hint() const { return name_hint_; }
  void set_name_hint(std::string n) { name_hint_ = std::move(n); }

 private:
  friend class Operation;
  friend class Block;
  Type type_;
  Operation* def_op_ = nullptr;
  Block* arg_owner_ = nullptr;
  unsigned index_ = 0;
  std::vector<Use> uses_;
  std::string name_hint_;
};

// ---------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------
class Operation {
 public:
  // Creates a detached op. Insert it with Block::Append/InsertBefore or a Builder.
  static std::unique_ptr<Operation> Create(std::string name, const std::vector<Value*>& operands,
                                           const std::vector<Type>& result_types,
                                           std::map<std::string, Attribute> attrs = {},
                                           unsigned num_regions = 0);
  ~Operation();

  const std::string& name() const { return name_; }
  // The op's row in compiler/ir/ops.def (OpCode::kUnknown for a name the
  // table does not list), interned from the name once at creation; query its
  // traits with Traits(op) (op_traits.h) rather than comparing names.
  OpCode code() const { return code_; }
  bool is(OpCode c) const { return code_ == c; }
  bool is(const char* n) const { return name_ == n; }
  // Dialect prefix: "tensor" for "tensor.conv2d".
  std::string dialect() const;

  // Operands.
  unsigned num_operands() const { return static_cast<unsigned>(operands_.size()); }
  Value* operand(unsigned i) const { return operands_[i]; }
  const std::vector<Value*>& operands() const { return operands_; }
  void SetOperand(unsigned i, Value* v);
  void AppendOperand(Value* v);
  void EraseOperand(unsigned i);
  void SetOperands(const std::vector<Value*>& vs);

  // Results.
  unsigned num_results() const { return static_cast<unsigned>(results_.size()); }
  Value* result(unsigned i = 0) const { return results_[i].get(); }
  std::vector<Value*> results() const;
  // Removes result `i` (must be unused); later results shift down.
  void EraseResult(unsigned i);

  // Attributes (kept sorted by name, so printing is deterministic).
  const std::map<std::string, Attribute>& attrs() const { return attrs_; }
  bool has_attr(const std::string& n) const { return attrs_.count(n) != 0; }
  const Attribute* attr(const std::string& n) const;
  void set_attr(const std::string& n, Attribute a) { attrs_[n] = std::move(a); }
  void remove_attr(const std::string& n) { attrs_.erase(n); }
  // Typed getters with defaults (no error if absent / wrong kind: default).
  int64_t int_attr(const std::string& n, int64_t def = 0) const;
  double float_attr(const std::string& n, double def = 0) const;
  bool bool_attr(const std::string& n, bool def = false) const;
  std::string str_attr(const std::string& n, const std::string& def = "") const;
  std::vector<int64_t> ints_attr(const std::string& n) const;
  std::vector<double> floats_attr(const std::string& n) const;
  const DenseElements* dense_attr(const std::string& n) const;
  // A list attribute (AttrList); nullptr if absent or another kind. An empty
  // int array (`[]` in text reads back as one) gives an empty list.
  const AttrList* list_attr(const std::string& n) const;
  // Element strings of a list attr of strings (e.g. arg_names); non-string
  // elements are skipped. Empty if absent.
  std::vector<std::string> strs_attr(const std::string& n) const;

  // Successor blocks of a branch terminator ("cf.br", "cf.cond_br"): blocks
  // of the region that holds this op. Printed `"cf.br"(%x)[^bb1] : ...`.
  // Conventions: cf.br passes all operands to successor 0's arguments;
  // cf.cond_br has operand 0 = the i1 condition, then the arguments of
  // successor 0, then those of successor 1, split by the int-array attr
  // `operand_segments = [1, n_true, n_false]`.
  unsigned num_successors() const { return static_cast<unsigned>(successors_.size()); }
  Block* successor(unsigned i) const { return successors_[i]; }
  const std::vector<Block*>& successors() const { return successors_; }
  void AddSuccessor(Block* b) { successors_.push_back(b); }
  void SetSuccessor(unsigned i, Block* b) { successors_[i] = b; }

  // Regions.
  unsigned num_regions() const { return static_cast<unsigned>(regions_.size()); }
  Region* region(unsigned i) const { return regions_[i].get(); }

  // Source location (ONNX node name), carried to debug info.
  const std::string& loc() const { return loc_; }
  void set_loc(std::string l) { loc_ = std::move(l); }

  Block* parent_block() const { return block_; }
  // The op owning the region that contains this op (nullptr at top level).
  Operation* parent_op() const;
  // The ops just after / before this one in its block (nullptr at either end
  // or when detached). O(1).
  Operation* next_op() const;
  Operation* prev_op() const;
  // Removes this op from its block and destroys it. Results must be unused.
  void Erase();
  // Moves this op to just before `other` (in any block).
  void MoveBefore(Operation* other);
  // Deep copy; operands are remapped through `mapping` when present.
  std::unique_ptr<Operation> Clone(std::map<Value*, Value*>& mapping) const;
  // Pre-order walk of this op and every op nested in its regions.
  template <typename F> void Walk(F&& f);

 private:
  friend class Block;
  Operation() = default;
  std::string name_;
  OpCode code_ = OpCode::kUnknown;
  std::vector<Value*> operands_;
  std::vector<std::unique_ptr<Value>> results_;
  std::map<std::string, Attribute> attrs_;
  std::vector<std::unique_ptr<Region>> regions_;
  std::vector<Block*> successors_;
  std::string loc_;
  Block* block_ = nullptr;
  std::list<std::unique_ptr<Operation>>::iterator self_;
};

class Block {
 public:
  explicit Block(Region* parent = nullptr) : parent_(parent) {}
  ~Block();
  Region* parent() const { return parent_; }
  Operation* parent_op() const;

  Value* AddArgument(Type type);
  unsigned num_arguments() const { return static_cast<unsigned>(args_.size()); }
  Value* argument(unsigned i) const { return args_[i].get(); }
  std::vector<Value*> arguments() const;
  void EraseArgument(unsigned i);  // must be unused

  // Takes ownership; returns the inserted op.
  Operation* Append(std::unique_ptr<Operation> op);
  Operation* InsertBefore(Operation* before, std::unique_ptr<Operation> op);
  // Detaches `op` (owned by this block) and returns ownership.
  std::unique_ptr<Operation> Remove(Operation* op);

  std::list<std::unique_ptr<Operation>>& ops() { return ops_; }
  const std::list<std::unique_ptr<Operation>>& ops() const { return ops_; }
  bool empty() const { return ops_.empty(); }
  Operation* terminator() const { return ops_.empty() ? nullptr : ops_.back().get(); }

 private:
  friend class Region;
  friend class Operation;
  Region* parent_;
  std::vector<std::unique_ptr<Value>> args_;
  std::list<std::unique_ptr<Operation>> ops_;
};

class Region {
 public:
  explicit Region(Operation* parent = nullptr) : parent_(parent) {}
  // Drops every operand reference inside first, so blocks may use values of
  // other blocks in any order.
  ~Region();
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
  Operation* parent_op() const { return parent_; }
  Block* AddBlock();
  unsigned num_blocks() const { return static_cast<unsigned>(blocks_.size()); }
  Block* block(unsigned i = 0) const { return blocks_[i].get(); }
  std::vector<std::unique_ptr<Block>>& blocks() { return blocks_; }
  bool empty() const { return blocks_.empty(); }
  // Moves every block of `other` to the end of this region (ops, arguments
  // and uses unchanged).
  void TakeBody(Region& other);

 private:
  Operation* parent_;
  std::vector<std::unique_ptr<Block>> blocks_;
};

// A translation unit: a list of top-level ops, normally "func.func" ops
// (attrs: sym_name: string, function_type args/results implied by the entry
// block arguments and the "func.return" operand types; arg_attrs/res_attrs
// lists carry ABI names and ownership).
class Module {
 public:
  Module();
  Block* body() { return body_region_->block(0); }
  // Finds a func.func by sym_name; nullptr if absent.
  Operation* LookupFunction(const std::string& name);
  // The func.func ops with a body, in order (import declarations excluded:
  // every pass and the emitter walk these).
  std::vector<Operation*> functions();
  // The `func.func {import = true}` declarations (empty region; a function of
  // another module, named "module.function"), in order.
  std::vector<Operation*> import_declarations();

 private:
  std::unique_ptr<Region> body_region_;
};

template <typename F>
void Operation::Walk(F&& f) {
  f(this);
  for (auto& r : regions_)
    for (auto& b : r->blocks())
      for (auto it = b->ops().begin(); it != b->ops().end();) {
        Operation* op = (it++)->get();  // tolerate erasure of `op` by `f`
        op->Walk(f);
      }
}

// ---------------------------------------------------------------------------
// Builder: inserts new ops at an insertion point.
// ---------------------------------------------------------------------------
class Builder {
 public:
  Builder() = default;
  // Inserts at the end of `block`.
  static Builder AtEnd(Block* block) { Builder b; b.block_ = block; return b; }
  // Inserts before `op`.
  static Builder Before(Operation* op) { Builder b; b.block_ = op->parent_block(); b.before_ = op; return b; }
  Block* block() const { return block_; }

  Operation* Create(std::string name, const std::vector<Value*>& operands,
                    const std::vector<Type>& result_types,
                    std::map<std::string, Attribute> attrs = {}, unsigned num_regions = 0);
  Operation* Insert(std::unique_ptr<Operation> op);
  // Sets the location applied to every op created from now on.
  void set_loc(std::string loc) { loc_ = std::move(loc); }

 private:
  Block* block_ = nullptr;
  Operation* before_ = nullptr;
  std::string loc_;
};

}  // namespace kiln::ir

#endif  // KILN_COMPILER_IR_IR_H_
