// The counters of simt/counters.h: accesses gathered per block, made into warp-level requests at
// each barrier and at the block's end, and summed per kernel.
#include "simt/counters.h"

#include "ground/error.h"
#include "simt/block_hooks.h"
#include "simt/simt.h"

#include <link.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace ht::emu {

namespace {

constexpr unsigned kSectorBytes = 32;
constexpr unsigned kBanks = 32;
constexpr unsigned kPhaseBytes = 128;  // what shared memory serves in one wavefront

enum class Space : std::uint8_t { global, shared };

struct Record {
  const void* site;
  std::uintptr_t address;
  std::uint32_t bytes;
  std::uint16_t linear;  // the thread's index in its block
  Access kind;
  Space space;
  std::uint32_t visit = 0;  // the lane's n-th visit of (site, kind): filled at the flush
};

}  // namespace

struct LaunchCounting {
  KernelCounters figures;
  std::uint64_t ran_blocks = 0;  // of figures.blocks (fewer where the launch is sampled)
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> device;  // sorted allocation ranges
  std::mutex mutex;
  std::unordered_set<std::uint64_t> read_sectors, written_sectors;
};

namespace {

// The executable's static thread-local block, where static __shared__ arrays live here
// (x86-64: just below the thread pointer), minus the built-in variables that share it.
struct TlsBlock {
  std::uintptr_t begin = 0, end = 0;
};
TlsBlock executable_tls_block() {
  struct Found {
    std::size_t memsz = 0, align = 1;
  } found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        auto* f = static_cast<Found*>(out);
        for (int i = 0; i < info->dlpi_phnum; ++i)
          if (info->dlpi_phdr[i].p_type == PT_TLS) {
            f->memsz = info->dlpi_phdr[i].p_memsz;
            f->align = std::max<std::size_t>(1, info->dlpi_phdr[i].p_align);
          }
        return 1;  // the first object is the executable
      },
      &found);
  const auto tp = reinterpret_cast<std::uintptr_t>(__builtin_thread_pointer());
  const std::size_t size = (found.memsz + found.align - 1) / found.align * found.align;
  return {tp - size, tp};
}

struct WorkerCounting {
  LaunchCounting* launch = nullptr;
  std::uintptr_t window_begin = 0, window_end = 0;
  TlsBlock tls;
  bool tls_known = false;
  std::vector<Record> records;
  KernelCounters partial;  // this worker's share, added to the launch at block end
  std::unordered_set<std::uint64_t> read_sectors, written_sectors;
  std::vector<std::uint64_t> tma_sectors;  // of the TMA copy being landed
  std::uint64_t tma_bytes = 0;
  std::vector<std::uint32_t> run_bytes;  // per thread of the block: its global loads since it last did anything else
  bool async_access = false;             // inside cp.async's own accesses
};
thread_local WorkerCounting t_count;

void end_run(WorkerCounting& w, std::size_t linear) {
  if (linear >= w.run_bytes.size() || w.run_bytes[linear] == 0) return;
  ++w.partial.load_runs;
  w.partial.load_run_bytes += w.run_bytes[linear];
  w.run_bytes[linear] = 0;
}
void end_runs(WorkerCounting& w) {
  for (std::size_t i = 0; i < w.run_bytes.size(); ++i) end_run(w, i);
}

bool is_builtin(std::uintptr_t a) {
  const auto inside = [a](const uint3& v) {
    const auto p = reinterpret_cast<std::uintptr_t>(&v);
    return a >= p && a < p + sizeof(uint3);
  };
  return inside(threadIdx) || inside(blockIdx) || inside(blockDim) || inside(gridDim);
}

bool is_device(const LaunchCounting& launch, std::uintptr_t a) {
  auto it = std::upper_bound(launch.device.begin(), launch.device.end(), a,
                             [](std::uintptr_t x, const std::pair<std::uintptr_t, std::uintptr_t>& r) { return x < r.first; });
  if (it == launch.device.begin()) return false;
  --it;
  return a < it->second;
}

