#include "tests/e2e/e2e_util.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "compiler/ir/parser.h"
#include "compiler/tools/compile_driver.h"
#include "hal/driver.h"
#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h
#include "runtime/kiln_status_test_util.h"
#include "tools/npy.h"

namespace kiln::e2e {

int64_t HostTensor::element_count() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

double HostTensor::At(int64_t i) const {
  const uint8_t* p = data.data();
  switch (dtype) {
    case KILN_DTYPE_F32: { float v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case KILN_DTYPE_F64: { double v; std::memcpy(&v, p + 8 * i, 8); return v; }
    case KILN_DTYPE_I64: { int64_t v; std::memcpy(&v, p + 8 * i, 8); return static_cast<double>(v); }
    case KILN_DTYPE_I32: { int32_t v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case KILN_DTYPE_I16: { int16_t v; std::memcpy(&v, p + 2 * i, 2); return v; }
    case KILN_DTYPE_I8: return static_cast<int8_t>(p[i]);
    case KILN_DTYPE_U8: case KILN_DTYPE_BOOL: return p[i];
    case KILN_DTYPE_U16: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); return v; }
    case KILN_DTYPE_U32: { uint32_t v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case KILN_DTYPE_U64: { uint64_t v; std::memcpy(&v, p + 8 * i, 8); return static_cast<double>(v); }
    case KILN_DTYPE_F16: {
      // IEEE binary16: sign, 5-bit exponent (bias 15), 10-bit mantissa.
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      int e = (h >> 10) & 0x1f, m = h & 0x3ff;
      double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(1024 + m, e - 25);
      return (h & 0x8000) ? -v : v;
    }
    case KILN_DTYPE_BF16: {
      uint32_t x = 0;
      std::memcpy(reinterpret_cast<uint8_t*>(&x) + 2, p + 2 * i, 2);  // the top half of an f32
      float f;
      std::memcpy(&f, &x, 4);
      return f;
    }
    default: return NAN;
  }
}

bool ReadTensorProto(const std::string& path, HostTensor* out, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) { *error = "cannot open " + path; return false; }
  std::stringstream ss;
  ss << in.rdbuf();
  return DecodeTensorProto(ss.str(), path, out, error);
}

bool DecodeTensorProto(const std::string& bytes, const std::string& path, HostTensor* out,
                       std::string* error) {
  onnx::TensorProto t;
  if (!t.ParseFromString(bytes)) { *error = "bad TensorProto " + path; return false; }
  out->shape.assign(t.dims().begin(), t.dims().end());
  int64_t n = 1;
  for (int64_t d : out->shape) {
    if (d < 0 || d > (1 << 26) || n * d > (1 << 26)) { *error = "not a dense tensor (sequence/optional?) " + path; return false; }
    n *= d;
  }
  auto fill = [&](kiln_dtype_t dt, size_t size, auto typed, int typed_count) {
    out->dtype = dt;
    if (!t.raw_data().empty()) {
      out->data.assign(t.raw_data().begin(), t.raw_data().end());
    } else {
      out->data.resize(static_cast<size_t>(n) * size);
      for (int i = 0; i < typed_count && i < n; ++i) typed(i, out->data.data() + i * size);
    }
    return out->data.size() == static_cast<size_t>(n) * size;
  };
  bool ok = false;
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      ok = fill(KILN_DTYPE_F32, 4, [&](int i, uint8_t* d) { float v = t.float_data(i); std::memcpy(d, &v, 4); },
                t.float_data_size());
      break;
    case onnx::TensorProto::DOUBLE:
      ok = fill(KILN_DTYPE_F64, 8, [&](int i, uint8_t* d) { double v = t.double_data(i); std::memcpy(d, &v, 8); },
                t.double_data_size());
      break;
    case onnx::TensorProto::INT64:
      ok = fill(KILN_DTYPE_I64, 8, [&](int i, uint8_t* d) { int64_t v = t.int64_data(i); std::memcpy(d, &v, 8); },
                t.int64_data_size());
      break;
    case onnx::TensorProto::INT32:
      ok = fill(KILN_DTYPE_I32, 4, [&](int i, uint8_t* d) { int32_t v = t.int32_data(i); std::memcpy(d, &v, 4); },
                t.int32_data_size());
      break;
    case onnx::TensorProto::BOOL:
      ok = fill(KILN_DTYPE_BOOL, 1, [&](int i, uint8_t* d) { *d = static_cast<uint8_t>(t.int32_data(i) != 0); },
                t.int32_data_size());
      break;
    case onnx::TensorProto::UINT8:
      ok = fill(KILN_DTYPE_U8, 1, [&](int i, uint8_t* d) { *d = static_cast<uint8_t>(t.int32_data(i)); },
                t.int32_data_size());
      break;
    case onnx::TensorProto::INT8:
      ok = fill(KILN_DTYPE_I8, 1, [&](int i, uint8_t* d) { *d = static_cast<uint8_t>(t.int32_data(i)); },
                t.int32_data_size());
      break;
    case onnx::TensorProto::FLOAT16: case onnx::TensorProto::BFLOAT16:
    case onnx::TensorProto::INT16: case onnx::TensorProto::UINT16: {
      // 16-bit types keep their bits in int32_data.
      kiln_dtype_t dt = t.data_type() == onnx::TensorProto::FLOAT16    ? KILN_DTYPE_F16
                        : t.data_type() == onnx::TensorProto::BFLOAT16 ? KILN_DTYPE_BF16
                        : t.data_type() == onnx::TensorProto::INT16    ? KILN_DTYPE_I16
                                                                       : KILN_DTYPE_U16;
      ok = fill(dt, 2, [&](int i, uint8_t* d) { uint16_t v = static_cast<uint16_t>(t.int32_data(i)); std::memcpy(d, &v, 2); },
                t.int32_data_size());
      break;
    }
    case onnx::TensorProto::UINT32:
      ok = fill(KILN_DTYPE_U32, 4, [&](int i, uint8_t* d) { uint32_t v = static_cast<uint32_t>(t.uint64_data(i)); std::memcpy(d, &v, 4); },
                t.uint64_data_size());
      break;
    case onnx::TensorProto::UINT64:
      ok = fill(KILN_DTYPE_U64, 8, [&](int i, uint8_t* d) { uint64_t v = t.uint64_data(i); std::memcpy(d, &v, 8); },
                t.uint64_data_size());
      break;
    default:
      *error = "unsupported TensorProto dtype " + std::to_string(t.data_type()) + " in " + path;
      return false;
  }
  if (!ok) *error = "TensorProto size mismatch in " + path;
  return ok;
}

