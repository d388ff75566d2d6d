// Blocks, fibers, barriers and warp collectives of the SIMT emulator.
//
// A block's threads are fibers on one CPU thread. The scheduler resumes every runnable thread
// in turn; a thread runs until it finishes or reaches a barrier or warp collective, where it
// parks and switches back. A __syncthreads() releases once every thread of the block has
// arrived; a warp collective completes when the last lane of its mask arrives. Anything else
// (a thread exiting while others wait at a barrier, lanes that never come) is reported as an
// error naming the kernel, the block and the threads concerned.
//
// Under AddressSanitizer every switch between stacks is announced to it (asan_switch_*), and a
// failed block is cancelled cooperatively: each parked thread is resumed once more and unwinds
// by exception from where it waits, so no stack is ever abandoned or unwound behind ASan's back.
//
// In a racecheck build every GPU thread is also a ThreadSanitizer fiber; simt/racecheck.h says
// which edges the scheduler tells TSan about, and why only those.
//
// One file for the scheduler, the barriers, the warp collectives and the launch loop: they share
// the block's state and the sanitizer hooks around every switch.
#include "ground/clock.h"
#include "ground/env.h"
#include "ground/error.h"
#include "simt/block_hooks.h"
#include "simt/counters.h"
#include "simt/emulator.h"
#include "simt/racecheck.h"
#include "simt/simt.h"

#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <deque>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

__thread uint3 threadIdx;
__thread uint3 blockIdx;
__thread uint3 blockDim;
__thread uint3 gridDim;

namespace ht::emu {

namespace ctx = boost::context;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr std::size_t kStackBytes = 256 * 1024;  // ASan's redzones make frames larger
inline void asan_start_switch(void** fake_stack, const void* bottom, std::size_t size) {
  __sanitizer_start_switch_fiber(fake_stack, bottom, size);
}
inline void asan_finish_switch(void* fake_stack, const void** bottom, std::size_t* size) {
  __sanitizer_finish_switch_fiber(fake_stack, bottom, size);
}
#else
constexpr std::size_t kStackBytes = 128 * 1024;
inline void asan_start_switch(void**, const void*, std::size_t) {}
inline void asan_finish_switch(void*, const void**, std::size_t*) {}
#endif

// Fiber stacks (mmap'd, with a guard page) are recycled per CPU thread: a launch creates one
// fiber per GPU thread, and mapping a fresh stack each time would dominate.
class StackPool {
 public:
  ~StackPool() {
    ctx::protected_fixedsize_stack allocator(kStackBytes);
    for (ctx::stack_context& sc : free_) allocator.deallocate(sc);
  }
  ctx::stack_context take() {
    if (free_.empty()) return ctx::protected_fixedsize_stack(kStackBytes).allocate();
    ctx::stack_context sc = free_.back();
    free_.pop_back();
    return sc;
  }
  void give(ctx::stack_context& sc) { free_.push_back(sc); }

 private:
  std::vector<ctx::stack_context> free_;
};
thread_local StackPool t_stacks;

thread_local ctx::stack_context t_last_stack;  // the stack the fiber just created runs on

struct PooledStack {
  ctx::stack_context allocate() { return t_last_stack = t_stacks.take(); }
  void deallocate(ctx::stack_context& sc) { t_stacks.give(sc); }
};

// Thrown inside a parked thread to unwind it when its block is abandoned.
struct Cancelled {};

enum class State { not_started, runnable, at_barrier, at_warp, at_warpgroup, at_async, done };
const char* state_name(State s) {
  switch (s) {
    case State::at_barrier: return "__syncthreads";
    case State::at_warp: return "a warp collective";
    case State::at_warpgroup: return "a warpgroup operation";
    case State::at_async: return "an asynchronous wait";
    case State::done: return "exited";
    default: return "runnable";
  }
}

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::syncwarp: return "__syncwarp";
    case Collective::shfl: return "__shfl_sync";
    case Collective::shfl_up: return "__shfl_up_sync";
    case Collective::shfl_down: return "__shfl_down_sync";
    case Collective::shfl_xor: return "__shfl_xor_sync";
    case Collective::ballot: return "__ballot_sync";
    case Collective::any: return "__any_sync";
    case Collective::all: return "__all_sync";
    case Collective::match: return "__match_sync";
    case Collective::mma_f16: return "mma.sync.m16n8k16.f16";
    case Collective::mma_bf16: return "mma.sync.m16n8k16.bf16";
    case Collective::ldmatrix_x1: return "ldmatrix.x1";
    case Collective::ldmatrix_x2: return "ldmatrix.x2";
    case Collective::ldmatrix_x4: return "ldmatrix.x4";
    case Collective::ldmatrix_x1_trans: return "ldmatrix.x1.trans";
    case Collective::ldmatrix_x2_trans: return "ldmatrix.x2.trans";
    case Collective::ldmatrix_x4_trans: return "ldmatrix.x4.trans";
  }
  return "?";
}