void add_global(WorkerCounting& w, const Record* first, const Record* last) {
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> spans;  // [begin, end) per lane, by begin
  for (const Record* r = first; r != last; ++r) spans.emplace_back(r->address, r->address + r->bytes);
  std::sort(spans.begin(), spans.end());
  std::uint64_t asked = 0, sectors = 0;
  std::uintptr_t covered = 0;     // bytes below this are counted
  std::uint64_t next_sector = 0;  // sectors below this are counted
  const bool reads = first->kind != Access::store, writes = first->kind != Access::load;
  for (const auto& [b, e] : spans) {
    const std::uintptr_t from = std::max(b, covered);
    if (e > from) asked += e - from;
    covered = std::max(covered, e);
    for (std::uint64_t s = std::max<std::uint64_t>(b / kSectorBytes, next_sector); s <= (e - 1) / kSectorBytes; ++s) {
      ++sectors;
      if (reads) w.read_sectors.insert(s);
      if (writes) w.written_sectors.insert(s);
    }
    next_sector = std::max<std::uint64_t>(next_sector, (e - 1) / kSectorBytes + 1);
  }
  GlobalCounters& c = first->kind == Access::load ? w.partial.global_load
                      : first->kind == Access::store ? w.partial.global_store : w.partial.global_atomic;
  ++c.requests;
  c.sectors += sectors;
  c.bytes_asked += asked;
}

void add_shared(WorkerCounting& w, const Record* first, const Record* last) {
  unsigned width = 1;
  for (const Record* r = first; r != last; ++r) width = std::max(width, r->bytes);
  const unsigned lanes_per_phase = width <= 4 ? 32u : std::max(1u, kPhaseBytes / width);
  // (phase, bank) -> the distinct words it is asked for
  std::vector<std::tuple<unsigned, unsigned, std::uintptr_t>> words;
  std::uint64_t asked = 0;
  for (const Record* r = first; r != last; ++r) {
    asked += r->bytes;
    const unsigned phase = (r->linear % 32u) / lanes_per_phase;
    for (std::uintptr_t word = r->address / 4; word <= (r->address + r->bytes - 1) / 4; ++word)
      words.emplace_back(phase, static_cast<unsigned>(word % kBanks), word);
  }
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  std::uint64_t wavefronts = 0, phases = 0;
  for (std::size_t i = 0; i < words.size();) {  // one phase at a time
    const unsigned phase = std::get<0>(words[i]);
    unsigned worst = 0;
    while (i < words.size() && std::get<0>(words[i]) == phase) {
      const unsigned bank = std::get<1>(words[i]);
      unsigned in_bank = 0;
      while (i < words.size() && std::get<0>(words[i]) == phase && std::get<1>(words[i]) == bank) ++in_bank, ++i;
      worst = std::max(worst, in_bank);
    }
    wavefronts += worst;
    ++phases;
  }
  SharedCounters& c = first->kind == Access::load ? w.partial.shared_load : w.partial.shared_store;
  ++c.requests;
  c.wavefronts += wavefronts;
  c.ideal_wavefronts += phases;
  c.bytes_asked += asked;
}

// Makes the records so far into requests (see the header for the keys).
void flush(WorkerCounting& w) {
  if (w.records.empty()) return;
  struct VisitKey {
    const void* site;
    std::uint16_t linear;
    Access kind;
    bool operator==(const VisitKey&) const = default;
  };
  struct Hash {
    std::size_t operator()(const VisitKey& k) const {
      return std::hash<const void*>()(k.site) ^ (std::size_t{k.linear} << 3) ^ static_cast<std::size_t>(k.kind);
    }
  };
  std::unordered_map<VisitKey, std::uint32_t, Hash> visits;
  for (Record& r : w.records) r.visit = visits[{r.site, r.linear, r.kind}]++;
  const auto key = [](const Record& r) {
    return std::tuple(r.linear / 32u, r.site, r.kind, r.visit, r.space, r.linear);
  };
  std::sort(w.records.begin(), w.records.end(), [&](const Record& a, const Record& b) { return key(a) < key(b); });
  for (std::size_t i = 0; i < w.records.size();) {
    std::size_t j = i + 1;
    const Record& r = w.records[i];
    while (j < w.records.size()) {
      const Record& s = w.records[j];
      if (s.linear / 32u != r.linear / 32u || s.site != r.site || s.kind != r.kind || s.visit != r.visit || s.space != r.space) break;
      ++j;
    }
    if (r.space == Space::global) add_global(w, &w.records[i], w.records.data() + j);
    else add_shared(w, &w.records[i], w.records.data() + j);
    i = j;
  }
  w.records.clear();
}