bool ReadNpyTensor(const std::string& path, HostTensor* out, std::string* error) {
  tools::NpyArray a;
  if (!tools::ReadNpy(path, &a, error)) return false;
  out->dtype = a.dtype;
  out->shape = a.shape;
  out->data = std::move(a.data);
  return true;
}

kiln_instance_t SharedInstance() {
  static kiln_instance_t instance = [] {
    kiln_instance_t i = nullptr;
    kiln_status_t s = kiln_instance_create(&i);
    if (s) { std::fprintf(stderr, "instance: %s\n", kiln_status_message(s)); kiln_status_free(s); }
    return i;
  }();
  return instance;
}

kiln_device_t SharedDevice() {
  static kiln_device_t device = [] {
    kiln_device_t d = nullptr;
    const char* name = std::getenv("KILN_DEVICE_NAME");
    kiln_status_t s = kiln_device_create(SharedInstance(), "vulkan", name, -1, &d);
    if (s) { std::fprintf(stderr, "device: %s\n", kiln_status_message(s)); kiln_status_free(s); }
    return d;
  }();
  return device;
}

kiln_device_stats_t SharedDeviceStats() {
  kiln_device_stats_t s = {};
  kiln_status_free(kiln_device_stats(SharedDevice(), &s));
  return s;
}

uint64_t ValidationMessages() { return hal::ValidationMessageCount(); }

namespace {
std::string TakeError(kiln_status_t s, const std::string& what) {
  std::string m = what + ": " + kiln_status_message(s);
  kiln_status_free(s);
  return m;
}
}  // namespace

namespace {
std::string RunModuleBytes(const std::vector<uint8_t>& module_bytes, const std::vector<HostTensor>& inputs,
                           std::vector<HostTensor>* outputs, std::vector<std::string>* result_names = nullptr,
                           kiln_device_stats_t* invoke_delta = nullptr);
}  // namespace

std::string CompileAndRun(const std::string& onnx_path, const onnx_import::ImportOptions& import,
                          const std::vector<HostTensor>& inputs, std::vector<HostTensor>* outputs,
                          std::vector<std::string>* result_names) {
  driver::CompileOptions options;
  options.import = import;
  auto bytes = driver::CompileOnnxFile(onnx_path, options);
  if (!bytes.ok()) return "compile: " + bytes.status().message();
  return RunModuleBytes(bytes.value(), inputs, outputs, result_names);
}

