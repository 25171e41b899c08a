// RefObject: intrusive, thread-safe reference counting for runtime objects
// (HAL buffers, executables, command buffers, VM modules, contexts).
//
// Ownership convention (see DESIGN.md "Ownership is written in names"):
//  - A new object starts with refcount 1, owned by whoever created it.
//  - Ref<T> is a smart handle that retains on copy and releases on destruction.
//  - `T* x` parameters are borrowed; `Ref<T>` parameters/returns transfer one
//    reference.
#ifndef KILN_BASE_REF_H_
#define KILN_BASE_REF_H_

#include <atomic>
#include <cstdint>
#include <utility>

#include "base/host_alloc.h"

namespace kiln {

class RefObject {
 public:
  // Objects live in host memory of the runtime's allocator (host_alloc.h):
  // `new T` of a RefObject yields null when the allocator fails.
  KILN_HOST_NEW_DELETE
  RefObject() = default;
  RefObject(const RefObject&) = delete;
  RefObject& operator=(const RefObject&) = delete;

  void Retain() const { refcount_.fetch_add(1, std::memory_order_relaxed); }
  void Release() const {
    if (refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      delete this;
    }
  }
  int32_t refcount() const { return refcount_.load(std::memory_order_acquire); }

 protected:
  virtual ~RefObject() = default;

 private:
  mutable std::atomic<int32_t> refcount_{1};
};

template <typename T>
class Ref {
 public:
  Ref() = default;
  Ref(std::nullptr_t) {}  // NOLINT
  // Adopts an existing reference (does not retain).
  static Ref Adopt(T* p) {
    Ref r;
    r.p_ = p;
    return r;
  }
  // Retains `p`.
  static Ref Retain(T* p) {
    if (p) p->Retain();
    return Adopt(p);
  }
  Ref(const Ref& o) : p_(o.p_) { if (p_) p_->Retain(); }
  Ref(Ref&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  template <typename U>
  Ref(Ref<U>&& o) noexcept : p_(o.release()) {}  // NOLINT
  Ref& operator=(Ref o) noexcept { std::swap(p_, o.p_); return *this; }
  ~Ref() { if (p_) p_->Release(); }

  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  // Gives up ownership without releasing.
  T* release() { T* p = p_; p_ = nullptr; return p; }
  void reset() { Ref().swap(*this); }
  void swap(Ref& o) { std::swap(p_, o.p_); }

 private:
  T* p_ = nullptr;
};

template <typename T, typename... Args>
Ref<T> MakeRef(Args&&... args) {
  return Ref<T>::Adopt(new T(std::forward<Args>(args)...));
}

}  // namespace kiln

#endif  // KILN_BASE_REF_H_
