// Status: the one error type of Kiln's runtime and compiler.
//
// A Status is either OK (no allocation, one pointer-sized word) or carries a
// code and a human-readable message. Functions that can fail return Status or
// StatusOr<T>; nothing in the runtime throws or aborts on bad input.
//
// Ownership: a Status owns its message. Moving transfers it; copying duplicates.
// The message lives in host memory of the runtime's allocator
// (base/host_alloc.h: the kiln_set_allocator hook, else malloc).
#ifndef KILN_BASE_STATUS_H_
#define KILN_BASE_STATUS_H_

#include <cstdarg>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

// KILN_STATUS_MESSAGES (the CMake option of that name, default ON; OFF
// defines it 0 for the whole build, and is refused with the compiler or the
// tests): with it 0, a Status keeps its code and drops its message. The error
// constructors, MakeStatus and Annotate/Annotatef become inline code-only
// functions, so their message literals and formatting leave the binary, and
// message() is the code's name ("DATA_LOSS"): kiln_status_message() is never
// empty, and apps keep kiln_status_code(). This is IREE's IREE_STATUS_MODE=0
// ("statuses are just integers"), which IREE's size-optimized runtime builds
// use; Kiln measures its footprint both ways (scripts/size_report.sh).
#ifndef KILN_STATUS_MESSAGES
#define KILN_STATUS_MESSAGES 1
#endif

// Wraps a message argument whose text costs code to build (a std::string
// made for the message, a table lookup): with KILN_STATUS_MESSAGES 0 it is
// "" and the expression is not evaluated.
#if KILN_STATUS_MESSAGES
#define KILN_STATUS_TEXT(expr) (expr)
#else
#define KILN_STATUS_TEXT(expr) ""
#endif

namespace kiln {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,   // bad input from the caller (shape/dtype mismatch, bad flag)
  kDataLoss = 2,          // malformed or truncated module bytes
  kNotFound = 3,          // missing function, import, device, file
  kUnimplemented = 4,     // unsupported op/dtype/feature
  kResourceExhausted = 5, // allocation failure (host or device)
  kFailedPrecondition = 6,// wrong state (aliasing violation, bad ordering)
  kInternal = 7,          // a Kiln bug or driver failure
  kOutOfRange = 8,        // index/offset beyond bounds
  kDeadlineExceeded = 9,  // a bounded wait ran out of time (nothing changed)
};

const char* StatusCodeName(StatusCode code);

// A Status's message: a view of NUL-terminated text (c_str()) that converts
// to std::string and concatenates with strings like one. Valid while the
// Status lives and is not modified.
class StatusMessage : public std::string_view {
 public:
  StatusMessage(const char* text, size_t size) : std::string_view(text, size) {}
  StatusMessage(const char* text) : std::string_view(text) {}  // NOLINT: implicit
  const char* c_str() const { return data(); }
  operator std::string() const { return std::string(data(), size()); }  // NOLINT: implicit
  std::string str() const { return std::string(data(), size()); }
};
std::string operator+(const std::string& a, StatusMessage b);
std::string operator+(StatusMessage a, const std::string& b);
std::string operator+(const char* a, StatusMessage b);
std::string operator+(StatusMessage a, const char* b);

class [[nodiscard]] Status {
 public:
  Status() = default;
#if KILN_STATUS_MESSAGES
  Status(StatusCode code, std::string_view message);
  // Out of line, so a call site with a literal builds no std::string.
  Status(StatusCode code, const char* message);
#else
  Status(StatusCode code, std::string_view) : Status(code) {}
  Status(StatusCode code, const char*) : Status(code) {}
#endif
  // A Status with a code and an empty message.
  explicit Status(StatusCode code);
  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&& other) noexcept : rep_(other.rep_) { other.rep_ = nullptr; }
  Status& operator=(Status&& other) noexcept {
    std::swap(rep_, other.rep_);
    return *this;
  }
  ~Status();

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  StatusMessage message() const;
  // "INVALID_ARGUMENT: message" or "OK".
  std::string ToString() const;
