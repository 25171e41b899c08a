#include "vm/testing/ownership_modules.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "vm/isa.h"
#include "vm/testing/module_builder.h"

namespace kiln::vm::testing {
namespace {

using R = Reg;

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Memoized imports of one module.
class Imports {
 public:
  explicit Imports(ModuleBuilder& b) : b_(b) {}
  uint16_t Hal(const std::string& name) {
    auto it = ords_.find(name);
    if (it != ords_.end()) return it->second;
    uint16_t ord = static_cast<uint16_t>(b_.AddHalImport(name));
    ords_[name] = ord;
    return ord;
  }
  uint16_t Other(const std::string& name, const std::string& signature) {
    uint16_t ord = static_cast<uint16_t>(b_.AddImport(name, signature));
    ords_[name] = ord;
    return ord;
  }

 private:
  ModuleBuilder& b_;
  std::map<std::string, uint16_t> ords_;
};

// A storage location: buffer (or view) register + i32 offset register.
struct Loc {
  uint16_t buf;
  uint16_t off;
};

// One function under construction, with a bump register allocator.
class Fn {
 public:
  // Executable ordinals of the module (vadd, scale), -1 when absent.
  Fn(Imports& imports, uint16_t arg_count, int n, int vadd_exe = 0, int scale_exe = 1)
      : imp_(imports), nref_(arg_count), n_(n), vadd_exe_(vadd_exe), scale_exe_(scale_exe) {}

  BytecodeEncoder e;
  uint16_t Ref() { return nref_++; }
  uint16_t I32() { return ni32_++; }
  uint16_t C(int32_t v) {
    auto it = consts_.find(v);
    if (it != consts_.end()) return it->second;
    uint16_t r = I32();
    e.ConstI32(r, v);
    consts_[v] = r;
    return r;
  }
  int32_t bytes() const { return n_ * 4; }
  void Call(const char* hal, std::vector<Reg> args, std::vector<Reg> results) {
    e.CallImport(imp_.Hal(hal), args, results);
  }
  uint16_t Alloc(int32_t size, int kind) {
    uint16_t r = Ref();
    Call("hal.allocator.allocate", {R::I32(C(size)), R::I32(C(kind))}, {R::Ref(r)});
    return r;
  }
  uint16_t Cached(int slot, int32_t size, int kind) {
    uint16_t r = Ref();
    Call("hal.allocator.allocate_cached", {R::I32(C(slot)), R::I32(C(size)), R::I32(C(kind))},
         {R::Ref(r)});
    return r;
  }
  Loc Take(uint16_t view, int32_t size, int kind) {
    Loc l{Ref(), I32()};
    Call("hal.buffer_view.take_or_allocate", {R::Ref(view), R::I32(C(size)), R::I32(C(kind))},
         {R::Ref(l.buf), R::I32(l.off)});
    return l;
  }
  Loc Clone(uint16_t cmd, uint16_t view) {
    Loc l{Ref(), I32()};
    Call("hal.buffer_view.take_or_clone", {R::Ref(cmd), R::Ref(view)},
         {R::Ref(l.buf), R::I32(l.off)});
    return l;
  }
  // The view itself as a location (a view stands for its buffer, offsets
  // relative to its first byte).
  Loc Of(uint16_t view) { return Loc{view, C(0)}; }
  Loc At(uint16_t buf, int32_t offset = 0) { return Loc{buf, C(offset)}; }
  uint16_t Cmd() {
    uint16_t r = Ref();
    Call("hal.command_buffer.create", {}, {R::Ref(r)});
    return r;
  }
  uint16_t Exe(int index) {
    auto it = exes_.find(index);
    if (it != exes_.end()) return it->second;
    uint16_t r = Ref();
    Call("hal.executable.lookup", {R::I32(C(index))}, {R::Ref(r)});
    exes_[index] = r;
    return r;
  }
  void Fill(uint16_t cmd, Loc dst, int32_t size, float value) {
    Call("hal.command_buffer.fill",
         {R::Ref(cmd), R::Ref(dst.buf), R::I32(dst.off), R::I32(C(size)),
          R::I32(C(static_cast<int32_t>(FloatBits(value))))},
         {});
  }
  std::vector<Reg> Binding(Loc l) { return {R::Ref(l.buf), R::I32(l.off), R::I32(C(bytes()))}; }
  void Vadd(uint16_t cmd, Loc a, Loc b, Loc c) {
    uint16_t exe = Exe(vadd_exe_);
    Call("hal.command_buffer.push_constants", {R::Ref(cmd), R::I32(C(n_))}, {});
    std::vector<Reg> args = {R::Ref(cmd), R::Ref(exe),      R::I32(C(0)),
                             R::I32(C((n_ + 63) / 64)), R::I32(C(1)), R::I32(C(1))};
    for (Loc l : {a, b, c}) {
      auto bnd = Binding(l);
      args.insert(args.end(), bnd.begin(), bnd.end());
    }
    Call("hal.command_buffer.dispatch", args, {});
  }
  void Scale(uint16_t cmd, Loc src, Loc dst, float s) {
    uint16_t exe = Exe(scale_exe_);
    Call("hal.command_buffer.push_constants",
         {R::Ref(cmd), R::I32(C(static_cast<int32_t>(FloatBits(s)))), R::I32(C(n_))}, {});
    std::vector<Reg> args = {R::Ref(cmd), R::Ref(exe),      R::I32(C(0)),
                             R::I32(C((n_ + 63) / 64)), R::I32(C(1)), R::I32(C(1))};
    for (Loc l : {src, dst}) {
      auto bnd = Binding(l);
      args.insert(args.end(), bnd.begin(), bnd.end());
    }
    Call("hal.command_buffer.dispatch", args, {});
  }
  void Barrier(uint16_t cmd, std::vector<Loc> ranges) {
    std::vector<Reg> args = {R::Ref(cmd)};
    for (Loc l : ranges) {
      auto bnd = Binding(l);
      args.insert(args.end(), bnd.begin(), bnd.end());
    }
    Call("hal.command_buffer.barrier", args, {});
  }
  void Exec(uint16_t cmd) { Call("hal.command_buffer.execute_and_wait", {R::Ref(cmd)}, {}); }
  // f32[count] view of `l`.
  uint16_t View(Loc l, int count = -1) {
    uint16_t r = Ref();
    Call("hal.buffer_view.create",
         {R::Ref(l.buf), R::I32(l.off), R::I32(C(1)), R::I32(C(1)),
          R::I32(C(count < 0 ? n_ : count))},
         {R::Ref(r)});
    return r;
  }
  int Add(ModuleBuilder& b, const std::string& name, std::vector<TensorDesc> args,
          std::vector<TensorDesc> results, bool exported = true) {
    return b.AddFunction(name, std::move(args), std::move(results),
                         std::max<uint32_t>(ni32_, 1), std::max<uint32_t>(nref_, 1), e, exported);
  }

