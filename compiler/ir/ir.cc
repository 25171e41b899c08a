// Implementation of the IR core declared in ir.h.
#include "compiler/ir/ir.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace kiln::ir {

// ---------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------
const char* LifetimeName(Lifetime l) {
  switch (l) {
    case Lifetime::kUnknown: return "*";
    case Lifetime::kExternal: return "external";
    case Lifetime::kTransient: return "transient";
    case Lifetime::kConstant: return "constant";
    case Lifetime::kVariable: return "variable";
    case Lifetime::kStaging: return "staging";
  }
  return "*";
}

int64_t Type::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string Type::ToString() const {
  switch (kind) {
    case TypeKind::kTensor: {
      std::string s = "tensor<";
      for (int64_t d : shape) {
        s += d < 0 ? std::string("?") : std::to_string(d);  // '?': dynamic (invalid)
        s += 'x';
      }
      s += DTypeName(dtype);
      s += '>';
      return s;
    }
    case TypeKind::kIndex: return "index";
    case TypeKind::kI1: return "i1";
    case TypeKind::kResource: return std::string("!stream.resource<") + LifetimeName(lifetime) + ">";
    case TypeKind::kTimepoint: return "!stream.timepoint";
  }
  return "<invalid type>";
}

// ---------------------------------------------------------------------------
// Dense elements
// ---------------------------------------------------------------------------
float BF16ToFloat(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t FloatToBF16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest even
  return static_cast<uint16_t>(x >> 16);
}

namespace {
template <typename T>
T Load(const uint8_t* p, int64_t i) {
  T v;
  std::memcpy(&v, p + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}
}  // namespace

double DenseElements::GetDouble(int64_t i) const {
  const uint8_t* p = bytes();
  switch (type.dtype) {
    case DType::kF32: return Load<float>(p, i);
    case DType::kF16: return HalfToFloat(Load<uint16_t>(p, i));
    case DType::kF64: return Load<double>(p, i);
    case DType::kI64: return static_cast<double>(Load<int64_t>(p, i));
    case DType::kI32: return Load<int32_t>(p, i);
    case DType::kI16: return Load<int16_t>(p, i);
    case DType::kI8: return Load<int8_t>(p, i);
    case DType::kU8: return Load<uint8_t>(p, i);
    case DType::kBool: return Load<uint8_t>(p, i) ? 1.0 : 0.0;
    case DType::kBF16: return BF16ToFloat(Load<uint16_t>(p, i));
    case DType::kU16: return Load<uint16_t>(p, i);
    case DType::kU32: return Load<uint32_t>(p, i);
    case DType::kU64: return static_cast<double>(Load<uint64_t>(p, i));
    default: return 0;
  }
}

int64_t DenseElements::GetInt(int64_t i) const {
  const uint8_t* p = bytes();
  switch (type.dtype) {
    case DType::kF32: return static_cast<int64_t>(Load<float>(p, i));
    case DType::kF16: return static_cast<int64_t>(HalfToFloat(Load<uint16_t>(p, i)));
    case DType::kF64: return static_cast<int64_t>(Load<double>(p, i));
    case DType::kI64: return Load<int64_t>(p, i);
    case DType::kI32: return Load<int32_t>(p, i);
    case DType::kI16: return Load<int16_t>(p, i);
    case DType::kI8: return Load<int8_t>(p, i);
    case DType::kU8: return Load<uint8_t>(p, i);
    case DType::kBool: return Load<uint8_t>(p, i) ? 1 : 0;
    case DType::kBF16: return static_cast<int64_t>(BF16ToFloat(Load<uint16_t>(p, i)));
    case DType::kU16: return Load<uint16_t>(p, i);
    case DType::kU32: return Load<uint32_t>(p, i);
    case DType::kU64: return static_cast<int64_t>(Load<uint64_t>(p, i));  // wraps above 2^63
    default: return 0;
  }
}

DenseElements MakeDense(const Type& type, std::vector<uint8_t> bytes) {
  DenseElements d;
  d.type = type;
  d.data = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  return d;
}

DenseElements MakeDenseF32(std::vector<int64_t> shape, const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return MakeDense(Type::Tensor(DType::kF32, std::move(shape)), std::move(bytes));
}

DenseElements MakeDenseI64(std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(int64_t));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return MakeDense(Type::Tensor(DType::kI64, std::move(shape)), std::move(bytes));
}