std::mutex g_kernels_mutex;
std::vector<KernelCounters> g_kernels;  // in order of first launch

void add_into(KernelCounters& into, const KernelCounters& from) {
  const auto add_g = [](GlobalCounters& a, const GlobalCounters& b) {
    a.requests += b.requests, a.sectors += b.sectors, a.bytes_asked += b.bytes_asked;
  };
  const auto add_s = [](SharedCounters& a, const SharedCounters& b) {
    a.requests += b.requests, a.wavefronts += b.wavefronts, a.ideal_wavefronts += b.ideal_wavefronts, a.bytes_asked += b.bytes_asked;
  };
  add_g(into.global_load, from.global_load);
  add_g(into.global_store, from.global_store);
  add_g(into.global_atomic, from.global_atomic);
  add_s(into.shared_load, from.shared_load);
  add_s(into.shared_store, from.shared_store);
  into.dram_read_bytes += from.dram_read_bytes;
  into.dram_write_bytes += from.dram_write_bytes;
  into.tensor_flops += from.tensor_flops;
  into.tensor_fp8_flops += from.tensor_fp8_flops;
  into.tensor_wgmma_flops += from.tensor_wgmma_flops;
  into.special_functions += from.special_functions;
  into.load_runs += from.load_runs, into.load_run_bytes += from.load_run_bytes;
  into.async_waits += from.async_waits, into.async_wait_bytes += from.async_wait_bytes;
  into.tma_waits += from.tma_waits, into.tma_wait_bytes += from.tma_wait_bytes;
  into.wgmma_waits += from.wgmma_waits, into.wgmma_drains += from.wgmma_drains;
  into.wgmma_warpgroups += from.wgmma_warpgroups;
}

// A sampled launch's figures, scaled from the blocks that ran to the whole grid.
void scale_sampled(KernelCounters& k, double factor) {
  const auto s = [factor](std::uint64_t& v) { v = static_cast<std::uint64_t>(std::llround(static_cast<double>(v) * factor)); };
  for (GlobalCounters* g : {&k.global_load, &k.global_store, &k.global_atomic}) s(g->requests), s(g->sectors), s(g->bytes_asked);
  for (SharedCounters* c : {&k.shared_load, &k.shared_store}) s(c->requests), s(c->wavefronts), s(c->ideal_wavefronts), s(c->bytes_asked);
  s(k.tensor_flops), s(k.tensor_fp8_flops), s(k.tensor_wgmma_flops), s(k.special_functions);
  s(k.load_runs), s(k.load_run_bytes), s(k.async_waits), s(k.async_wait_bytes), s(k.tma_waits), s(k.tma_wait_bytes);
  s(k.wgmma_waits), s(k.wgmma_drains), s(k.wgmma_warpgroups);
}

// Distinct sectors of a sampled launch, scaled, each allocation's at most its own sectors.
std::uint64_t scaled_sectors(const std::unordered_set<std::uint64_t>& sectors,
                             const std::vector<std::pair<std::uintptr_t, std::uintptr_t>>& device, double factor) {
  std::vector<std::uint64_t> per(device.size(), 0);
  for (std::uint64_t sector : sectors) {
    const std::uintptr_t a = sector * kSectorBytes;
    auto it = std::upper_bound(device.begin(), device.end(), a,
                               [](std::uintptr_t x, const std::pair<std::uintptr_t, std::uintptr_t>& r) { return x < r.first; });
    if (it != device.begin()) ++per[static_cast<std::size_t>(it - device.begin() - 1)];
  }
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < device.size(); ++i) {
    const std::uint64_t cap = (device[i].second - device[i].first + kSectorBytes - 1) / kSectorBytes;
    total += std::min<std::uint64_t>(cap, static_cast<std::uint64_t>(std::llround(static_cast<double>(per[i]) * factor)));
  }
  return total;
}