std::string CompileAndRun(const std::string& onnx_path, const std::vector<std::string>& input_shapes,
                          const std::vector<HostTensor>& inputs, std::vector<HostTensor>* outputs) {
  driver::CompileOptions options;
  for (const std::string& flag : input_shapes) {
    Status s = onnx_import::ParseInputShapeFlag(flag, &options.import);
    if (!s.ok()) return s.message();
  }
  auto bytes = driver::CompileOnnxFile(onnx_path, options);
  if (!bytes.ok()) return "compile: " + bytes.status().message();
  return RunModuleBytes(bytes.value(), inputs, outputs);
}

std::string RunModule(const std::vector<uint8_t>& module_bytes, const std::vector<HostTensor>& inputs,
                      std::vector<HostTensor>* outputs, kiln_device_stats_t* invoke_delta) {
  return RunModuleBytes(module_bytes, inputs, outputs, nullptr, invoke_delta);
}

Program::~Program() {
  kiln_context_release(context);
  kiln_module_release(module);
}

std::string Program::Load(StatusOr<std::vector<uint8_t>> compiled) {
  if (!compiled.ok()) return "compile: " + compiled.status().message();
  bytes = std::move(compiled).value();
  using kiln_test::Str;
  std::string s = Str(kiln_module_load_from_memory(SharedInstance(), bytes.data(), bytes.size(), &module));
  if (s != "OK") return s;
  s = Str(kiln_context_create(SharedDevice(), &module, 1, &context));
  if (s != "OK") return s;
  return Str(kiln_context_lookup_function(context, "main", &main));
}

std::string Program::Load(const char* kir) {
  auto parsed = ir::ParseModule(kir, "<test>");
  if (!parsed.ok()) return "parse: " + parsed.status().message();
  return Load(driver::CompileModule(*parsed.value(), driver::CompileOptions()));
}

std::string CompileTextAndRun(const std::string& kir, const std::vector<HostTensor>& inputs,
                              std::vector<HostTensor>* outputs) {
  auto parsed = ir::ParseModule(kir, "<test>");
  if (!parsed.ok()) return "parse: " + parsed.status().message();
  driver::CompileOptions options;
  auto bytes = driver::CompileModule(*parsed.value(), options);
  if (!bytes.ok()) return "compile: " + bytes.status().message();
  return RunModuleBytes(bytes.value(), inputs, outputs);
}

namespace {
std::string RunModuleBytes(const std::vector<uint8_t>& module_bytes, const std::vector<HostTensor>& inputs,
                           std::vector<HostTensor>* outputs, std::vector<std::string>* result_names,
                           kiln_device_stats_t* invoke_delta) {
  kiln_device_t device = SharedDevice();
  if (!device) return "no Vulkan device";

  std::string error;
  kiln_module_t module = nullptr;
  kiln_context_t context = nullptr;
  kiln_function_t fn = nullptr;
  std::vector<kiln_tensor_t> args, results;
  do {
    kiln_status_t s = kiln_module_load_from_memory(SharedInstance(), module_bytes.data(), module_bytes.size(),
                                                   &module);
    if (s) { error = TakeError(s, "load"); break; }
    s = kiln_context_create(device, &module, 1, &context);
    if (s) { error = TakeError(s, "context"); break; }
    s = kiln_context_lookup_function(context, "main", &fn);
    if (s) { error = TakeError(s, "lookup"); break; }
    for (const HostTensor& t : inputs) {
      kiln_tensor_t arg = nullptr;
      s = kiln_tensor_create(device, t.dtype, t.shape.size(), t.shape.data(), t.data.data(), t.data.size(), &arg);
      if (s) { error = TakeError(s, "tensor"); break; }
      args.push_back(arg);
    }
    if (!error.empty()) break;
    results.assign(kiln_function_result_count(fn), nullptr);
    if (result_names) {
      result_names->clear();
      for (size_t i = 0; i < results.size(); ++i) {
        kiln_tensor_signature_t sig;
        s = kiln_function_result(fn, i, &sig);
        if (s) { error = TakeError(s, "signature"); break; }
        result_names->push_back(sig.name ? sig.name : "");
      }
      if (!error.empty()) break;
    }
    const kiln_device_stats_t before = SharedDeviceStats();
    s = kiln_invoke(context, fn, args.data(), args.size(), results.data(), results.size());
    if (s) { error = TakeError(s, "invoke"); break; }
    if (invoke_delta) {
      const kiln_device_stats_t after = SharedDeviceStats();
      *invoke_delta = after;
      invoke_delta->copies = after.copies - before.copies;
      invoke_delta->dispatches = after.dispatches - before.dispatches;
      invoke_delta->transfers = after.transfers - before.transfers;
      invoke_delta->fills = after.fills - before.fills;
    }
    outputs->clear();
    for (kiln_tensor_t r : results) {
      HostTensor h;
      h.dtype = kiln_tensor_dtype(r);
      h.shape.assign(kiln_tensor_dims(r), kiln_tensor_dims(r) + kiln_tensor_rank(r));
      h.data.resize(kiln_tensor_byte_size(r));
      s = kiln_tensor_read(r, h.data.data(), h.data.size());
      if (s) { error = TakeError(s, "read"); break; }
      outputs->push_back(std::move(h));
    }
  } while (false);
  for (kiln_tensor_t t : args) kiln_tensor_release(t);
  for (kiln_tensor_t t : results) if (t) kiln_tensor_release(t);
  if (context) kiln_context_release(context);
  if (module) kiln_module_release(module);
  return error;
}
}  // namespace

