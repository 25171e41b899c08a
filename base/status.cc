#include "base/status.h"

#include <cstdio>

namespace kiln {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kDataLoss: return "DATA_LOSS";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kUnimplemented: return "UNIMPLEMENTED";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kOutOfRange: return "OUT_OF_RANGE";
  }
  return "UNKNOWN";
}

Status::Status(StatusCode code, std::string message) {
  if (code != StatusCode::kOk) {
    rep_.reset(new Rep{code, std::move(message)});
  }
}

Status::Status(StatusCode code, const char* message) {
  if (code != StatusCode::kOk) {
    rep_.reset(new Rep{code, std::string(message ? message : "")});
  }
}

Status::Status(const Status& other) {
  if (other.rep_) rep_.reset(new Rep(*other.rep_));
}

Status& Status::operator=(const Status& other) {
  if (this != &other) rep_.reset(other.rep_ ? new Rep(*other.rep_) : nullptr);
  return *this;
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return rep_ ? rep_->message : kEmpty;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(rep_->code)) + ": " + rep_->message;
}

Status& Status::Annotate(const std::string& context) {
  if (rep_) rep_->message = context + ": " + rep_->message;
  return *this;
}

Status MakeStatus(StatusCode code, const char* fmt, ...) {
  char buffer[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buffer, sizeof(buffer), fmt, args);
  va_end(args);
  return Status(code, buffer);
}

}  // namespace kiln
