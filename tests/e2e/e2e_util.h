// Helpers shared by the end-to-end tests: compile in-process with the real
// compiler (compiler/tools/compile_driver.h), run through the public C API on
// the Vulkan device, and compare with an independent reference (ONNX's own
// test data, or ONNX Runtime goldens in tests/golden/).
#ifndef KILN_TESTS_E2E_E2E_UTIL_H_
#define KILN_TESTS_E2E_E2E_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/import/onnx/onnx_importer.h"
#include "compiler/tools/compile_driver.h"
#include "kiln/kiln.h"

// The flow.executable @add (tensor<4xf32> + tensor<4xf32>) that many
// hand-written test programs dispatch, as a string literal to paste in
// front of a program: KILN_E2E_ADD_EXECUTABLE R"(...)".
#define KILN_E2E_ADD_EXECUTABLE \
  "\n" \
  "\"flow.executable\"() ({\n" \
  "^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):\n" \
  "  %0 = \"flow.dispatch\"(%a, %b) ({\n" \
  "  ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):\n" \
  "    %s = \"tensor.add\"(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n" \
  "    \"flow.return\"(%s) : (tensor<4xf32>) -> ()\n" \
  "  }) {name = \"add\"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n" \
  "}) {sym_name = \"add\"} : () -> ()\n"

