#include "base/status.h"

#include <cstddef>
#include <cstdio>
#include <cstring>

#include "base/host_alloc.h"

namespace kiln {

const char* StatusCodeName(StatusCode code) {
  // One string of the names in code order, each ending in '\0': smaller on
  // aarch64 than a switch returning a literal per case.
  static constexpr char kNames[] =
      "OK\0INVALID_ARGUMENT\0DATA_LOSS\0NOT_FOUND\0UNIMPLEMENTED\0RESOURCE_EXHAUSTED\0"
      "FAILED_PRECONDITION\0INTERNAL\0OUT_OF_RANGE\0DEADLINE_EXCEEDED\0UNKNOWN";
  int n = static_cast<int>(code);
  if (n < 0 || n > static_cast<int>(StatusCode::kDeadlineExceeded)) n = 10;  // UNKNOWN
  const char* name = kNames;
  while (n-- > 0) name += std::strlen(name) + 1;
  return name;
}

std::string operator+(const std::string& a, StatusMessage b) {
  std::string r = a;
  return r.append(b.data(), b.size());
}
std::string operator+(StatusMessage a, const std::string& b) { return a.str() + b; }
std::string operator+(const char* a, StatusMessage b) { return std::string(a) + b; }
std::string operator+(StatusMessage a, const char* b) { return a.str() + b; }

Status::Rep* Status::NewRep(StatusCode code, std::string_view prefix, std::string_view message) {
  // Bounded, so the size fits the header (messages are far shorter).
  prefix = prefix.substr(0, 1u << 30);
  message = message.substr(0, 1u << 30);
  size_t size = prefix.size() + (prefix.empty() ? 0 : 2) + message.size();
  // Never null: a refused hook falls back to malloc and is counted
  // (host_alloc.h), so the C API reports RESOURCE_EXHAUSTED.
  auto* rep = static_cast<Rep*>(HostAllocateOrFallBack(offsetof(Rep, text) + size + 1, 16));
  rep->code = code;
  rep->size = static_cast<uint32_t>(size);
  char* p = rep->text;
  if (!prefix.empty()) {  // (an empty view's data() may be null: no memcpy)
    std::memcpy(p, prefix.data(), prefix.size());
    std::memcpy(p + prefix.size(), ": ", 2);
    p += prefix.size() + 2;
  }
  if (!message.empty()) std::memcpy(p, message.data(), message.size());
  p[message.size()] = '\0';
  return rep;
}

Status::Status(StatusCode code) {
  if (code != StatusCode::kOk) rep_ = NewRep(code, {}, {});
}

#if KILN_STATUS_MESSAGES
Status::Status(StatusCode code, std::string_view message) {
  if (code != StatusCode::kOk) rep_ = NewRep(code, {}, message);
}

Status::Status(StatusCode code, const char* message)
    : Status(code, std::string_view(message ? message : "")) {}
#endif

Status::Status(const Status& other) {
  if (other.rep_) rep_ = NewRep(other.rep_->code, {}, other.message());
}

Status& Status::operator=(const Status& other) {
  if (this != &other) {
    Rep* copy = other.rep_ ? NewRep(other.rep_->code, {}, other.message()) : nullptr;
    HostFree(rep_);
    rep_ = copy;
  }
  return *this;
}

Status::~Status() { HostFree(rep_); }

StatusMessage Status::message() const {
#if KILN_STATUS_MESSAGES
  return rep_ ? StatusMessage(rep_->text, rep_->size) : StatusMessage("", 0);
#else
  // Never empty for an error: the code's name stands in for the message.
  return rep_ ? StatusMessage(StatusCodeName(rep_->code)) : StatusMessage("", 0);
#endif
}

std::string Status::ToString() const {
  if (ok()) return "OK";
#if KILN_STATUS_MESSAGES
  return std::string(StatusCodeName(rep_->code)) + ": " + message();
#else
  return StatusCodeName(rep_->code);
#endif
}

#if KILN_STATUS_MESSAGES
Status& Status::Annotate(std::string_view context) {
  if (rep_) {
    Rep* annotated = NewRep(rep_->code, context, message());
    HostFree(rep_);
    rep_ = annotated;
  }
  return *this;
}

Status& Status::Annotatef(const char* fmt, ...) {
  if (!rep_) return *this;
  char buffer[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buffer, sizeof(buffer), fmt, args);
  va_end(args);
  return Annotate(buffer);
}

Status MakeStatus(StatusCode code, const char* fmt, ...) {
  char buffer[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buffer, sizeof(buffer), fmt, args);
  va_end(args);
  return Status(code, buffer);
}
#endif  // KILN_STATUS_MESSAGES

}  // namespace kiln