struct PendingCopy {
  void* dst;
  const void* src;
  int bytes, src_bytes;
};

void do_copy(const PendingCopy& c) {
  race::read(c.src, static_cast<std::size_t>(c.src_bytes));
  race::write(c.dst, static_cast<std::size_t>(c.bytes));
  std::memcpy(c.dst, c.src, static_cast<std::size_t>(c.src_bytes));
  std::memset(static_cast<std::byte*>(c.dst) + c.src_bytes, 0, static_cast<std::size_t>(c.bytes - c.src_bytes));
}

struct Thread {
  uint3 idx{};
  State state = State::not_started;
  std::vector<PendingCopy> open_group;                 // cp.async issued since the last commit
  std::deque<std::vector<PendingCopy>> committed;      // oldest first
  ctx::fiber fiber;
  const void* stack_bottom = nullptr;  // for ASan's switch annotations
  std::size_t stack_size = 0;
  void* fake_stack = nullptr;
  void* race_fiber = nullptr;  // racecheck: this thread's TSan fiber
  const std::function<bool()>* ready = nullptr;  // at_async: what it waits for (wait_until)
  const char* waiting_for = "";
};

struct Warp {
  unsigned present = 0;  // lanes that exist (the last warp of a block may be partial)
  unsigned arrived = 0;  // lanes parked in the pending collective
  unsigned mask = 0;
  Collective kind = Collective::syncwarp;
  std::array<std::uint64_t, 32> values{};
  std::array<std::uint64_t, 32> results{};  // the last completed collective's contributions
  WarpCompute compute = nullptr;            // computing collectives (mma, ldmatrix)
  std::array<LaneData, 32> lane_in{}, lane_out{};
  unsigned generation = 0;       // collectives completed (racecheck: which sync object)
  std::array<char, 2> sync{};    // racecheck: released by arriving lanes, acquired by leaving ones
};

// The 128 threads of warps 4w..4w+3, in an operation they issue together (wgmma and friends).
struct Warpgroup {
  unsigned arrived = 0;
  const char* what = "";
  unsigned generation = 0;
  std::array<char, 2> sync{};  // racecheck, as Warp::sync
};

struct Block {
  const char* kernel = "";
  uint3 index{};
  std::vector<Thread> threads;
  std::vector<Warp> warps;
  std::vector<Warpgroup> warpgroups;
  std::unique_ptr<AsyncUnit> async;  // mbarriers, TMA copies, wgmma groups (simt/hopper.cpp)
  std::size_t dynamic_shared_bytes = 0;
  unsigned at_barrier = 0, done = 0;
  int reduce_count = 0, reduce_and = 1, reduce_or = 0;     // accumulating for this barrier
  int result_count = 0, result_and = 1, result_or = 0;      // of the last released barrier
  Thread* current = nullptr;
  unsigned current_linear = 0;
  ctx::fiber scheduler;  // where a parked GPU thread switches back to
  const void* scheduler_stack_bottom = nullptr;
  std::size_t scheduler_stack_size = 0;
  void* scheduler_fake_stack = nullptr;
  bool cancelled = false;
  std::exception_ptr error;
  void* dynamic_shared = nullptr;
  // racecheck: the worker's own fiber, and the objects the edges of simt/racecheck.h go through
  void* race_scheduler = nullptr;
  unsigned barrier_generation = 0;
  std::array<char, 2> barrier_sync{};
  char start_sync = 0, end_sync = 0;

  std::string where() const {
    return fmt::format("kernel {} block ({},{},{})", kernel, index.x, index.y, index.z);
  }
  std::string thread_name(unsigned linear) const {
    const uint3 t = threads[linear].idx;
    return fmt::format("thread ({},{},{})", t.x, t.y, t.z);
  }
};

thread_local Block* t_block = nullptr;
thread_local char t_async_done = 0;  // racecheck: released by every AsyncScope, acquired after each block

Block& current_block() {
  if (!t_block || !t_block->current) fail("SIMT emulator: a device function was called outside a kernel");
  return *t_block;
}