#if KILN_STATUS_MESSAGES
  // Prepends context: "context: message". No-op on OK.
  Status& Annotate(std::string_view context);
  // Annotate with a printf-style context (at most 1023 bytes of it).
  Status& Annotatef(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
#else
  Status& Annotate(std::string_view) { return *this; }
  Status& Annotatef(const char*, ...) { return *this; }
#endif

 private:
  // One block: the code, the length and the text (NUL-terminated).
  struct Rep {
    StatusCode code;
    uint32_t size;
    char text[1];
  };
  static Rep* NewRep(StatusCode code, std::string_view prefix, std::string_view message);
  Rep* rep_ = nullptr;
};

inline Status OkStatus() { return Status(); }
// printf-style constructors.
#if KILN_STATUS_MESSAGES
Status MakeStatus(StatusCode code, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define KILN_STATUS_CTOR(Name, Code)                                        \
  template <typename... Args>                                               \
  Status Name(const char* fmt, Args... args) {                              \
    return MakeStatus(StatusCode::Code, fmt, args...);                      \
  }                                                                         \
  inline Status Name(const char* msg) {                                     \
    return Status(StatusCode::Code, msg);                                   \
  }
#else
template <typename... Args>
inline Status MakeStatus(StatusCode code, const char*, Args&&...) {
  return Status(code);
}
#define KILN_STATUS_CTOR(Name, Code)                                        \
  template <typename... Args>                                               \
  inline Status Name(const char*, Args&&...) {                              \
    return Status(StatusCode::Code);                                        \
  }
#endif
KILN_STATUS_CTOR(InvalidArgumentError, kInvalidArgument)
KILN_STATUS_CTOR(DataLossError, kDataLoss)
KILN_STATUS_CTOR(NotFoundError, kNotFound)
KILN_STATUS_CTOR(UnimplementedError, kUnimplemented)
KILN_STATUS_CTOR(ResourceExhaustedError, kResourceExhausted)
KILN_STATUS_CTOR(FailedPreconditionError, kFailedPrecondition)
KILN_STATUS_CTOR(InternalError, kInternal)
KILN_STATUS_CTOR(OutOfRangeError, kOutOfRange)
KILN_STATUS_CTOR(DeadlineExceededError, kDeadlineExceeded)
#undef KILN_STATUS_CTOR

// StatusOr<T>: a value or an error. T must be movable.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) {}  // NOLINT: implicit
  StatusOr(T value) : value_(std::move(value)), has_value_(true) {}  // NOLINT
  bool ok() const { return has_value_; }
  const Status& status() const { return status_; }
  Status take_status() { return std::move(status_); }
  T& value() & { return value_; }
  const T& value() const& { return value_; }
  T&& value() && { return std::move(value_); }
  T* operator->() { return &value_; }
  T& operator*() { return value_; }

 private:
  Status status_;
  T value_{};
  bool has_value_ = false;
};

}  // namespace kiln

#define KILN_CONCAT_INNER(a, b) a##b
#define KILN_CONCAT(a, b) KILN_CONCAT_INNER(a, b)

// Returns early from the enclosing function if `expr` is not OK.
#define KILN_RETURN_IF_ERROR(expr)              \
  do {                                          \
    ::kiln::Status _kiln_status = (expr);       \
    if (!_kiln_status.ok()) return _kiln_status; \
  } while (0)

// `KILN_ASSIGN_OR_RETURN(auto x, StatusOrExpr());`
#define KILN_ASSIGN_OR_RETURN(lhs, expr) \
  KILN_ASSIGN_OR_RETURN_IMPL(KILN_CONCAT(_kiln_sor_, __LINE__), lhs, expr)
#define KILN_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.take_status();          \
  lhs = std::move(tmp).value()

#endif  // KILN_BASE_STATUS_H_
