// Test helper shared by the C API tests: a kiln_status_t as text.
#ifndef KILN_RUNTIME_KILN_STATUS_TEST_UTIL_H_
#define KILN_RUNTIME_KILN_STATUS_TEST_UTIL_H_

#include <string>

#include "kiln/kiln.h"

namespace kiln_test {

// "OK" for NULL, else "CODE_NAME: message". Takes ownership of `s` (frees it).
inline std::string Str(kiln_status_t s) {
  if (!s) return "OK";
  std::string r = std::string(kiln_status_code_name(kiln_status_code(s))) + ": " + kiln_status_message(s);
  kiln_status_free(s);
  return r;
}

}  // namespace kiln_test

#endif  // KILN_RUNTIME_KILN_STATUS_TEST_UTIL_H_
