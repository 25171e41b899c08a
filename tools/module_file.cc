#include "tools/module_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace kiln::tools {

void ModuleFile::Free::operator()(uint8_t* p) const { std::free(p); }

bool ModuleFile::Read(const std::string& path, std::string* error) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = "cannot open module '" + path + "': " + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    *error = "module '" + path + "' is not a regular file";
    return false;
  }
  size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    close(fd);
    *error = "module '" + path + "' is empty";
    return false;
  }
  // 64-byte aligned, so the module's aligned weights load zero-copy.
  size_t alloc = (size + 63) & ~size_t{63};
  data_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, alloc)));
  if (!data_) {
    close(fd);
    *error = "out of host memory reading module '" + path + "' (" + std::to_string(size) + " bytes)";
    return false;
  }
  size_t got = 0;
  int read_errno = 0;
  while (got < size) {
    ssize_t n = read(fd, data_.get() + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) read_errno = errno;
    if (n <= 0) break;  // an error, or the file shrank while being read
    got += static_cast<size_t>(n);
  }
  close(fd);
  if (read_errno) {
    *error = "cannot read module '" + path + "': " + std::strerror(read_errno);
    return false;
  }
  if (got == 0) {
    *error = "module '" + path + "' was emptied while being read";
    return false;
  }
  size_ = got;  // a short read leaves a truncated module: the verifier says so
  return true;
}

kiln_status_t ModuleFile::Load(kiln_instance_t instance, kiln_module_t* out_module) const {
  return kiln_module_load_from_memory(instance, data_.get(), size_, out_module);
}

}  // namespace kiln::tools
