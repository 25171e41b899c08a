#include "kiln_model.h"

namespace ocr {

bool StatusOk(kiln_status_t status, const std::string& what, std::string* error) {
  if (!status) return true;
  *error = what + ": " + kiln_status_message(status) + " (" +
           kiln_status_code_name(kiln_status_code(status)) + ")";
  kiln_status_free(status);
  return false;
}

std::string ShapeString(const kiln_tensor_signature_t& sig) {
  std::string s = "[";
  for (size_t i = 0; i < sig.rank; ++i) s += (i ? "," : "") + std::to_string(sig.dims[i]);
  return s + "]";
}

namespace {
size_t Elements(const kiln_tensor_signature_t& sig) {
  size_t n = 1;
  for (size_t i = 0; i < sig.rank; ++i) n *= static_cast<size_t>(sig.dims[i]);
  return n;
}
}  // namespace

KilnModel::~KilnModel() {
  kiln_tensor_release(output_);
  kiln_tensor_release(input_);
  kiln_context_release(context_);
  kiln_device_release(device_);
}

bool KilnModel::Init(kiln_device_t device, kiln_context_t context, const std::string& module_name,
                     const std::string& role, std::string* error) {
  role_ = role;
  kiln_device_retain(device);
  device_ = device;
  kiln_context_retain(context);
  context_ = context;
  const std::string name = module_name + ".main";
  if (!StatusOk(kiln_context_lookup_function(context, name.c_str(), &function_),
                role + " model: looking up " + name, error)) {
    return false;
  }
  if (kiln_function_arg_count(function_) != 1 || kiln_function_result_count(function_) != 1) {
    *error = role + " model " + name + ": expected 1 input and 1 output, it has " +
             std::to_string(kiln_function_arg_count(function_)) + " and " +
             std::to_string(kiln_function_result_count(function_));
    return false;
  }
  if (!StatusOk(kiln_function_arg(function_, 0, &arg_), role + " model: argument 0", error) ||
      !StatusOk(kiln_function_result(function_, 0, &result_), role + " model: result 0", error)) {
    return false;
  }
  if (arg_.dtype != KILN_DTYPE_F32 || arg_.rank != 4 || arg_.dims[0] != 1 || arg_.dims[1] != 3 ||
      arg_.dims[2] < 1 || arg_.dims[3] < 1) {
    *error = role + " model " + name + ": input '" + (arg_.name ? arg_.name : "") + "' is " +
             kiln_dtype_name(arg_.dtype) + ShapeString(arg_) +
             ", expected f32[1,3,H,W] with static H and W (compile with --input-shape=x=1x3xHxW)";
    return false;
  }
  if (result_.dtype != KILN_DTYPE_F32) {
    *error = role + " model " + name + ": output is " + kiln_dtype_name(result_.dtype) +
             ShapeString(result_) + ", expected f32";
    return false;
  }
  for (size_t i = 0; i < result_.rank; ++i) {
    if (result_.dims[i] < 0) {
      *error = role + " model " + name + ": output shape " + ShapeString(result_) +
               " is not static";
      return false;
    }
  }
  input_elements_ = Elements(arg_);
  output_elements_ = Elements(result_);
  return StatusOk(kiln_tensor_create(device, KILN_DTYPE_F32, arg_.rank, arg_.dims, nullptr, 0,
                                     &input_),
                  role + " model: creating the input tensor", error) &&
         StatusOk(kiln_tensor_create(device, KILN_DTYPE_F32, result_.rank, result_.dims, nullptr,
                                     0, &output_),
                  role + " model: creating the output tensor", error);
}

bool KilnModel::Run(const std::vector<float>& input, std::vector<float>* output,
                    std::string* error) {
  if (input.size() != input_elements_) {
    *error = role_ + " model: " + std::to_string(input.size()) + " input values, the module takes " +
             ShapeString(arg_);
    return false;
  }
  if (!StatusOk(kiln_tensor_write(input_, input.data(), input.size() * sizeof(float)),
                role_ + " model: writing the input", error)) {
    return false;
  }
  kiln_invoke_arg_t args[2] = {{input_, KILN_ARG_BORROW, 0},
                               {output_, KILN_ARG_OUTPUT_STORAGE, 0}};
  kiln_tensor_t result = nullptr;
  if (!StatusOk(kiln_invoke_ex(context_, function_, args, 2, &result, 1), role_ + " model: invoke",
                error)) {
    return false;
  }
  output->resize(output_elements_);
  bool ok = StatusOk(kiln_tensor_read(result, output->data(), output->size() * sizeof(float)),
                     role_ + " model: reading the output", error);
  kiln_tensor_release(result);
  return ok;
}

}  // namespace ocr