namespace kiln::e2e {

// @add (KILN_E2E_ADD_EXECUTABLE) plus @mul, @neg and @less (an i1 result)
// over tensor<4xf32>: the executables of the hand-written control-flow
// programs (tests/e2e/control_flow_emission_test.cc, backend_copies_test.cc).
inline constexpr const char kArithExecutables[] = KILN_E2E_ADD_EXECUTABLE R"(
"flow.executable"() ({
^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
  %0 = "flow.dispatch"(%a, %b) ({
  ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
    %s = "tensor.mul"(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "flow.return"(%s) : (tensor<4xf32>) -> ()
  }) {name = "mul"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
}) {sym_name = "mul"} : () -> ()
"flow.executable"() ({
^bb0(%a: tensor<4xf32>):
  %0 = "flow.dispatch"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    %s = "tensor.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    "flow.return"(%s) : (tensor<4xf32>) -> ()
  }) {name = "neg"} : (tensor<4xf32>) -> tensor<4xf32>
}) {sym_name = "neg"} : () -> ()
"flow.executable"() ({
^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
  %0 = "flow.dispatch"(%a, %b) ({
  ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
    %s = "tensor.less"(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    "flow.return"(%s) : (tensor<4xi1>) -> ()
  }) {name = "less"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
}) {sym_name = "less"} : () -> ()
)";

// A host tensor: dtype, shape and dense little-endian bytes.
struct HostTensor {
  kiln_dtype_t dtype = KILN_DTYPE_INVALID;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
  int64_t element_count() const;
  double At(int64_t i) const;  // element i as double (any numeric dtype)
};

// Reads an ONNX TensorProto file (input_0.pb, output_0.pb). Returns false and
// sets *error for unsupported dtypes.
bool ReadTensorProto(const std::string& path, HostTensor* out, std::string* error);
// Decodes a serialized ONNX TensorProto (e.g. an element of a SequenceProto);
// `what` names it in errors.
bool DecodeTensorProto(const std::string& bytes, const std::string& what, HostTensor* out,
                       std::string* error);
// Reads a .npy file.
bool ReadNpyTensor(const std::string& path, HostTensor* out, std::string* error);

// One Vulkan device for the whole test binary (created on first use, with the
// validation layer when KILN_VALIDATION=1).
kiln_device_t SharedDevice();
// SharedDevice()'s cumulative counters (kiln_device_stats); tests diff two.
kiln_device_stats_t SharedDeviceStats();
kiln_instance_t SharedInstance();

// Compiles `onnx_path` (static shapes from `input_shapes`, "NAME=1x2x3"
// entries) and runs its main function on `inputs`. Returns "" on success or
// the first error (compile or run) as text.
std::string CompileAndRun(const std::string& onnx_path, const std::vector<std::string>& input_shapes,
                          const std::vector<HostTensor>& inputs, std::vector<HostTensor>* outputs);

// Like the above with the full import options (input shapes, --constant-input
// and --sequence-input values). `result_names` (may be null) receives the
// names of main's results in order (from the module's signature).
std::string CompileAndRun(const std::string& onnx_path, const onnx_import::ImportOptions& import,
                          const std::vector<HostTensor>& inputs, std::vector<HostTensor>* outputs,
                          std::vector<std::string>* result_names);

// Runs main of the compiled module `module_bytes` on `inputs` (as the above,
// for callers that compile with their own driver::CompileOptions).
// `invoke_delta` (may be null) receives the copies, dispatches, transfers
// and fills of the kiln_invoke alone (not the argument uploads or result
// reads); its other counters are the device's totals after the call.
std::string RunModule(const std::vector<uint8_t>& module_bytes, const std::vector<HostTensor>& inputs,
                      std::vector<HostTensor>* outputs, kiln_device_stats_t* invoke_delta = nullptr);

// Parses `kir` (textual IR at the tensor, dispatch or stream level), runs the
// default pipeline and emission, and runs main on `inputs`.
std::string CompileTextAndRun(const std::string& kir, const std::vector<HostTensor>& inputs,
                              std::vector<HostTensor>* outputs);

// Compares element-wise: |a - e| <= atol + rtol * |e|, dtype and shape equal,
// NaN matches NaN. Returns "" when equal, else a description of the first
// mismatch and the max error.
std::string Compare(const HostTensor& actual, const HostTensor& expected, double atol, double rtol);

// An f32 tensor of `shape` holding `v` (row-major; v.size() must equal the
// element count), and the f32 values of `t` (t.dtype must be f32).
HostTensor F32(std::vector<int64_t> shape, const std::vector<float>& v);
std::vector<float> Values(const HostTensor& t);
// n values i * scale + bias, i = 0..n-1 (exact in f32 for the small
// power-of-two scales the tests use).
std::vector<float> Ramp(int n, float scale, float bias);
// Multi-module programs through the C API (GoogleTest failures on error):
// `kir` compiled by the default pipeline as module `name` (empty on error);
// those bytes loaded as a module (they must outlive it); a 1-D f32 device
// tensor holding `v` on SharedDevice(); and the f32 contents of `t`.
std::vector<uint8_t> CompileKirModule(const char* kir, const char* name);
kiln_module_t LoadModule(const std::vector<uint8_t>& bytes);
kiln_tensor_t DeviceF32(const std::vector<float>& v);
std::vector<float> ReadF32(kiln_tensor_t t);
// Number of validation-layer messages seen so far in this process.
uint64_t ValidationMessages();

// A compiled module loaded into its own context on SharedDevice(), with its
// "main" looked up; the context and module are released on destruction.
// Load() takes the compiler's result, or .kir text compiled by the default
// pipeline; it returns "OK", or the first error as text.
struct Program {
  kiln_module_t module = nullptr;
  kiln_context_t context = nullptr;
  kiln_function_t main = nullptr;
  std::vector<uint8_t> bytes;  // the module bytes (load_from_memory borrows them)
  Program() = default;
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  ~Program();
  std::string Load(StatusOr<std::vector<uint8_t>> compiled);
  std::string Load(const char* kir);
};

// One program (.kir text at any level) compiled in-process by the default
// pipeline and loaded into one context on SharedDevice(): invoke functions
// several times (module globals persist between the calls), counting the
// copies, dispatches and device allocations of each call. Errors come back
// as text ("" on success).
class Session {
 public:
  Session() = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session();
  // Compiles `kir` (with PipelineOptions::disable_elision when asked) and
  // creates the context; `report` (may be null) receives the emitter report.
  std::string Load(const std::string& kir, bool disable_elision = false, backend::EmitReport* report = nullptr);
  // Invokes `function` with `inputs` (handed over with KILN_ARG_CONSUME when
  // `consume`, else borrowed); results read back into *out; `delta` (may be
  // null) receives the counters of this call (copies, dispatches,
  // device_allocations, fills).
  std::string Invoke(const char* function, const std::vector<HostTensor>& inputs, std::vector<HostTensor>* out,
                     kiln_device_stats_t* delta = nullptr, bool consume = false);

 private:
  std::vector<uint8_t> bytes_;
  kiln_module_t module_ = nullptr;
  kiln_context_t context_ = nullptr;
};

}  // namespace kiln::e2e

#endif  // KILN_TESTS_E2E_E2E_UTIL_H_