// Parks the calling GPU thread and switches to the scheduler until it is made runnable again.
void park(Block& b, State why) {
  Thread& t = *b.current;
  t.state = why;
  race::switch_to(b.race_scheduler);
  asan_start_switch(&t.fake_stack, b.scheduler_stack_bottom, b.scheduler_stack_size);
  b.scheduler = std::move(b.scheduler).resume();
  asan_finish_switch(t.fake_stack, &b.scheduler_stack_bottom, &b.scheduler_stack_size);
  if (b.cancelled) throw Cancelled{};
}

// Switches from the scheduler into thread t until it parks or finishes.
void resume(Block& b, Thread& t) {
  race::switch_to(t.race_fiber);
  asan_start_switch(&b.scheduler_fake_stack, t.stack_bottom, t.stack_size);
  t.fiber = std::move(t.fiber).resume();
  asan_finish_switch(b.scheduler_fake_stack, nullptr, nullptr);
}

// Unwinds every parked thread of a failed block (see the comment at the top).
void cancel_parked_threads(Block& b) {
  b.cancelled = true;
  for (Thread& t : b.threads) {
    if (!t.fiber) continue;
    b.current = &t;
    resume(b, t);
  }
  b.current = nullptr;
}

std::atomic<int> g_schedule{static_cast<int>(Schedule::forward)};

Schedule schedule_from_env() {
  const std::string v = env_value("HALFTAPE_SIMT_SCHEDULE").value_or("forward");
  return v == "reverse" ? Schedule::reverse : v == "shuffle" ? Schedule::shuffled : Schedule::forward;
}

std::string describe_stall(const Block& b) {
  std::string out;
  for (std::size_t w = 0; w < b.warps.size(); ++w) {
    const Warp& warp = b.warps[w];
    if (!warp.arrived) continue;
    const unsigned missing = warp.mask & ~warp.arrived;
    out += fmt::format("; warp {} waits in {} (mask 0x{:08x}) for lanes", w, collective_name(warp.kind), warp.mask);
    for (unsigned l = 0; l < 32; ++l)
      if (missing >> l & 1u) out += fmt::format(" {} ({})", l, state_name(b.threads[w * 32 + l].state));
  }
  for (std::size_t g = 0; g < b.warpgroups.size(); ++g)
    if (b.warpgroups[g].arrived)
      out += fmt::format("; warpgroup {} waits in {} with {} of its 128 threads", g, b.warpgroups[g].what, b.warpgroups[g].arrived);
  std::unordered_map<std::string, unsigned> waits;
  for (const Thread& t : b.threads)
    if (t.state == State::at_async) ++waits[t.waiting_for];
  for (const auto& [what, count] : waits) out += fmt::format("; {} threads wait in {}", count, what);
  if (b.at_barrier) out += fmt::format("; {} threads wait at __syncthreads", b.at_barrier);
  return out;
}

// racecheck: the TSan fiber of a block's `linear`-th thread on this worker (made once, reused).
void* race_fiber(unsigned linear) {
  thread_local std::vector<void*> fibers;
  while (fibers.size() <= linear) fibers.push_back(race::create_fiber());
  return fibers[linear];
}

