// A module file read into host memory for the tools (kiln-run, kiln-bench).
//
// kiln_module_load_from_file maps the file: the module's pages are the
// file's, so a file truncated by another program while it is mapped raises
// SIGBUS on the next touch of a page past the new end (docs/security.md).
// The tools instead read the whole file once, into a 64-byte-aligned buffer
// they own, and load it with kiln_module_load_from_memory (zero-copy from
// that buffer). Truncating or rewriting the file afterwards cannot reach
// them; truncating it during the read gives a clean DATA_LOSS from the
// verifier.
#ifndef KILN_TOOLS_MODULE_FILE_H_
#define KILN_TOOLS_MODULE_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "kiln/kiln.h"

namespace kiln::tools {

// The bytes of one module file. Must outlive every module loaded from it.
class ModuleFile {
 public:
  // Reads `path` whole. Only regular files (a FIFO or /dev/zero would be
  // read until memory runs out); empty files are refused. Returns false with
  // `*error` set on any failure, worded as the runtime's own file loader
  // words it ("cannot open module 'PATH': why").
  bool Read(const std::string& path, std::string* error);

  // Loads the bytes read (kiln_module_load_from_memory). The module borrows
  // them: release it before this object.
  kiln_status_t Load(kiln_instance_t instance, kiln_module_t* out_module) const;

  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t, Free> data_;
  size_t size_ = 0;
};

}  // namespace kiln::tools

#endif  // KILN_TOOLS_MODULE_FILE_H_
