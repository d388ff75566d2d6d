#include "simt/runtime.h"

#include "ground/error.h"
#include "simt/block_hooks.h"
#include "simt/emulator.h"
#include "simt/foreign_hooks.h"

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <vector>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <string_view>

namespace ht::emu {

namespace {

constexpr std::align_val_t kAlignment{256};

struct Emulated {
  std::mutex mutex;
  std::map<const std::byte*, std::size_t> allocations;  // device allocations: base -> bytes
  std::size_t in_use = 0;
};
Emulated& emulated() {
  static Emulated e;
  return e;
}

// A stream: the host work it holds back (only on a lagging stream), counted as it is queued and as
// it completes. The watchdog's thread queries events while the main thread runs the work, so the
// counters are read and written under g_streams_mutex; the work itself runs outside it.
struct StreamState {
  bool lagging = false;
  std::deque<std::function<void()>> pending;
  std::uint64_t queued = 0, completed = 0;
};
std::mutex g_streams_mutex;
std::set<StreamState*> g_streams;

struct EventState {
  std::chrono::steady_clock::time_point time;
  StreamState* stream = nullptr;  // recorded on, after `target` pieces of its held-back work
  std::uint64_t target = 0;
};

StreamState* stream_state(cudaStream_t s) { return reinterpret_cast<StreamState*>(s); }

// Runs `s`'s held-back work until `upto` pieces of it have completed (all of it by default).
void run_held_back(StreamState* s, std::uint64_t upto = ~std::uint64_t{0}) {
  if (!s) return;
  for (;;) {
    std::function<void()> work;
    {
      std::lock_guard lock(g_streams_mutex);
      if (s->completed >= upto || s->pending.empty()) return;
      work = std::move(s->pending.front());
      s->pending.pop_front();
    }
    work();
    std::lock_guard lock(g_streams_mutex);
    ++s->completed;
  }
}

bool event_done(const EventState* e) {
  std::lock_guard lock(g_streams_mutex);
  return !e->stream || e->stream->completed >= e->target;
}

// The open capture, if any: what the stream was asked to do, in order.
struct Capture {
  std::vector<std::function<void()>> operations;
  bool invalidated = false;
  const char* invalidated_by = "";
};
std::mutex g_capture_mutex;
std::unique_ptr<Capture> g_capture;

struct Graph {
  std::vector<std::function<void()>> operations;
};

// A synchronising call while capturing: an error, and the capture cannot be completed.
bool refuse_during_capture(const char* call) {
  std::lock_guard lock(g_capture_mutex);
  if (!g_capture) return false;
  g_capture->invalidated = true;
  g_capture->invalidated_by = call;
  return true;
}

// Is [p, p + bytes) inside one live device allocation?
bool is_device_range(const void* p, std::size_t bytes) {
  auto* b = static_cast<const std::byte*>(p);
  std::lock_guard lock(emulated().mutex);
  auto& allocs = emulated().allocations;
  auto it = allocs.upper_bound(b);
  if (it == allocs.begin()) return false;
  --it;
  return b >= it->first && b + bytes <= it->first + it->second;
}

}  // namespace

std::vector<std::pair<std::uintptr_t, std::uintptr_t>> device_allocation_ranges() {
  std::lock_guard lock(emulated().mutex);
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> ranges;
  ranges.reserve(emulated().allocations.size());
  for (const auto& [base, bytes] : emulated().allocations)
    ranges.emplace_back(reinterpret_cast<std::uintptr_t>(base), reinterpret_cast<std::uintptr_t>(base) + bytes);
  return ranges;
}

namespace {

void check_device(const char* call, const char* which, const void* p, std::size_t bytes) {
  if (bytes && !is_device_range(p, bytes))
    fail(fmt::format("SIMT: {}: {} {} (+{} bytes) is not inside a device allocation", call, which, p, bytes));
}

void check_copy(const char* call, void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  if (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice) check_device(call, "destination", dst, bytes);
  if (kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice) check_device(call, "source", src, bytes);
}

}  // namespace

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device != 0) return cudaErrorInvalidDevice;
  std::memset(prop, 0, sizeof(*prop));
  std::strncpy(prop->name, "SIMT emulator", sizeof(prop->name) - 1);
  prop->major = arch().major;  // HALFTAPE_SIMT_ARCH
  prop->minor = arch().minor;
  prop->multiProcessorCount = reported_sm_count();  // grid-stride and persistent grids are sized by it
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  prop->sharedMemPerBlock = kDefaultDynamicShared;  // without the opt-in
  prop->sharedMemPerBlockOptin = arch().max_dynamic_shared;
  prop->totalGlobalMem = std::size_t{8} << 30;
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* version) {
  *version = 0;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* version) {
  *version = CUDART_VERSION;
  return cudaSuccess;
}
cudaError_t cudaMemGetInfo(std::size_t* free_bytes, std::size_t* total_bytes) {
  *total_bytes = std::size_t{8} << 30;
  std::lock_guard lock(emulated().mutex);
  *free_bytes = *total_bytes > emulated().in_use ? *total_bytes - emulated().in_use : 0;
  return cudaSuccess;
}

