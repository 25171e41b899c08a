// Build-time helper: compiles one GLSL compute shader to a SPIR-V binary with
// the glslang C API. Used by hal/cts/CMakeLists.txt when neither
// glslangValidator nor glslc is installed (Debian ships only the library).
//
// Usage: kiln_glsl_to_spirv <input.comp> <output.spv>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <glslang/Include/glslang_c_interface.h>
#include <glslang/Public/resource_limits_c.h>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <input.comp> <output.spv>\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[1]);
    return 1;
  }
  std::stringstream source;
  source << in.rdbuf();
  const std::string code = source.str();

  glslang_initialize_process();
  glslang_input_t input = {};
  input.language = GLSLANG_SOURCE_GLSL;
  input.stage = GLSLANG_STAGE_COMPUTE;
  input.client = GLSLANG_CLIENT_VULKAN;
  input.client_version = GLSLANG_TARGET_VULKAN_1_2;
  input.target_language = GLSLANG_TARGET_SPV;
  input.target_language_version = GLSLANG_TARGET_SPV_1_5;
  input.code = code.c_str();
  input.default_version = 450;
  input.default_profile = GLSLANG_NO_PROFILE;
  input.messages = static_cast<glslang_messages_t>(GLSLANG_MSG_SPV_RULES_BIT |
                                                   GLSLANG_MSG_VULKAN_RULES_BIT);
  input.resource = glslang_default_resource();

  int rc = 1;
  glslang_shader_t* shader = glslang_shader_create(&input);
  glslang_program_t* program = nullptr;
  if (!glslang_shader_preprocess(shader, &input) || !glslang_shader_parse(shader, &input)) {
    std::fprintf(stderr, "%s: %s\n%s\n", argv[1], glslang_shader_get_info_log(shader),
                 glslang_shader_get_info_debug_log(shader));
  } else {
    program = glslang_program_create();
    glslang_program_add_shader(program, shader);
    if (!glslang_program_link(program, input.messages)) {
      std::fprintf(stderr, "%s: link: %s\n", argv[1], glslang_program_get_info_log(program));
    } else {
      glslang_program_SPIRV_generate(program, input.stage);
      const char* messages = glslang_program_SPIRV_get_messages(program);
      if (messages && messages[0]) std::fprintf(stderr, "%s: %s\n", argv[1], messages);
      size_t words = glslang_program_SPIRV_get_size(program);
      std::ofstream out(argv[2], std::ios::binary);
      out.write(reinterpret_cast<const char*>(glslang_program_SPIRV_get_ptr(program)),
                static_cast<std::streamsize>(words * sizeof(unsigned int)));
      rc = out ? 0 : 1;
      if (rc) std::fprintf(stderr, "%s: cannot write %s\n", argv[0], argv[2]);
    }
  }
  if (program) glslang_program_delete(program);
  glslang_shader_delete(shader);
  glslang_finalize_process();
  return rc;
}