 private:
  Imports& imp_;
  uint16_t nref_;
  uint16_t ni32_ = 0;
  int n_;
  int vadd_exe_, scale_exe_;
  std::map<int32_t, uint16_t> consts_;
  std::map<int, uint16_t> exes_;
};

TensorDesc T(const char* name, int n, uint8_t ownership = 0) {
  return TensorDesc{name, DType::kF32, {n}, ownership, -1};
}
constexpr uint8_t kConsume = 1;

EntryPointDesc VaddEntry() {
  EntryPointDesc ep;
  ep.name = "main";
  ep.debug_name = "vadd";
  ep.bindings = {{0, 0, true}, {0, 1, true}, {0, 2, false}};
  ep.push_constant_bytes = 4;
  ep.workgroup_size = {64, 1, 1};
  return ep;
}
EntryPointDesc ScaleEntry() {
  EntryPointDesc ep;
  ep.name = "main";
  ep.debug_name = "scale";
  ep.bindings = {{0, 0, true}, {0, 1, false}};
  ep.push_constant_bytes = 8;
  ep.workgroup_size = {64, 1, 1};
  return ep;
}
void AddShaders(ModuleBuilder& b, const TestShaders& s) {
  b.AddExecutable(std::vector<uint32_t>(s.vadd, s.vadd + s.vadd_words), {VaddEntry()}, {"vadd"});
  b.AddExecutable(std::vector<uint32_t>(s.scale, s.scale + s.scale_words), {ScaleEntry()},
                  {"scale"});
}

std::string TypedSig(int args, int results, int n) {
  std::string sig(static_cast<size_t>(args), 'r');
  sig += "_" + std::string(static_cast<size_t>(results), 'r') + ":";
  std::string t = std::to_string(n) + "xf32";
  for (int i = 0; i < args; ++i) sig += (i ? "," : "") + t;
  sig += "->";
  for (int i = 0; i < results; ++i) sig += (i ? "," : "") + t;
  return sig;
}

}  // namespace

std::vector<uint8_t> BuildOwnershipModule(const TestShaders& shaders, int n) {
  ModuleBuilder b("own");
  Imports imp(b);
  AddShaders(b, shaders);
  const int32_t bytes = n * 4;
  {
    Fn f(imp, 0, n);
    uint16_t buf = f.Alloc(bytes, 1);
    uint16_t cmd = f.Cmd();
    f.Fill(cmd, f.At(buf), bytes, 1.0f);
    f.Exec(cmd);
    uint16_t v = f.View(f.At(buf));
    f.e.Ret({R::Ref(v), R::Ref(v)});
    f.Add(b, "same_twice", {}, {T("a", n), T("b", n)});
  }
  {
    Fn f(imp, 0, n);
    uint16_t buf = f.Alloc(2 * bytes, 1);
    uint16_t cmd = f.Cmd();
    f.Fill(cmd, f.At(buf), bytes, 1.0f);
    f.Fill(cmd, f.At(buf, bytes), bytes, 2.0f);
    f.Exec(cmd);
    uint16_t v0 = f.View(f.At(buf));
    uint16_t v1 = f.View(f.At(buf, bytes));
    f.e.Ret({R::Ref(v0), R::Ref(v1)});
    f.Add(b, "two_subviews", {}, {T("a", n), T("b", n)});
  }
  {
    Fn f(imp, 0, n);
    uint16_t buf = f.Alloc(2 * bytes, 1);
    uint16_t cmd = f.Cmd();
    f.Fill(cmd, f.At(buf), bytes, 1.0f);
    f.Fill(cmd, f.At(buf, bytes), bytes, 2.0f);
    f.Exec(cmd);
    uint16_t s0 = f.Ref(), s1 = f.Ref();
    f.Call("hal.buffer.subspan", {R::Ref(buf), R::I32(f.C(0)), R::I32(f.C(bytes))}, {R::Ref(s0)});
    f.Call("hal.buffer.subspan", {R::Ref(buf), R::I32(f.C(bytes)), R::I32(f.C(bytes))},
           {R::Ref(s1)});
    f.e.ConstRefZero(buf);  // only the subspans hold the allocation now
    uint16_t v0 = f.View(f.At(s0));
    uint16_t v1 = f.View(f.At(s1));
    f.e.Ret({R::Ref(v0), R::Ref(v1)});
    f.Add(b, "subspans", {}, {T("a", n), T("b", n)});
  }
  {
    Fn f(imp, 0, n);
    uint16_t b0 = f.Alloc(bytes, 1), b1 = f.Alloc(bytes, 1);
    uint16_t cmd = f.Cmd();
    f.Fill(cmd, f.At(b0), bytes, 1.0f);
    f.Fill(cmd, f.At(b1), bytes, 2.0f);
    f.Exec(cmd);
    uint16_t v0 = f.View(f.At(b0)), v1 = f.View(f.At(b1));
    f.e.Ret({R::Ref(v0), R::Ref(v1)});
    f.Add(b, "distinct", {}, {T("a", n), T("b", n)});
  }
  {
    Fn f(imp, 1, n);
    f.e.Ret({R::Ref(0), R::Ref(0)});
    f.Add(b, "passthrough", {T("x", n)}, {T("a", n), T("b", n)});
  }
  {
    Fn f(imp, 1, n);
    Loc y = f.Take(0, bytes, 1);
    uint16_t cmd = f.Cmd();
    f.Fill(cmd, y, bytes, 3.0f);
    f.Exec(cmd);
    uint16_t v = f.View(y);
    f.e.Ret({R::Ref(v)});
    f.Add(b, "steal", {T("x", n, kConsume)}, {T("y", n)});
  }
  {
    Fn f(imp, 1, n);
    uint16_t cmd = f.Cmd();
    Loc y = f.Clone(cmd, 0);
    f.Barrier(cmd, {y});
    f.Fill(cmd, y, 16, 7.0f);
    f.Exec(cmd);
    uint16_t v = f.View(y);
    f.e.Ret({R::Ref(v)});
    f.Add(b, "patch", {T("x", n, kConsume)}, {T("y", n)});
  }
  {
    Fn f(imp, 1, n);
    Label use = f.e.NewLabel(), alloc = f.e.NewLabel(), join = f.e.NewLabel();
    uint16_t os = f.Ref();
    f.Call("hal.buffer_view.output_storage", {R::I32(f.C(0))}, {R::Ref(os)});
    uint16_t has = f.I32();
    f.e.CmpNzRef(has, os);
    Loc y{f.Ref(), f.I32()};
    uint16_t zero = f.C(0);
    // Constants used on either path are materialized before the branch.
    for (int32_t v : {1, bytes, n, (n + 63) / 64}) f.C(v);
    f.e.CondBr(has, use, alloc);
    f.e.Bind(use);
    f.Call("hal.buffer_view.buffer", {R::Ref(os)}, {R::Ref(y.buf)});
    f.Call("hal.buffer_view.offset", {R::Ref(os)}, {R::I32(y.off)});
    f.e.Br(join);
    f.e.Bind(alloc);
    uint16_t cached = f.Cached(0, bytes, 1);
    f.e.MovRef(y.buf, cached);
    f.e.MovI32(y.off, zero);
    f.e.Br(join);
    f.e.Bind(join);
    uint16_t cmd = f.Cmd();
    f.Vadd(cmd, f.Of(0), f.Of(0), y);
    f.Exec(cmd);
    uint16_t v = f.View(y);
    f.e.Ret({R::Ref(v)});
    f.Add(b, "write_output", {T("x", n)}, {T("y", n)});
  }
  {
    Fn f(imp, 1, n);
    uint16_t buf = f.Alloc(bytes, 1);
    uint16_t cmd = f.Cmd();
    f.Vadd(cmd, f.Of(0), f.Of(0), f.At(buf));
    f.Exec(cmd);
    uint16_t v = f.View(f.At(buf));
    f.e.Ret({R::Ref(v)});
    f.Add(b, "ignore_output", {T("x", n)}, {T("y", n)});
  }
  {
    Fn f(imp, 1, n);
    uint16_t buf = f.Cached(0, bytes, 1);
    uint16_t cmd = f.Cmd();
    f.Vadd(cmd, f.Of(0), f.Of(0), f.At(buf));
    f.Exec(cmd);
    uint16_t v = f.View(f.At(buf));
    f.e.Ret({R::Ref(v)});
    f.Add(b, "cached", {T("x", n)}, {T("y", n)});
  }
  return b.Finish();
}

std::vector<uint8_t> BuildStreamModule(const TestShaders& shaders, int n) {
  ModuleBuilder b("stream");
  Imports imp(b);
  AddShaders(b, shaders);
  const int32_t bytes = n * 4;
  Fn f(imp, 2, n);
  Loc next = f.Take(1, bytes, 1);              // the state's own storage when owned
  uint16_t arena = f.Cached(0, bytes, 0);      // transients
  uint16_t ybuf = f.Cached(1, bytes, 1);       // result y
  uint16_t cmd = f.Cmd();
  f.Vadd(cmd, f.Of(0), f.Of(1), f.At(arena));  // tmp = x + state
  f.Barrier(cmd, {f.At(arena)});
  f.Vadd(cmd, f.At(arena), f.Of(0), f.At(ybuf));  // y = tmp + x
  f.Barrier(cmd, {f.Of(1)});                      // state read above, written below
  f.Scale(cmd, f.At(arena), next, 0.5f);          // next = tmp / 2
  f.Exec(cmd);
  uint16_t yv = f.View(f.At(ybuf));
  uint16_t nv = f.View(next);
  f.e.Ret({R::Ref(yv), R::Ref(nv)});
  f.Add(b, "step", {T("x", n), T("state", n, kConsume)}, {T("y", n), T("next", n)});
  return b.Finish();
}

std::vector<std::vector<uint8_t>> BuildPipelineModules(const TestShaders& shaders, int n) {
  const int32_t bytes = n * 4;
  std::vector<std::vector<uint8_t>> out;
  {
    ModuleBuilder b("mel");
    Imports imp(b);
    AddShaders(b, shaders);
    Fn f(imp, 1, n);
    uint16_t m = f.Cached(0, bytes, 1);
    uint16_t cmd = f.Cmd();
    f.Scale(cmd, f.Of(0), f.At(m), 2.0f);
    f.Exec(cmd);
    uint16_t v = f.View(f.At(m));
    f.e.Ret({R::Ref(v)});
    f.Add(b, "main", {T("x", n)}, {T("m", n)});
    out.push_back(b.Finish());
  }
  {
    ModuleBuilder b("emb");
    Imports imp(b);
    AddShaders(b, shaders);
    std::vector<uint8_t> bias(static_cast<size_t>(bytes));
    for (int i = 0; i < n; ++i) {
      float v = static_cast<float>(i) * 0.25f;
      std::memcpy(bias.data() + 4 * i, &v, 4);
    }
    uint16_t seg = static_cast<uint16_t>(b.AddRodata("bias", bias));
    uint16_t global = static_cast<uint16_t>(b.AddGlobal("bias"));
    {
      Fn f(imp, 0, n);
      uint16_t span = f.Ref(), buf = f.Ref();
      f.e.Rodata(span, seg);
      f.Call("hal.allocator.allocate_initialized", {R::Ref(span)}, {R::Ref(buf)});
      f.e.GlobalStoreRef(buf, global);
      f.e.Ret({});
      b.SetInitializer(f.Add(b, "__init", {}, {}, /*exported=*/false));
    }
    Fn f(imp, 1, n);
    uint16_t bias_reg = f.Ref();
    f.e.GlobalLoadRef(bias_reg, global);
    Loc e = f.Take(0, bytes, 1);  // in place over m when owned
    uint16_t cmd = f.Cmd();
    f.Vadd(cmd, f.Of(0), f.At(bias_reg), e);
    f.Exec(cmd);
    uint16_t v = f.View(e);
    f.e.Ret({R::Ref(v)});
    f.Add(b, "main", {T("m", n, kConsume)}, {T("e", n)});
    out.push_back(b.Finish());
  }
  {
    ModuleBuilder b("head");
    Imports imp(b);
    AddShaders(b, shaders);
    Fn f(imp, 2, n);
    uint16_t h = f.Cached(0, bytes, 1);
    Loc s2 = f.Take(1, bytes, 1);
    uint16_t cmd = f.Cmd();
    f.Vadd(cmd, f.Of(0), f.Of(1), f.At(h));  // h = e + s
    f.Barrier(cmd, {f.Of(1)});               // s read above, maybe written below
    f.Scale(cmd, f.Of(1), s2, 0.5f);         // s2 = s / 2
    f.Exec(cmd);
    uint16_t hv = f.View(f.At(h)), sv = f.View(s2);
    f.e.Ret({R::Ref(hv), R::Ref(sv)});
    f.Add(b, "main", {T("e", n), T("s", n, kConsume)}, {T("h", n), T("s2", n)});
    out.push_back(b.Finish());
  }
  {
    ModuleBuilder b("driver");
    b.SetFeatures(0x2);  // multi_module (informative)
    Imports imp(b);
    uint16_t mel = imp.Other("mel.main", TypedSig(1, 1, n));
    uint16_t emb = imp.Other("emb.main", TypedSig(1, 1, n));
    uint16_t head = imp.Other("head.main", TypedSig(2, 2, n));
    BytecodeEncoder e;
    // r0 = x, r1 = s; r2 = m, r3 = e, r4 = h, r5 = s2.
    e.CallImport(mel, {R::Ref(0)}, {R::Ref(2)});
    e.CallImport(emb, {R::Ref(2)}, {R::Ref(3)});               // m moved
    e.CallImport(head, {R::Ref(3), R::Ref(1)}, {R::Ref(4), R::Ref(5)});  // s moved
    e.Ret({R::Ref(4), R::Ref(3), R::Ref(5)});
    b.AddFunction("main", {T("x", n), T("s", n, kConsume)}, {T("h", n), T("e", n), T("s2", n)},
                  1, 6, e);
    out.push_back(b.Finish());
  }
  return out;
}

PipelineExpected PipelineReference(float x, float s, int i) {
  volatile float m = x * 2.0f;
  volatile float e = m + static_cast<float>(i) * 0.25f;
  volatile float h = e + s;
  volatile float s2 = s * 0.5f;
  return PipelineExpected{h, e, s2};
}

}  // namespace kiln::vm::testing