// ---------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------
Block* Value::parent_block() const {
  return def_op_ ? def_op_->parent_block() : arg_owner_;
}

void Value::ReplaceAllUsesWith(Value* other) {
  if (other == this) return;
  std::vector<Use> uses = uses_;  // SetOperand edits uses_
  for (const Use& u : uses) u.user->SetOperand(u.operand_index, other);
}

// ---------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------
std::unique_ptr<Operation> Operation::Create(std::string name, const std::vector<Value*>& operands,
                                             const std::vector<Type>& result_types,
                                             std::map<std::string, Attribute> attrs,
                                             unsigned num_regions) {
  std::unique_ptr<Operation> op(new Operation());
  op->name_ = std::move(name);
  op->code_ = LookupOpCode(op->name_);
  op->attrs_ = std::move(attrs);
  for (Value* v : operands) op->AppendOperand(v);
  for (unsigned i = 0; i < result_types.size(); ++i) {
    auto v = std::make_unique<Value>();
    v->type_ = result_types[i];
    v->def_op_ = op.get();
    v->index_ = i;
    op->results_.push_back(std::move(v));
  }
  for (unsigned i = 0; i < num_regions; ++i) op->regions_.push_back(std::make_unique<Region>(op.get()));
  return op;
}

namespace {
// Removes the use (user, idx) from v's use list.
void EraseUse(std::vector<Use>& uses, Operation* user, unsigned idx) {
  for (auto it = uses.begin(); it != uses.end(); ++it) {
    if (it->user == user && it->operand_index == idx) {
      uses.erase(it);
      return;
    }
  }
  assert(false && "use not found");
}

// Drops the operand references of `op` and of every op nested in it.
void DropAllReferences(Operation* op) {
  while (op->num_operands() > 0) op->EraseOperand(op->num_operands() - 1);
  for (unsigned r = 0; r < op->num_regions(); ++r)
    for (auto& b : op->region(r)->blocks())
      for (auto& o : b->ops()) DropAllReferences(o.get());
}
}  // namespace

Operation::~Operation() {
  // Nested ops may use each other's values in any order: drop all uses first.
  DropAllReferences(this);
}

std::string Operation::dialect() const {
  size_t dot = name_.find('.');
  return dot == std::string::npos ? std::string() : name_.substr(0, dot);
}

void Operation::SetOperand(unsigned i, Value* v) {
  Value* old = operands_[i];
  if (old == v) return;
  if (old) EraseUse(old->uses_, this, i);
  operands_[i] = v;
  if (v) v->uses_.push_back(Use{this, i});
}

void Operation::AppendOperand(Value* v) {
  unsigned i = num_operands();
  operands_.push_back(v);
  if (v) v->uses_.push_back(Use{this, i});
}

void Operation::EraseResult(unsigned i) {
  assert(results_[i]->use_empty() && "EraseResult of a used result");
  results_.erase(results_.begin() + i);
  for (unsigned j = i; j < results_.size(); ++j) results_[j]->index_ = j;
}

void Operation::EraseOperand(unsigned i) {
  if (operands_[i]) EraseUse(operands_[i]->uses_, this, i);
  // Renumber the uses of the operands that shift down.
  for (unsigned j = i + 1; j < num_operands(); ++j) {
    Value* v = operands_[j];
    if (!v) continue;
    for (Use& u : v->uses_)
      if (u.user == this && u.operand_index == j) {
        u.operand_index = j - 1;
        break;
      }
  }
  operands_.erase(operands_.begin() + i);
}