void run_block(Block& b, const std::function<void()>& body, Schedule order, std::uint64_t seed) {
  const auto n = static_cast<unsigned>(b.threads.size());
  std::vector<unsigned> sequence(n);
  std::iota(sequence.begin(), sequence.end(), 0u);
  if (order == Schedule::reverse) std::reverse(sequence.begin(), sequence.end());
  std::mt19937_64 shuffle_rng(seed);

  for (;;) {
    if (order == Schedule::shuffled) std::shuffle(sequence.begin(), sequence.end(), shuffle_rng);
    bool ran = false;
    for (unsigned linear : sequence) {
      Thread& t = b.threads[linear];
      if (t.state == State::at_async && (*t.ready)()) t.state = State::runnable;
      if (t.state != State::runnable && t.state != State::not_started) continue;
      ran = true;
      b.current = &t;
      b.current_linear = linear;
      threadIdx = t.idx;
      if (t.state == State::not_started) {
        t.state = State::runnable;
        t.fiber = ctx::fiber(std::allocator_arg, PooledStack{}, [&b, &t, &body](ctx::fiber&& scheduler) {
          asan_finish_switch(nullptr, &b.scheduler_stack_bottom, &b.scheduler_stack_size);
          b.scheduler = std::move(scheduler);
          race::acquire(&b.start_sync);  // the kernel starts after what came before it
          try {
            body();
            for (auto& group : t.committed)  // copies still in flight land, as on a GPU
              for (const PendingCopy& c : group) do_copy(c);
            for (const PendingCopy& c : t.open_group) do_copy(c);
            const auto linear = static_cast<unsigned>(&t - b.threads.data());
            if (linear / 128 < b.warpgroups.size() && b.warpgroups[linear / 128].arrived)
              kernel_error(fmt::format("{} issued by fewer than the four warps of warpgroup {}: this thread exits instead",
                                       b.warpgroups[linear / 128].what, linear / 128).c_str());
            if (b.async) b.async->thread_exit(linear);
          } catch (const Cancelled&) {
          } catch (...) {
            if (!b.error) b.error = std::current_exception();
          }
          t.state = State::done;
          ++b.done;
          race::release(&b.end_sync);
          race::switch_to(b.race_scheduler);
          asan_start_switch(nullptr, b.scheduler_stack_bottom, b.scheduler_stack_size);  // this stack is done
          return std::move(b.scheduler);
        });
        if constexpr (race::kEnabled) {
          t.race_fiber = race_fiber(linear);
          race::name_fiber(t.race_fiber, fmt::format("{} {}", b.where(), b.thread_name(linear)).c_str());
        }
        t.stack_bottom = static_cast<char*>(t_last_stack.sp) - t_last_stack.size;
        t.stack_size = t_last_stack.size;
      }
      resume(b, t);
      b.current = nullptr;
      if (b.error) {
        cancel_parked_threads(b);
        std::rethrow_exception(b.error);
      }
    }
    if (b.done == n) {
      if (b.async) b.async->block_end();
      return;
    }
    if (b.at_barrier > 0 && b.at_barrier + b.done == n) {
      if (b.done > 0) {
        const std::string message = fmt::format(
            "SIMT: __syncthreads() reached by only part of the block in {}: {} of {} threads arrived, {} had exited (a "
            "barrier inside a branch or after an early return)",
            b.where(), b.at_barrier, n, b.done);
        cancel_parked_threads(b);
        fail(message);
      }
      for (Thread& t : b.threads)
        if (t.state == State::at_barrier) t.state = State::runnable;
      b.at_barrier = 0;
      ++b.barrier_generation;
      count_barrier();
      b.result_count = b.reduce_count;
      b.result_and = b.reduce_and;
      b.result_or = b.reduce_or;
      b.reduce_count = 0;
      b.reduce_and = 1;
      b.reduce_or = 0;
      continue;
    }
    if (!ran && b.async) {  // in-flight work lands; waiters may go on
      bool landed = false;
      try {
        landed = b.async->progress();
      } catch (...) {
        cancel_parked_threads(b);
        throw;
      }
      if (landed) continue;
    }
    if (!ran) {
      const std::string stall = describe_stall(b);
      cancel_parked_threads(b);
      fail(fmt::format("SIMT: deadlock in {}{}", b.where(), stall));
    }
  }
}