// Exact-size allocations (no rounding), so AddressSanitizer sees the real bounds.
cudaError_t cudaMalloc(void** ptr, std::size_t bytes) {
  void* p = ::operator new(std::max<std::size_t>(bytes, 1), kAlignment, std::nothrow);
  if (!p) return cudaErrorMemoryAllocation;
  std::lock_guard lock(emulated().mutex);
  emulated().allocations[static_cast<std::byte*>(p)] = std::max<std::size_t>(bytes, 1);
  emulated().in_use += bytes;
  *ptr = p;
  return cudaSuccess;
}
cudaError_t cudaFree(void* ptr) {
  if (!ptr) return cudaSuccess;
  {
    std::lock_guard lock(emulated().mutex);
    auto it = emulated().allocations.find(static_cast<std::byte*>(ptr));
    if (it == emulated().allocations.end()) return cudaErrorInvalidValue;
    emulated().in_use -= it->second;
    emulated().allocations.erase(it);
  }
  ::operator delete(ptr, kAlignment);
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** ptr, std::size_t bytes) {
  *ptr = ::operator new(std::max<std::size_t>(bytes, 1), kAlignment, std::nothrow);
  return *ptr ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFreeHost(void* ptr) {
  ::operator delete(ptr, kAlignment);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  if (refuse_during_capture("cudaMemcpy")) return cudaErrorStreamCaptureUnsupported;
  check_copy("cudaMemcpy", dst, src, bytes, kind);
  if (bytes) std::memmove(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  check_copy("cudaMemcpyAsync", dst, src, bytes, kind);
  reach_stream(stream);
  if (capturing()) {
    if (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToHost) {
      // Legal on a GPU only with pinned host memory that outlives the graph; the engine never
      // needs it inside a step, so the emulator refuses it rather than guess.
      refuse_during_capture("cudaMemcpyAsync to or from the host");
      return cudaErrorStreamCaptureUnsupported;
    }
    record_operation([dst, src, bytes] { if (bytes) std::memmove(dst, src, bytes); });
    return cudaSuccess;
  }
  const DeviceWorkTimer timer;
  if (bytes) std::memmove(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemset(void* dst, int value, std::size_t bytes) {
  if (refuse_during_capture("cudaMemset")) return cudaErrorStreamCaptureUnsupported;
  check_device("cudaMemset", "destination", dst, bytes);
  if (bytes) std::memset(dst, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* dst, int value, std::size_t bytes, cudaStream_t stream) {
  check_device("cudaMemsetAsync", "destination", dst, bytes);
  reach_stream(stream);
  if (capturing()) {
    record_operation([dst, value, bytes] { if (bytes) std::memset(dst, value, bytes); });
    return cudaSuccess;
  }
  const DeviceWorkTimer timer;
  if (bytes) std::memset(dst, value, bytes);
  return cudaSuccess;
}

// Streams: all work is done when its call returns, but for the held-back host work of a lagging
// stream (simt/emulator.h).
cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  auto* s = new StreamState;
  std::lock_guard lock(g_streams_mutex);
  g_streams.insert(s);
  *stream = reinterpret_cast<cudaStream_t>(s);
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) { return emu::cudaStreamCreate(stream); }
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  run_held_back(stream_state(stream));  // as a GPU finishes a destroyed stream's work
  std::lock_guard lock(g_streams_mutex);
  g_streams.erase(stream_state(stream));
  delete stream_state(stream);
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (refuse_during_capture("cudaStreamSynchronize")) return cudaErrorStreamCaptureUnsupported;
  run_held_back(stream_state(stream));
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t event, unsigned) {
  // The waiting stream's later work needs the work before the event: run it now.
  if (capturing()) return cudaSuccess;  // (an edge of the graph being captured)
  const auto* e = reinterpret_cast<EventState*>(event);
  run_held_back(e->stream, e->target);
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  *event = reinterpret_cast<cudaEvent_t>(new EventState{std::chrono::steady_clock::now()});
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned) { return emu::cudaEventCreate(event); }
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  auto* e = reinterpret_cast<EventState*>(event);
  // While capturing, a record is an ordering edge of the graph between streams, not a node of it
  // (CUDA makes a node only of cudaEventRecordWithFlags(..., cudaEventRecordExternal)): nothing to
  // replay, and the event may be destroyed before the graph is.
  if (capturing()) return cudaSuccess;
  e->time = std::chrono::steady_clock::now();
  StreamState* s = stream_state(stream);
  std::lock_guard lock(g_streams_mutex);
  e->stream = s;
  e->target = s ? s->queued : 0;
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (refuse_during_capture("cudaEventSynchronize")) return cudaErrorStreamCaptureUnsupported;
  const auto* e = reinterpret_cast<EventState*>(event);
  run_held_back(e->stream, e->target);
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (refuse_during_capture("cudaEventQuery")) return cudaErrorStreamCaptureUnsupported;
  return event_done(reinterpret_cast<EventState*>(event)) ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  *ms = std::chrono::duration<float, std::milli>(reinterpret_cast<EventState*>(end)->time -
                                                 reinterpret_cast<EventState*>(start)->time)
            .count();
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete reinterpret_cast<EventState*>(event);
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() {
  if (refuse_during_capture("cudaDeviceSynchronize")) return cudaErrorStreamCaptureUnsupported;
  std::vector<StreamState*> all;
  {
    std::lock_guard lock(g_streams_mutex);
    all.assign(g_streams.begin(), g_streams.end());
  }
  for (StreamState* s : all) run_held_back(s);
  return cudaSuccess;
}

void make_stream_lag(cudaStream_t stream) {
  std::lock_guard lock(g_streams_mutex);
  if (stream) stream_state(stream)->lagging = true;
}

void reach_stream(cudaStream_t stream) {
  if (!capturing()) run_held_back(stream_state(stream));
}

cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode) {
  std::lock_guard lock(g_capture_mutex);
  if (g_capture) return cudaErrorIllegalState;
  g_capture = std::make_unique<Capture>();
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t* graph) {
  std::lock_guard lock(g_capture_mutex);
  if (!g_capture) return cudaErrorIllegalState;
  std::unique_ptr<Capture> c = std::move(g_capture);
  *graph = nullptr;
  if (c->invalidated) return cudaErrorStreamCaptureInvalidated;
  *graph = reinterpret_cast<cudaGraph_t>(new Graph{std::move(c->operations)});
  return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t, cudaStreamCaptureStatus* status) {
  std::lock_guard lock(g_capture_mutex);
  *status = !g_capture ? cudaStreamCaptureStatusNone
                       : (g_capture->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive);
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  if (!graph) return cudaErrorInvalidValue;
  *exec = reinterpret_cast<cudaGraphExec_t>(new Graph(*reinterpret_cast<Graph*>(graph)));
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (refuse_during_capture("cudaGraphLaunch")) return cudaErrorStreamCaptureUnsupported;
  reach_stream(stream);
  for (const auto& op : reinterpret_cast<Graph*>(exec)->operations) op();
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete reinterpret_cast<Graph*>(exec);
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete reinterpret_cast<Graph*>(graph);
  return cudaSuccess;
}
cudaError_t cudaGetLastError() { return cudaSuccess; }

bool capturing() {
  std::lock_guard lock(g_capture_mutex);
  return g_capture != nullptr;
}

void record_operation(std::function<void()> op) {
  std::lock_guard lock(g_capture_mutex);
  if (g_capture) g_capture->operations.push_back(std::move(op));
}

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    default: return "unknown error";
  }
}

}  // namespace ht::emu

extern "C" {

__attribute__((visibility("default"))) int ht_emu_launch_host_func(void* stream, void (*fn)(void*), void* arg) {
  if (ht::emu::capturing()) {
    ht::emu::record_operation([fn, arg] { fn(arg); });
    return 0;
  }
  auto* s = static_cast<ht::emu::StreamState*>(stream);
  {
    std::lock_guard lock(ht::emu::g_streams_mutex);
    if (s && s->lagging) {  // held back until something needs it
      s->pending.emplace_back([fn, arg] { fn(arg); });
      ++s->queued;
      return 2;
    }
  }
  ht::emu::run_held_back(s);  // stream order: what the stream holds back comes first
  fn(arg);
  return 1;
}

__attribute__((visibility("default"))) std::size_t ht_emu_device_bytes(const void* p) {
  auto* b = static_cast<const std::byte*>(p);
  std::lock_guard lock(ht::emu::emulated().mutex);
  auto& allocs = ht::emu::emulated().allocations;
  auto it = allocs.upper_bound(b);
  if (it == allocs.begin()) return 0;
  --it;
  return b >= it->first && b < it->first + it->second ? static_cast<std::size_t>(it->first + it->second - b) : 0;
}

}