void Operation::SetOperands(const std::vector<Value*>& vs) {
  while (num_operands() > 0) EraseOperand(num_operands() - 1);
  for (Value* v : vs) AppendOperand(v);
}

std::vector<Value*> Operation::results() const {
  std::vector<Value*> r;
  r.reserve(results_.size());
  for (auto& v : results_) r.push_back(v.get());
  return r;
}

const Attribute* Operation::attr(const std::string& n) const {
  auto it = attrs_.find(n);
  return it == attrs_.end() ? nullptr : &it->second;
}

int64_t Operation::int_attr(const std::string& n, int64_t def) const {
  const Attribute* a = attr(n);
  if (!a) return def;
  if (auto* v = std::get_if<int64_t>(&a->value)) return *v;
  if (auto* b = std::get_if<bool>(&a->value)) return *b ? 1 : 0;
  return def;
}

double Operation::float_attr(const std::string& n, double def) const {
  const Attribute* a = attr(n);
  if (!a) return def;
  if (auto* v = std::get_if<double>(&a->value)) return *v;
  if (auto* v = std::get_if<int64_t>(&a->value)) return static_cast<double>(*v);
  return def;
}

bool Operation::bool_attr(const std::string& n, bool def) const {
  const Attribute* a = attr(n);
  if (!a) return def;
  if (auto* v = std::get_if<bool>(&a->value)) return *v;
  if (auto* v = std::get_if<int64_t>(&a->value)) return *v != 0;
  return def;
}

std::string Operation::str_attr(const std::string& n, const std::string& def) const {
  const Attribute* a = attr(n);
  if (!a) return def;
  if (auto* v = std::get_if<std::string>(&a->value)) return *v;
  if (auto* v = std::get_if<SymbolRef>(&a->value)) return v->name;
  return def;
}

std::vector<int64_t> Operation::ints_attr(const std::string& n) const {
  const Attribute* a = attr(n);
  if (!a) return {};
  if (auto* v = std::get_if<std::vector<int64_t>>(&a->value)) return *v;
  if (auto* l = std::get_if<std::shared_ptr<AttrList>>(&a->value)) {
    std::vector<int64_t> r;
    if (*l)
      for (const Attribute& e : **l)
        if (auto* i = std::get_if<int64_t>(&e.value)) r.push_back(*i);
    return r;
  }
  return {};
}

std::vector<double> Operation::floats_attr(const std::string& n) const {
  const Attribute* a = attr(n);
  if (!a) return {};
  if (auto* v = std::get_if<std::vector<double>>(&a->value)) return *v;
  if (auto* v = std::get_if<std::vector<int64_t>>(&a->value))
    return std::vector<double>(v->begin(), v->end());
  return {};
}

const DenseElements* Operation::dense_attr(const std::string& n) const {
  const Attribute* a = attr(n);
  return a ? std::get_if<DenseElements>(&a->value) : nullptr;
}

const AttrList* Operation::list_attr(const std::string& n) const {
  static const AttrList kEmpty;
  const Attribute* a = attr(n);
  if (!a) return nullptr;
  if (auto* l = std::get_if<std::shared_ptr<AttrList>>(&a->value)) return l->get() ? l->get() : &kEmpty;
  if (auto* v = std::get_if<std::vector<int64_t>>(&a->value))
    if (v->empty()) return &kEmpty;
  return nullptr;
}

std::vector<std::string> Operation::strs_attr(const std::string& n) const {
  std::vector<std::string> r;
  if (const AttrList* l = list_attr(n))
    for (const Attribute& e : *l)
      if (auto* s = std::get_if<std::string>(&e.value)) r.push_back(*s);
  return r;
}

Operation* Operation::parent_op() const { return block_ ? block_->parent_op() : nullptr; }