// A pool of CPU threads for the blocks of a launch; the launching thread works too.
class Workers {
 public:
  explicit Workers(int n) {
    for (int i = 1; i < n; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~Workers() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  int size() const { return static_cast<int>(threads_.size()) + 1; }

  // Runs job(worker) on every worker, the caller included, and waits for all of them.
  void run(const std::function<void()>& job) {
    {
      std::lock_guard lock(mutex_);
      job_ = &job;
      pending_ = static_cast<int>(threads_.size());
      ++generation_;
    }
    wake_.notify_all();
    job();
    std::unique_lock lock(mutex_);
    finished_.wait(lock, [this] { return pending_ == 0; });
    job_ = nullptr;
  }

 private:
  void loop() {
    std::uint64_t seen = 0;
    for (;;) {
      const std::function<void()>* job;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        job = job_;
      }
      (*job)();
      {
        std::lock_guard lock(mutex_);
        --pending_;
      }
      finished_.notify_one();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  const std::function<void()>* job_ = nullptr;
  int pending_ = 0;
  std::uint64_t generation_ = 0;
  bool stop_ = false;
};

int configured_workers() {
  if (const std::optional<std::string> s = env_value("HALFTAPE_SIMT_THREADS")) return std::stoi(*s);
  return std::max(1u, std::thread::hardware_concurrency());
}

Workers& workers() {
  static Workers pool(configured_workers());
  return pool;
}

std::mutex g_launch_mutex;

}  // namespace

int worker_count() { return workers().size(); }

int reported_sm_count() {
  if (const std::optional<std::string> s = env_value("HALFTAPE_SIMT_SMS")) return std::stoi(*s);  // checked: ground/env.cpp
  return worker_count();
}

namespace {
thread_local double t_device_work_seconds = 0;
}  // namespace

double device_work_cpu_seconds() { return t_device_work_seconds; }
DeviceWorkTimer::DeviceWorkTimer() : start_(thread_cpu_seconds()) {}
DeviceWorkTimer::~DeviceWorkTimer() { t_device_work_seconds += thread_cpu_seconds() - start_; }

void set_schedule(Schedule s) { g_schedule = static_cast<int>(s); }
Schedule schedule() { return static_cast<Schedule>(g_schedule.load()); }

const Arch& arch() {
  static const Arch chosen = [] {
    if (env_value("HALFTAPE_SIMT_ARCH").value_or("sm_80") == "sm_90") return Arch{"sm_90", 9, 0, 227 * 1024};
    return Arch{"sm_80", 8, 0, 163 * 1024};
  }();
  return chosen;
}

namespace {
std::mutex g_attribute_mutex;
std::unordered_map<const void*, std::size_t> g_dynamic_shared_optin;  // kernel -> bytes allowed
}  // namespace

void allow_dynamic_shared(const void* kernel, std::size_t bytes) {
  HT_CHECK(bytes <= arch().max_dynamic_shared, "SIMT: cudaFuncSetAttribute(MaxDynamicSharedMemorySize, {}) fails on {}: "
           "at most {} bytes a block", bytes, arch().name, arch().max_dynamic_shared);
  std::lock_guard lock(g_attribute_mutex);
  g_dynamic_shared_optin[kernel] = bytes;
}

void launch(const char* kernel, const void* function, dim3 grid, dim3 block, std::size_t dynamic_shared_bytes,
            const std::function<void()>& thread_body, bool counted) {
  static const bool env_applied = [] {
    set_schedule(schedule_from_env());
    return true;
  }();
  (void)env_applied;
  const std::uint64_t threads_per_block = std::uint64_t{block.x} * block.y * block.z;
  const std::uint64_t blocks = std::uint64_t{grid.x} * grid.y * grid.z;
  HT_CHECK(threads_per_block >= 1 && threads_per_block <= 1024 && block.z <= 64,
           "SIMT: kernel {} launched with block ({},{},{}): 1 to 1024 threads, z <= 64", kernel, block.x, block.y, block.z);
  HT_CHECK(grid.x <= 0x7fffffffu && grid.y <= 65535 && grid.z <= 65535,
           "SIMT: kernel {} launched with grid ({},{},{}): x <= 2^31 - 1, y and z <= 65535", kernel, grid.x, grid.y, grid.z);
  if (dynamic_shared_bytes > kDefaultDynamicShared) {
    std::size_t allowed = kDefaultDynamicShared;
    {
      std::lock_guard lock(g_attribute_mutex);
      if (const auto it = g_dynamic_shared_optin.find(function); it != g_dynamic_shared_optin.end()) allowed = it->second;
    }
    HT_CHECK(dynamic_shared_bytes <= allowed, "SIMT: kernel {} asks for {} bytes of dynamic shared memory, more than the {} "
             "it may use ({}: above 48 KiB a kernel must opt in with cudaFuncSetAttribute(MaxDynamicSharedMemorySize))",
             kernel, dynamic_shared_bytes, allowed, arch().name);
  }
  if (blocks == 0) fail(fmt::format("SIMT: kernel {} launched with an empty grid ({},{},{})", kernel, grid.x, grid.y, grid.z));
  if (capturing()) {  // a CUDA graph is being captured: record the launch, arguments and all
    record_operation([kernel, function, grid, block, dynamic_shared_bytes, thread_body, counted] {
      launch(kernel, function, grid, block, dynamic_shared_bytes, thread_body, counted);
    });
    return;
  }

  const DeviceWorkTimer timer;
  std::lock_guard launch_lock(g_launch_mutex);
  const Schedule order = schedule();
  std::atomic<std::uint64_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr first_error;
  std::atomic<bool> failed{false};
  LaunchCounting* const counting = counted ? begin_counted_launch(kernel, blocks, threads_per_block, dynamic_shared_bytes) : nullptr;
  // a counted launch may run a sample of its blocks (simt/counters.h, set_block_sample)
  const std::uint64_t sample = counting ? block_sample() : 0;
  const std::uint64_t to_run = sample > 0 && sample < blocks ? sample : blocks;

  const std::function<void()> job = [&] {
    // Per-worker block state, reused across the blocks this worker runs.
    // 1024-byte aligned, as the 128-byte swizzle's pattern repeats (simt/hopper.cpp).
    const std::unique_ptr<std::byte, void (*)(std::byte*)> dynamic_shared(
        static_cast<std::byte*>(::operator new(std::max<std::size_t>(1, dynamic_shared_bytes), std::align_val_t{1024})),
        [](std::byte* p) { ::operator delete(p, std::align_val_t{1024}); });
    for (std::uint64_t i; !failed && (i = next.fetch_add(1)) < to_run;) {
      const std::uint64_t linear = to_run == blocks ? i : i * blocks / to_run;  // a sample: evenly spaced
      Block b;
      b.kernel = kernel;
      b.index = {static_cast<unsigned>(linear % grid.x), static_cast<unsigned>(linear / grid.x % grid.y),
                 static_cast<unsigned>(linear / (std::uint64_t{grid.x} * grid.y))};
      b.threads.resize(threads_per_block);
      for (std::uint64_t t = 0; t < threads_per_block; ++t)
        b.threads[t].idx = {static_cast<unsigned>(t % block.x), static_cast<unsigned>(t / block.x % block.y),
                            static_cast<unsigned>(t / (std::uint64_t{block.x} * block.y))};
      b.warps.resize((threads_per_block + 31) / 32);
      b.warpgroups.resize(threads_per_block / 128);
      for (std::uint64_t w = 0; w < b.warps.size(); ++w) {
        const std::uint64_t lanes = std::min<std::uint64_t>(32, threads_per_block - w * 32);
        b.warps[w].present = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
      }
      // Uninitialised shared memory reads as NaN / -1, so a missing store shows up in results.
      std::memset(dynamic_shared.get(), 0xff, dynamic_shared_bytes);
      b.dynamic_shared = dynamic_shared.get();
      b.dynamic_shared_bytes = dynamic_shared_bytes;
      blockIdx = b.index;
      blockDim = {block.x, block.y, block.z};
      gridDim = {grid.x, grid.y, grid.z};
      t_block = &b;
      b.race_scheduler = race::current_fiber();
      race::release(&b.start_sync);  // the host's writes and this worker's earlier blocks, to every thread
      if (counting) count_block_begin(counting, b.dynamic_shared, dynamic_shared_bytes);
      try {
        run_block(b, thread_body, order, linear * 0x9e3779b97f4a7c15ull + 1);
        if (counting) count_block_end();
      } catch (...) {
        if (counting) count_block_begin(nullptr, nullptr, 0);
        std::lock_guard lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
        failed = true;
      }
      if (b.async) {
        const AsyncScope scope;
        b.async.reset();
      }
      race::acquire(&t_async_done);
      race::acquire(&b.end_sync);  // ... and on to the host, through the workers' mutex
      t_block = nullptr;
    }
  };
  workers().run(job);
  if (first_error) {
    if (counting) discard_counted_launch(counting);
    std::rethrow_exception(first_error);
  }
  if (counting) end_counted_launch(counting);
}

// ---- device-side entry points (declared in simt/simt.h) ------------------------------------

void block_barrier() {
  Block& b = current_block();
  const unsigned generation = b.barrier_generation;
  race::release(&b.barrier_sync[generation % 2]);
  ++b.at_barrier;
  park(b, State::at_barrier);
  race::acquire(&b.barrier_sync[generation % 2]);
}

int block_barrier_reduce(int predicate, int op) {
  Block& b = current_block();
  b.reduce_count += predicate != 0;
  b.reduce_and &= predicate != 0;
  b.reduce_or |= predicate != 0;
  block_barrier();
  return op == 0 ? b.result_count : (op == 1 ? b.result_and : b.result_or);
}

unsigned lane_id() { return current_block().current_linear % 32; }

unsigned active_lanes() {
  Block& b = current_block();
  const unsigned warp = b.current_linear / 32;
  unsigned mask = 0;
  for (unsigned l = 0; l < 32 && warp * 32 + l < b.threads.size(); ++l)
    if (b.threads[warp * 32 + l].state != State::done) mask |= 1u << l;
  return mask;
}

void* dynamic_shared_memory() { return current_block().dynamic_shared; }

void kernel_error(const char* what) {
  if (t_block && !t_block->current) fail(fmt::format("SIMT: {} in {}", what, t_block->where()));  // the scheduler's own work
  Block& b = current_block();
  fail(fmt::format("SIMT: {} in {} {}", what, b.where(), b.thread_name(b.current_linear)));
}

namespace {

// Parks the calling lane in warp collective `kind` until every lane of `mask` has arrived; the
// last lane to arrive runs `complete` (on the warp's data) and releases the others.
template <class Complete> void warp_arrive(Block& b, Collective kind, unsigned mask, Complete&& complete) {
  const unsigned lane = b.current_linear % 32;
  Warp& w = b.warps[b.current_linear / 32];
  if (!(mask >> lane & 1u))
    kernel_error(fmt::format("{} with mask 0x{:08x}, which leaves out the calling lane {}", collective_name(kind), mask, lane).c_str());
  if (mask & ~w.present)
    kernel_error(fmt::format("{} with mask 0x{:08x} names lanes that do not exist (the warp has 0x{:08x})",
                             collective_name(kind), mask, w.present).c_str());
  if (w.arrived == 0) {
    w.mask = mask;
    w.kind = kind;
  } else if (w.mask != mask || w.kind != kind) {
    kernel_error(fmt::format("divergent warp collectives: lane {} calls {} (mask 0x{:08x}) while other lanes wait in {} "
                             "(mask 0x{:08x})",
                             lane, collective_name(kind), mask, collective_name(w.kind), w.mask).c_str());
  }
  for (unsigned l = 0; l < 32; ++l)
    if ((mask >> l & 1u) && b.threads[(b.current_linear / 32) * 32 + l].state == State::done)
      kernel_error(fmt::format("{}: lane {} of the mask has already exited", collective_name(kind), l).c_str());
  w.arrived |= 1u << lane;
  const unsigned generation = w.generation;
  // mma and ldmatrix exchange registers and read shared memory; like CUDA, they order nothing.
  const bool orders_memory = kind < Collective::mma_f16;
  if (orders_memory) race::release(&w.sync[generation % 2]);
  if (w.arrived == mask) {  // the last lane: complete the collective and release the others
    complete(w);
    w.arrived = 0;
    ++w.generation;
    const unsigned base = (b.current_linear / 32) * 32;
    for (unsigned l = 0; l < 32; ++l)
      if ((mask >> l & 1u) && l != lane) b.threads[base + l].state = State::runnable;
  } else {
    park(b, State::at_warp);
  }
  if (orders_memory) race::acquire(&w.sync[generation % 2]);
}

}  // namespace

const std::uint64_t* warp_collective(Collective kind, unsigned mask, std::uint64_t value) {
  Block& b = current_block();
  Warp& w = b.warps[b.current_linear / 32];
  w.values[b.current_linear % 32] = value;
  warp_arrive(b, kind, mask, [](Warp& warp) { warp.results = warp.values; });
  return w.results.data();
}

const LaneData& warp_compute(Collective kind, unsigned mask, const void* in, std::size_t bytes, WarpCompute compute) {
  Block& b = current_block();
  const unsigned lane = b.current_linear % 32;
  Warp& w = b.warps[b.current_linear / 32];
  std::memcpy(w.lane_in[lane].bytes, in, std::min(bytes, kLaneBytes));
  warp_arrive(b, kind, mask, [mask, compute](Warp& warp) { compute(warp.lane_in.data(), warp.lane_out.data(), mask); });
  return w.lane_out[lane];
}

void cp_async(void* dst, const void* src, int bytes, int src_bytes) {
  Thread& t = *current_block().current;
  if ((bytes != 4 && bytes != 8 && bytes != 16) || src_bytes < 0 || src_bytes > bytes)
    kernel_error(fmt::format("cp.async of {} bytes ({} from the source): sizes are 4, 8 or 16", bytes, src_bytes).c_str());
  if (reinterpret_cast<std::uintptr_t>(dst) % static_cast<unsigned>(bytes) ||
      (src_bytes > 0 && reinterpret_cast<std::uintptr_t>(src) % static_cast<unsigned>(bytes)))
    kernel_error(fmt::format("cp.async of {} bytes from {} to {}: both addresses must be {}-byte aligned", bytes, src, dst, bytes).c_str());
  race::read(src, static_cast<std::size_t>(src_bytes));  // in flight from here to the wait that lands it
  race::write(dst, static_cast<std::size_t>(bytes));
  {
    const AsyncCopyAccess async;  // in flight until its wait, not a load of the lane's run
    count_access(__builtin_return_address(0), src, static_cast<unsigned>(src_bytes), Access::load);
    count_access(__builtin_return_address(0), dst, static_cast<unsigned>(bytes), Access::store);
  }
  t.open_group.push_back({dst, src, bytes, src_bytes});
}

void cp_async_commit() {
  Thread& t = *current_block().current;
  t.committed.push_back(std::move(t.open_group));
  t.open_group.clear();
}

void cp_async_wait(int newest_groups_left_pending) {
  Thread& t = *current_block().current;
  if (counting() && static_cast<int>(t.committed.size()) > newest_groups_left_pending) {
    std::uint64_t in_flight = 0;  // every group committed and not yet waited for
    for (const auto& group : t.committed)
      for (const PendingCopy& c : group) in_flight += static_cast<std::uint64_t>(c.src_bytes);
    count_async_wait(in_flight);
  }
  while (static_cast<int>(t.committed.size()) > newest_groups_left_pending) {
    for (const PendingCopy& c : t.committed.front()) do_copy(c);
    t.committed.pop_front();
  }
}

// ---- hooks for asynchronous units (simt/block_hooks.h) -------------------------------------

namespace {
void* async_fiber() {
  thread_local void* fiber = race::create_fiber();
  return fiber;
}
}  // namespace

AsyncScope::AsyncScope() : caller_(race::current_fiber()) { race::switch_to(async_fiber()); }
AsyncScope::~AsyncScope() {
  race::release(&t_async_done);  // the host, after the block, sees the units' bookkeeping (error messages too)
  race::switch_to(caller_);
}

AsyncUnit& block_async(const std::function<std::unique_ptr<AsyncUnit>()>& make) {
  Block& b = current_block();
  if (!b.async) b.async = make();
  return *b.async;
}

void wait_until(const char* what, const std::function<bool()>& ready) {
  if (ready()) return;
  Block& b = current_block();
  b.current->ready = &ready;
  b.current->waiting_for = what;
  park(b, State::at_async);
  b.current->ready = nullptr;
}

unsigned thread_linear() { return current_block().current_linear; }
unsigned block_threads() { return static_cast<unsigned>(current_block().threads.size()); }

std::byte* shared_window(std::size_t* bytes) {
  Block& b = current_block();
  *bytes = b.dynamic_shared_bytes;
  return static_cast<std::byte*>(b.dynamic_shared);
}

void warpgroup_collective(const char* what, const std::function<void()>& complete) {
  Block& b = current_block();
  const unsigned group = b.current_linear / 128, base = group * 128;
  if (group >= b.warpgroups.size())
    kernel_error(fmt::format("{} issued by fewer than the four warps of a warpgroup: warp {} is in a warpgroup the block "
                             "({} threads) does not fill", what, b.current_linear / 32, b.threads.size()).c_str());
  Warpgroup& g = b.warpgroups[group];
  for (unsigned l = 0; l < 128; ++l)
    if (b.threads[base + l].state == State::done)
      kernel_error(fmt::format("{} issued by fewer than the four warps of warpgroup {}: {} has exited", what, group,
                               b.thread_name(base + l)).c_str());
  if (g.arrived == 0) {
    g.what = what;
  } else if (std::strcmp(g.what, what) != 0) {
    kernel_error(fmt::format("divergent warpgroup operations: {} while other threads of warpgroup {} wait in {}", what, group,
                             g.what).c_str());
  }
  const unsigned generation = g.generation;
  race::release(&g.sync[generation % 2]);
  if (++g.arrived == 128) {
    race::acquire(&g.sync[generation % 2]);  // what every thread did before arriving ...
    complete();
    race::release(&g.sync[generation % 2]);  // ... and what the operation did, before any goes on
    g.arrived = 0;
    ++g.generation;
    for (unsigned l = 0; l < 128; ++l)
      if (base + l != b.current_linear) b.threads[base + l].state = State::runnable;
  } else {
    park(b, State::at_warpgroup);
  }
  race::acquire(&g.sync[generation % 2]);
}

unsigned shuffle_source(Collective kind, unsigned lane, int arg, int width) {
  const auto w = static_cast<unsigned>(width);
  const unsigned segment = lane & ~(w - 1u);
  switch (kind) {
    case Collective::shfl: return segment + (static_cast<unsigned>(arg) & (w - 1u));
    case Collective::shfl_up: return (lane - segment) >= static_cast<unsigned>(arg) ? lane - static_cast<unsigned>(arg) : lane;
    case Collective::shfl_down: return (lane - segment) + static_cast<unsigned>(arg) < w ? lane + static_cast<unsigned>(arg) : lane;
    case Collective::shfl_xor: {
      const unsigned src = lane ^ static_cast<unsigned>(arg);
      return (src & ~(w - 1u)) == segment ? src : lane;
    }
    default: return lane;
  }
}

}  // namespace ht::emu