std::atomic<std::uint64_t> g_block_sample{0};

}  // namespace

void count_access(const void* site, const void* address, unsigned bytes, Access kind) {
  WorkerCounting& w = t_count;
  if (!w.launch || bytes == 0) return;
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  Space space;
  if (a >= w.window_begin && a < w.window_end) {
    space = Space::shared;
  } else if (is_device(*w.launch, a)) {
    space = Space::global;
  } else {
    if (!w.tls_known) w.tls = executable_tls_block(), w.tls_known = true;
    if (a < w.tls.begin || a >= w.tls.end || is_builtin(a)) return;  // the thread's own stack or the emulator's state
    space = Space::shared;
  }
  const std::size_t linear = thread_linear();
  if (!w.async_access) {
    if (space == Space::global && kind == Access::load) {
      if (w.run_bytes.size() <= linear) w.run_bytes.resize(linear + 1, 0);
      w.run_bytes[linear] += bytes;
    } else {
      end_run(w, linear);
    }
  }
  w.records.push_back({site, a, bytes, static_cast<std::uint16_t>(thread_linear()), kind, space});
}

void count_tensor_flops(std::uint64_t flops) {
  if (t_count.launch) t_count.partial.tensor_flops += flops;
}

void count_tensor_fp8_flops(std::uint64_t flops) {
  if (t_count.launch) t_count.partial.tensor_fp8_flops += flops;
}

void count_tensor_wgmma_flops(std::uint64_t flops) {
  if (t_count.launch) t_count.partial.tensor_wgmma_flops += flops;
}

void count_special_functions(std::uint64_t calls) {
  if (t_count.launch) t_count.partial.special_functions += calls;
}

void count_async_wait(std::uint64_t lane_bytes_in_flight) {
  if (!t_count.launch || lane_bytes_in_flight == 0) return;
  ++t_count.partial.async_waits;
  t_count.partial.async_wait_bytes += lane_bytes_in_flight;
}

void count_tma_wait(std::uint64_t block_bytes_in_flight) {
  if (!t_count.launch) return;
  ++t_count.partial.tma_waits;
  t_count.partial.tma_wait_bytes += block_bytes_in_flight;
}

void count_wgmma_wait(bool drained) {
  if (!t_count.launch) return;
  ++t_count.partial.wgmma_waits;
  if (drained) ++t_count.partial.wgmma_drains;
}

void count_wgmma_warpgroup() {
  if (t_count.launch) ++t_count.partial.wgmma_warpgroups;
}

AsyncCopyAccess::AsyncCopyAccess() { t_count.async_access = true; }
AsyncCopyAccess::~AsyncCopyAccess() { t_count.async_access = false; }

void set_block_sample(std::uint64_t blocks) { g_block_sample = blocks; }
std::uint64_t block_sample() { return g_block_sample; }

void count_tma_element(const void* global_address, unsigned bytes) {
  WorkerCounting& w = t_count;
  if (!w.launch || bytes == 0) return;
  const auto a = reinterpret_cast<std::uintptr_t>(global_address);
  for (std::uint64_t s = a / kSectorBytes; s <= (a + bytes - 1) / kSectorBytes; ++s) w.tma_sectors.push_back(s);
  w.tma_bytes += bytes;
}

void count_tma_copy_done() {
  WorkerCounting& w = t_count;
  if (!w.launch) return;
  std::sort(w.tma_sectors.begin(), w.tma_sectors.end());
  w.tma_sectors.erase(std::unique(w.tma_sectors.begin(), w.tma_sectors.end()), w.tma_sectors.end());
  ++w.partial.global_load.requests;  // one copy, one request of the copy engine
  w.partial.global_load.sectors += w.tma_sectors.size();
  w.partial.global_load.bytes_asked += w.tma_bytes;
  w.read_sectors.insert(w.tma_sectors.begin(), w.tma_sectors.end());
  w.tma_sectors.clear();
  w.tma_bytes = 0;
}

