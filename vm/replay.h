// Recorded command buffers: record once per argument binding set, replay.
//
// A function marked static_commands (its command sequence does not depend on
// run-time values: compiler/analysis/command_sequence.h, checked at load by
// vm/static_commands.h) submits exactly one command buffer, and everything
// that command buffer binds is an argument, an output storage, a global or
// constant, or a buffer returned by an ownership import (allocate_cached,
// take_or_allocate, take_or_clone). Its i32 values and branches follow from
// constants and from those imports' results. So if, on a later invocation,
//   1. each argument names the same buffer at the same byte offset (and a
//      consumed one is owned or not, as before), and each result's output
//      storage likewise (or is absent again): the *binding set*; and
//   2. the ownership imports, called again in the recorded order with the
//      recorded operands, return the same buffers (the *guards*: a cached
//      slot whose buffer the app still holds hands out another one),
// then interpreting the bytecode again would record the very same commands.
// The context instead resubmits the recorded command buffer (one
// vkQueueSubmit: no interpretation, no vkCmd*, no descriptor updates) and
// returns views of the recorded result buffers. Otherwise it interprets (and
// records) as usual.
//
// Per function, at most kMaxRecordingsPerFunction recordings are kept (e.g.
// results that ping-pong between a cached slot's two buffers, or input
// tensors that alternate); the least recently used one not in flight is
// replaced. A recording is submitted at most once at a time: while its last
// submission is in flight (asynchronous chains) another recording, or a
// fresh interpretation, is used.
//
// Holders: a recording's command buffer retains every buffer it uses (one
// reference each); like in-flight work, those references are queue-ordered
// before any later submission, so allocate_cached and the consume rules
// discount them (Context::RecordingHolders). A recording whose argument or
// output storage buffer nobody else holds any more is dropped at the next
// invoke or kiln_context_collect (the buffer is then freed: queue-ordered
// when in flight), so recordings keep no application memory alive.
//
// A recording is kept only when the run submitted one command buffer, every
// key buffer (arguments, output storage, guard and result buffers) is
// retained by it (so pointer comparison is sound: none of them can be freed
// and its address reused while the recording exists), no ownership import
// allocated a fresh buffer and no result needed a copy into its output
// storage. Counters: Stats::command_buffer_recordings (kept),
// command_buffer_replays; a replay adds the recording's dispatches,
// barriers, copies and fills to the stats again, as they run again.
#ifndef KILN_VM_REPLAY_H_
#define KILN_VM_REPLAY_H_

#include <cstdint>
#include <vector>

#include "base/ref.h"
#include "hal/api.h"
#include "vm/hal_module.h"
#include "vm/value.h"

namespace kiln::vm {

struct Recording {
  KILN_HOST_NEW_DELETE_NEVER_NULL
  static constexpr size_t kMaxRecordingsPerFunction = 4;

  uint32_t module = 0;
  uint32_t function = 0;
  // The binding set.
  struct Key {
    const hal::Buffer* buffer = nullptr;  // null: no output storage
    uint64_t offset = 0;
    bool owned = false;  // a consumed argument owned by the call
  };
  HostVector<Key> args;
  HostVector<Key> storage;  // per result
  // An ownership import of the recorded run, in call order.
  struct Guard {
    HalImport id = HalImport::kCount;
    int32_t a = 0, b = 0, c = 0;  // allocate_cached: slot, size, kind;
                                  // take_or_allocate: argument, size, kind;
                                  // take_or_clone: argument
    const hal::Buffer* buffer = nullptr;  // what it returned
    Ref<hal::Buffer> held;  // replay scratch: held like the register held it
  };
  HostVector<Guard> guards;
  // Each result: a view of a recorded buffer (retained by `cb`).
  struct Result {
    hal::Buffer* buffer = nullptr;
    uint64_t offset = 0;
    DType dtype = DType::kInvalid;
    int64_t dims[kMaxRank] = {};
    size_t rank = 0;
  };
  HostVector<Result> results;
  Ref<CommandBufferState> cb;  // persistent (ended; resubmitted)
  uint64_t last_value = 0;     // timepoint of its last submission
  uint64_t last_used = 0;      // replacement order
  // Stats of its commands (added again on every replay).
  uint64_t dispatches = 0, barriers = 0, copies = 0, copy_bytes = 0, fills = 0;
  // Recording run only: false once the run did something a replay could
  // not reproduce (a fresh allocation, a second submission, ...).
  bool stable = true;
};

}  // namespace kiln::vm

#endif  // KILN_VM_REPLAY_H_