void Operation::Erase() {
  assert(block_ && "Erase() of a detached op");
#ifndef NDEBUG
  for (auto& r : results_) assert(r->use_empty() && "Erase() of an op whose results are used");
#endif
  std::unique_ptr<Operation> self = block_->Remove(this);
  self.reset();
}

void Operation::MoveBefore(Operation* other) {
  if (other == this) return;
  std::unique_ptr<Operation> self = block_->Remove(this);
  other->parent_block()->InsertBefore(other, std::move(self));
}

namespace {
std::unique_ptr<Operation> CloneImpl(const Operation& src, std::map<Value*, Value*>& mapping,
                                     std::map<Block*, Block*>& block_map) {
  std::vector<Value*> operands;
  for (Value* v : src.operands()) {
    auto it = mapping.find(v);
    operands.push_back(it == mapping.end() ? v : it->second);
  }
  std::vector<Type> types;
  for (Value* r : src.results()) types.push_back(r->type());
  auto op = Operation::Create(src.name(), operands, types, src.attrs(), src.num_regions());
  op->set_loc(src.loc());
  for (unsigned i = 0; i < src.num_results(); ++i) {
    op->result(i)->set_name_hint(src.result(i)->name_hint());
    mapping[src.result(i)] = op->result(i);
  }
  for (Block* s : src.successors()) op->AddSuccessor(s);
  for (unsigned r = 0; r < src.num_regions(); ++r) {
    Region* from = src.region(r);
    Region* to = op->region(r);
    // Create every block and argument first: ops may branch forward.
    for (auto& b : from->blocks()) {
      Block* nb = to->AddBlock();
      block_map[b.get()] = nb;
      for (Value* a : b->arguments()) {
        Value* na = nb->AddArgument(a->type());
        na->set_name_hint(a->name_hint());
        mapping[a] = na;
      }
    }
    for (auto& b : from->blocks()) {
      Block* nb = block_map[b.get()];
      for (auto& o : b->ops()) nb->Append(CloneImpl(*o, mapping, block_map));
    }
  }
  return op;
}

// Fixes operands and successors that referred to values / blocks cloned
// after their use (forward references across blocks).
void RemapLate(Operation* op, const std::map<Value*, Value*>& mapping,
               const std::map<Block*, Block*>& block_map) {
  for (unsigned i = 0; i < op->num_operands(); ++i) {
    auto it = mapping.find(op->operand(i));
    if (it != mapping.end()) op->SetOperand(i, it->second);
  }
  for (unsigned i = 0; i < op->num_successors(); ++i) {
    auto it = block_map.find(op->successor(i));
    if (it != block_map.end()) op->SetSuccessor(i, it->second);
  }
  for (unsigned r = 0; r < op->num_regions(); ++r)
    for (auto& b : op->region(r)->blocks())
      for (auto& o : b->ops()) RemapLate(o.get(), mapping, block_map);
}
}  // namespace

std::unique_ptr<Operation> Operation::Clone(std::map<Value*, Value*>& mapping) const {
  std::map<Block*, Block*> block_map;
  auto op = CloneImpl(*this, mapping, block_map);
  // Only nested ops can hold late references; the top-level op's operands
  // come from outside.
  for (unsigned r = 0; r < op->num_regions(); ++r)
    for (auto& b : op->region(r)->blocks())
      for (auto& o : b->ops()) RemapLate(o.get(), mapping, block_map);
  return op;
}

// ---------------------------------------------------------------------------
// Blocks and regions
// ---------------------------------------------------------------------------
Block::~Block() {
  for (auto& op : ops_) DropAllReferences(op.get());
  ops_.clear();
}

Operation* Block::parent_op() const { return parent_ ? parent_->parent_op() : nullptr; }

Value* Block::AddArgument(Type type) {
  auto v = std::make_unique<Value>();
  v->type_ = std::move(type);
  v->arg_owner_ = this;
  v->index_ = num_arguments();
  args_.push_back(std::move(v));
  return args_.back().get();
}