bool counting() { return t_count.launch != nullptr; }

void count_swizzled_shared(std::uint64_t bytes, Access kind) {
  WorkerCounting& w = t_count;
  if (!w.launch || bytes == 0) return;
  SharedCounters& c = kind == Access::load ? w.partial.shared_load : w.partial.shared_store;
  const std::uint64_t wavefronts = (bytes + kPhaseBytes - 1) / kPhaseBytes;
  ++c.requests;
  c.wavefronts += wavefronts;
  c.ideal_wavefronts += wavefronts;
  c.bytes_asked += bytes;
}

LaunchCounting* begin_counted_launch(const char* name, std::uint64_t blocks, std::uint64_t threads_per_block,
                                     std::uint64_t dynamic_shared_bytes) {
  auto* launch = new LaunchCounting;
  launch->figures.name = name;
  launch->figures.launches = 1;
  launch->figures.blocks = blocks;
  launch->figures.threads_per_block = threads_per_block;
  launch->figures.dynamic_shared_bytes = dynamic_shared_bytes;
  launch->device = device_allocation_ranges();
  return launch;
}

void count_block_begin(LaunchCounting* launch, const void* shared_window, std::uint64_t shared_bytes) {
  WorkerCounting& w = t_count;
  w.launch = launch;
  w.window_begin = reinterpret_cast<std::uintptr_t>(shared_window);
  w.window_end = w.window_begin + shared_bytes;
  // (a block that failed leaves its figures behind: none of them may count for the next)
  w.records.clear();
  w.partial = {};
  w.read_sectors.clear();
  w.written_sectors.clear();
  w.tma_sectors.clear();
  w.tma_bytes = 0;
  w.run_bytes.clear();
  w.async_access = false;
}

void count_barrier() {
  if (!t_count.launch) return;
  end_runs(t_count);
  flush(t_count);
}

void count_block_end() {
  WorkerCounting& w = t_count;
  if (!w.launch) return;
  end_runs(w);
  flush(w);
  {
    std::lock_guard lock(w.launch->mutex);
    ++w.launch->ran_blocks;
    add_into(w.launch->figures, w.partial);
    w.launch->read_sectors.insert(w.read_sectors.begin(), w.read_sectors.end());
    w.launch->written_sectors.insert(w.written_sectors.begin(), w.written_sectors.end());
  }
  w.launch = nullptr;
}

void end_counted_launch(LaunchCounting* launch) {
  const std::unique_ptr<LaunchCounting> owned(launch);
  KernelCounters& f = launch->figures;
  if (launch->ran_blocks < f.blocks) {  // sampled
    const double factor = static_cast<double>(f.blocks) / static_cast<double>(std::max<std::uint64_t>(1, launch->ran_blocks));
    scale_sampled(f, factor);
    f.sampled_blocks = launch->ran_blocks;
    f.dram_read_bytes = kSectorBytes * scaled_sectors(launch->read_sectors, launch->device, factor);
    f.dram_write_bytes = kSectorBytes * scaled_sectors(launch->written_sectors, launch->device, factor);
  } else {
    f.dram_read_bytes = kSectorBytes * launch->read_sectors.size();
    f.dram_write_bytes = kSectorBytes * launch->written_sectors.size();
  }
  std::lock_guard lock(g_kernels_mutex);
  auto it = std::find_if(g_kernels.begin(), g_kernels.end(), [&](const KernelCounters& k) { return k.name == f.name; });
  if (it == g_kernels.end()) {
    g_kernels.push_back(f);
    return;
  }
  it->launches += 1;
  it->blocks += f.blocks;
  it->threads_per_block = f.threads_per_block;
  it->dynamic_shared_bytes = f.dynamic_shared_bytes;
  it->sampled_blocks += f.sampled_blocks;
  add_into(*it, f);
}

void discard_counted_launch(LaunchCounting* launch) { delete launch; }

std::vector<KernelCounters> take_kernel_counters() {
  std::lock_guard lock(g_kernels_mutex);
  std::vector<KernelCounters> out;
  out.swap(g_kernels);
  return out;
}

}  // namespace ht::emu