std::string Compare(const HostTensor& actual, const HostTensor& expected, double atol, double rtol) {
  std::ostringstream os;
  if (actual.shape != expected.shape) {
    os << "shape mismatch: got [";
    for (int64_t d : actual.shape) os << d << ",";
    os << "] want [";
    for (int64_t d : expected.shape) os << d << ",";
    os << "]";
    return os.str();
  }
  bool bool_like = [](kiln_dtype_t t) { return t == KILN_DTYPE_BOOL || t == KILN_DTYPE_U8; }(actual.dtype);
  if (actual.dtype != expected.dtype &&
      !(bool_like && (expected.dtype == KILN_DTYPE_BOOL || expected.dtype == KILN_DTYPE_U8))) {
    os << "dtype mismatch: got " << kiln_dtype_name(actual.dtype) << " want " << kiln_dtype_name(expected.dtype);
    return os.str();
  }
  double max_err = 0;
  int64_t first_bad = -1;
  for (int64_t i = 0; i < expected.element_count(); ++i) {
    double a = actual.At(i), e = expected.At(i);
    if (std::isnan(a) && std::isnan(e)) continue;
    if (std::isinf(e) && a == e) continue;
    double err = std::fabs(a - e);
    if (!(err <= atol + rtol * std::fabs(e))) {
      if (first_bad < 0) first_bad = i;
    }
    if (err > max_err || std::isnan(err)) max_err = err;
  }
  if (first_bad < 0) return "";
  os << "element " << first_bad << ": got " << actual.At(first_bad) << " want " << expected.At(first_bad)
     << " (max abs error " << max_err << ", atol " << atol << ", rtol " << rtol << ")";
  return os.str();
}

HostTensor F32(std::vector<int64_t> shape, const std::vector<float>& v) {
  HostTensor t;
  t.dtype = KILN_DTYPE_F32;
  t.shape = std::move(shape);
  t.data.resize(v.size() * 4);
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

std::vector<float> Ramp(int n, float scale, float bias) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i) * scale + bias;
  return v;
}

std::vector<float> Values(const HostTensor& t) {
  std::vector<float> v(t.element_count());
  std::memcpy(v.data(), t.data.data(), v.size() * 4);
  return v;
}

std::vector<uint8_t> CompileKirModule(const char* kir, const char* name) {
  auto parsed = ir::ParseModule(kir, name);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  if (!parsed.ok()) return {};
  driver::CompileOptions options;
  options.emit.module_name = name;
  auto bytes = driver::CompileModule(*parsed.value(), options);
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  return bytes.ok() ? bytes.value() : std::vector<uint8_t>{};
}

kiln_module_t LoadModule(const std::vector<uint8_t>& bytes) {
  kiln_module_t m = nullptr;
  kiln_status_t s = kiln_module_load_from_memory(SharedInstance(), bytes.data(), bytes.size(), &m);
  EXPECT_EQ(s, nullptr) << kiln_status_message(s);
  return m;
}