std::vector<Value*> Block::arguments() const {
  std::vector<Value*> r;
  r.reserve(args_.size());
  for (auto& a : args_) r.push_back(a.get());
  return r;
}

void Block::EraseArgument(unsigned i) {
  assert(args_[i]->use_empty() && "EraseArgument of a used argument");
  args_.erase(args_.begin() + i);
  for (unsigned j = i; j < args_.size(); ++j) args_[j]->index_ = j;
}

Operation* Block::Append(std::unique_ptr<Operation> op) {
  Operation* raw = op.get();
  raw->block_ = this;
  ops_.push_back(std::move(op));
  raw->self_ = std::prev(ops_.end());
  return raw;
}

Operation* Operation::next_op() const {
  if (!block_) return nullptr;
  auto it = std::next(self_);
  return it == block_->ops_.end() ? nullptr : it->get();
}

Operation* Operation::prev_op() const {
  if (!block_ || self_ == block_->ops_.begin()) return nullptr;
  return std::prev(self_)->get();
}

Operation* Block::InsertBefore(Operation* before, std::unique_ptr<Operation> op) {
  if (!before) return Append(std::move(op));
  assert(before->block_ == this);
  Operation* raw = op.get();
  raw->block_ = this;
  raw->self_ = ops_.insert(before->self_, std::move(op));
  return raw;
}

std::unique_ptr<Operation> Block::Remove(Operation* op) {
  assert(op->block_ == this);
  std::unique_ptr<Operation> owned = std::move(*op->self_);
  ops_.erase(op->self_);
  op->block_ = nullptr;
  op->self_ = {};
  return owned;
}

Region::~Region() {
  for (auto& b : blocks_)
    for (auto& op : b->ops()) DropAllReferences(op.get());
}

void Region::TakeBody(Region& other) {
  for (auto& b : other.blocks_) {
    b->parent_ = this;
    blocks_.push_back(std::move(b));
  }
  other.blocks_.clear();
}

Block* Region::AddBlock() {
  blocks_.push_back(std::make_unique<Block>(this));
  return blocks_.back().get();
}

// ---------------------------------------------------------------------------
// Module
// ---------------------------------------------------------------------------
Module::Module() : body_region_(std::make_unique<Region>(nullptr)) { body_region_->AddBlock(); }

Operation* Module::LookupFunction(const std::string& name) {
  for (auto& op : body()->ops())
    if (op->is(OpCode::kFuncFunc) && op->str_attr("sym_name") == name) return op.get();
  return nullptr;
}

std::vector<Operation*> Module::functions() {
  std::vector<Operation*> r;
  for (auto& op : body()->ops())
    if (op->is(OpCode::kFuncFunc) && !op->bool_attr("import")) r.push_back(op.get());
  return r;
}

std::vector<Operation*> Module::import_declarations() {
  std::vector<Operation*> r;
  for (auto& op : body()->ops())
    if (op->is(OpCode::kFuncFunc) && op->bool_attr("import")) r.push_back(op.get());
  return r;
}

// ---------------------------------------------------------------------------
// Builder
// ---------------------------------------------------------------------------
Operation* Builder::Create(std::string name, const std::vector<Value*>& operands,
                           const std::vector<Type>& result_types,
                           std::map<std::string, Attribute> attrs, unsigned num_regions) {
  auto op = Operation::Create(std::move(name), operands, result_types, std::move(attrs), num_regions);
  return Insert(std::move(op));
}

Operation* Builder::Insert(std::unique_ptr<Operation> op) {
  assert(block_ && "Builder has no insertion point");
  if (!loc_.empty() && op->loc().empty()) op->set_loc(loc_);
  if (before_) return block_->InsertBefore(before_, std::move(op));
  return block_->Append(std::move(op));
}

}  // namespace kiln::ir
