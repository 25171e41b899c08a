// One compiled model (a .kiln module's "main") in a shared Kiln context,
// through the public C API (include/kiln/kiln.h) only.
#ifndef KILN_SAMPLES_OCR_KILN_MODEL_H_
#define KILN_SAMPLES_OCR_KILN_MODEL_H_

#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace ocr {

// Turns a non-NULL status into "what: message (CODE)" and frees it.
// Returns true for OK (NULL).
bool StatusOk(kiln_status_t status, const std::string& what, std::string* error);

// A model with one float32 input and one float32 output, fixed shapes read
// from the module's signature. Owns one input tensor and one output tensor,
// made once: Run() writes the input in place (kiln_tensor_write) and passes
// the output as caller-supplied storage (kiln_invoke_ex), so once the
// program is warm a call makes no device allocation of its own.
class KilnModel {
 public:
  KilnModel() = default;
  ~KilnModel();
  KilnModel(const KilnModel&) = delete;
  KilnModel& operator=(const KilnModel&) = delete;

  // Looks up "<module_name>.main" in `context` and checks its signature: one
  // f32 argument of rank 4 [1, 3, H, W] and one f32 result. `role` ("det",
  // "cls", "rec") prefixes errors. Creates the input and output tensors on
  // `device` (retained). Returns false with *error set on any failure.
  bool Init(kiln_device_t device, kiln_context_t context, const std::string& module_name,
            const std::string& role, std::string* error);

  // Input [1, 3, H, W]: height and width of the compiled shape.
  int input_height() const { return static_cast<int>(arg_.dims[2]); }
  int input_width() const { return static_cast<int>(arg_.dims[3]); }
  const kiln_tensor_signature_t& result_signature() const { return result_; }
  size_t input_elements() const { return input_elements_; }
  size_t output_elements() const { return output_elements_; }

  // Runs the model synchronously on `input` (input_elements() floats) and
  // copies the result into *output (resized to output_elements()).
  bool Run(const std::vector<float>& input, std::vector<float>* output, std::string* error);

 private:
  std::string role_;
  kiln_device_t device_ = nullptr;
  kiln_context_t context_ = nullptr;
  kiln_function_t function_ = nullptr;
  kiln_tensor_signature_t arg_{};
  kiln_tensor_signature_t result_{};
  kiln_tensor_t input_ = nullptr;
  kiln_tensor_t output_ = nullptr;
  size_t input_elements_ = 0, output_elements_ = 0;
};

// "[1,3,48,320]".
std::string ShapeString(const kiln_tensor_signature_t& sig);

}  // namespace ocr

#endif  // KILN_SAMPLES_OCR_KILN_MODEL_H_