kiln_tensor_t DeviceF32(const std::vector<float>& v) {
  int64_t dims[1] = {static_cast<int64_t>(v.size())};
  kiln_tensor_t t = nullptr;
  kiln_status_t s = kiln_tensor_create(SharedDevice(), KILN_DTYPE_F32, 1, dims, v.data(), v.size() * 4, &t);
  EXPECT_EQ(s, nullptr) << kiln_status_message(s);
  return t;
}

std::vector<float> ReadF32(kiln_tensor_t t) {
  std::vector<float> v(kiln_tensor_byte_size(t) / 4);
  kiln_status_t s = kiln_tensor_read(t, v.data(), v.size() * 4);
  EXPECT_EQ(s, nullptr) << kiln_status_message(s);
  return v;
}

namespace {
std::string SessionError(kiln_status_t s) {
  std::string m = kiln_status_message(s);
  kiln_status_free(s);
  return m;
}
}  // namespace

Session::~Session() {
  if (context_) kiln_context_release(context_);
  if (module_) kiln_module_release(module_);
}

std::string Session::Load(const std::string& kir, bool disable_elision, backend::EmitReport* report) {
  auto parsed = ir::ParseModule(kir, "<session>");
  if (!parsed.ok()) return "parse: " + parsed.status().message();
  driver::CompileOptions options;
  options.pipeline.disable_elision = disable_elision;
  backend::EmitReport own_report;
  if (!report) report = &own_report;
  auto compiled = driver::CompileModule(*parsed.value(), options, report);
  if (!compiled.ok()) return "compile: " + compiled.status().message();
  // Every copy the program makes is an IR copy op (the allocation passes
  // write them: --materialize-edge-copies, --materialize-result-copies): the
  // backend adds none, and fails to emit a value not in place.
  bytes_ = std::move(compiled.value());
  if (kiln_status_t s = kiln_module_load_from_memory(SharedInstance(), bytes_.data(), bytes_.size(), &module_))
    return "load: " + SessionError(s);
  kiln_device_t device = SharedDevice();
  if (kiln_status_t s = kiln_context_create(device, &module_, 1, &context_)) return "context: " + SessionError(s);
  return "";
}

std::string Session::Invoke(const char* function, const std::vector<HostTensor>& inputs,
                          std::vector<HostTensor>* out, kiln_device_stats_t* delta, bool consume) {
  kiln_function_t fn = nullptr;
  if (kiln_status_t s = kiln_context_lookup_function(context_, function, &fn)) return "lookup: " + SessionError(s);
  kiln_device_t device = SharedDevice();
  std::vector<kiln_tensor_t> args;
  std::string error;
  for (const HostTensor& h : inputs) {
    kiln_tensor_t t = nullptr;
    if (kiln_status_t s =
            kiln_tensor_create(device, h.dtype, h.shape.size(), h.shape.data(), h.data.data(), h.data.size(), &t)) {
      error = "tensor: " + SessionError(s);
      break;
    }
    args.push_back(t);
  }
  std::vector<kiln_tensor_t> results(kiln_function_result_count(fn), nullptr);
  if (error.empty()) {
    kiln_device_stats_t before{}, after{};
    kiln_device_stats(device, &before);
    std::vector<kiln_invoke_arg_t> a;
    for (kiln_tensor_t t : args) a.push_back({t, consume ? KILN_ARG_CONSUME : KILN_ARG_BORROW, 0});
    if (kiln_status_t s = kiln_invoke_ex(context_, fn, a.data(), a.size(), results.data(), results.size()))
      error = "invoke: " + SessionError(s);
    if (consume) args.clear();  // the call took our references
    kiln_device_stats(device, &after);
    if (delta) {
      delta->copies = after.copies - before.copies;
      delta->dispatches = after.dispatches - before.dispatches;
      delta->device_allocations = after.device_allocations - before.device_allocations;
    delta->fills = after.fills - before.fills;
    }
  }
  out->clear();
  for (kiln_tensor_t r : results) {
    if (!r) continue;
    HostTensor h;
    h.dtype = kiln_tensor_dtype(r);
    h.shape.assign(kiln_tensor_dims(r), kiln_tensor_dims(r) + kiln_tensor_rank(r));
    h.data.resize(kiln_tensor_byte_size(r));
    if (kiln_status_t s = kiln_tensor_read(r, h.data.data(), h.data.size())) error = "read: " + SessionError(s);
    out->push_back(std::move(h));
    kiln_tensor_release(r);
  }
  for (kiln_tensor_t t : args) kiln_tensor_release(t);
  return error;
}

}  // namespace kiln::e2e
