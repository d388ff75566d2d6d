// Hopper's asynchronous units on the CPU: mbarriers, the tensor memory accelerator (TMA) and
// wgmma, following the PTX ISA ("Asynchronous warpgroup level matrix multiply-accumulate",
// "mbarrier", "cp.async.bulk.tensor") and the driver's cuTensorMapEncodeTiled.
//
//   mbarrier   - per block, keyed by its shared-memory offset: expected and pending arrivals, a
//                transaction count and the phase. A phase completes when its arrivals are in
//                and its transaction count is back to 0; try_wait.parity(p) holds once the
//                current phase's parity is not p.
//   TMA        - a copy is queued at issue and lands when no thread of the block can run (as
//                late as it may), gathering the box from global memory (zeros, or NaN, outside
//                the tensor), writing it row-major and swizzled, then completing its bytes on
//                its mbarrier.
//   wgmma      - an operation of the whole warpgroup, queued at issue; its accumulators hold a
//                poison NaN until the wgmma.wait_group that retires it computes A·B (sums in
//                double, rounded once) and writes them back.
// Operands and destinations are addressed as the hardware does: a byte offset in the shared
// window, swizzled by its own address bits (bits [4, 4 + b) XOR bits [7, 7 + b)), which is why
// swizzled tiles must sit on the pattern's 256/512/1024-byte boundary. The layouts themselves
// (tensor maps, descriptors, fragments) are simt/hopper_layouts.cpp.
//
// One file for the three units: an mbarrier completes TMA's transactions and wgmma reads what TMA
// wrote, so they share the block's asynchronous state.
#include "simt/hopper.h"
#include "simt/hopper_layouts.h"

#include "ground/error.h"
#include "ground/fp8.h"
#include "simt/block_hooks.h"
#include "simt/counters.h"
#include "simt/emulator.h"
#include "simt/racecheck.h"
#include "simt/simt.h"

#include <array>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ht::emu {

namespace {

[[noreturn]] void refuse(const std::string& what) { kernel_error(what.c_str()); }

// Byte loops where memcpy/memcmp/memset would do: ThreadSanitizer intercepts those even in
// uninstrumented code (simt/ is), and the emulator's own bookkeeping must not look like the
// kernel's accesses; those are modelled by the race:: calls alone (simt/racecheck.h).
#define HT_NO_LIBCALLS __attribute__((noinline, optimize("no-tree-loop-distribute-patterns")))
HT_NO_LIBCALLS void copy_bytes(void* dst, const void* src, std::size_t n) {
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  for (std::size_t i = 0; i < n; ++i) d[i] = s[i];
}
HT_NO_LIBCALLS bool same_bytes(const void* a, const void* b, std::size_t n) {
  const auto* x = static_cast<const unsigned char*>(a);
  const auto* y = static_cast<const unsigned char*>(b);
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] != y[i]) return false;
  return true;
}
HT_NO_LIBCALLS void zero_bytes(void* dst, std::size_t n) {
  auto* d = static_cast<unsigned char*>(dst);
  for (std::size_t i = 0; i < n; ++i) d[i] = 0;
}

void require_sm90(const char* instruction) {
  if (arch().major < 9)
    refuse(fmt::format("{} needs sm_90; the emulated GPU is {} (HALFTAPE_SIMT_ARCH=sm_90 emulates a Hopper GPU)", instruction,
                       arch().name));
}

// ---- per-block state -------------------------------------------------------------------------

struct Mbarrier {
  unsigned expected = 0, pending = 0;
  std::int64_t tx = 0;
  unsigned phase = 0;
  std::uint64_t marker = 0;  // what init wrote into the word: a store over it is caught
  std::uint64_t tma_unwaited = 0;  // bytes of TMA copies issued on it that no wait has passed yet (counters)
  char sync = 0;             // racecheck: arrivals and transactions release, waits acquire
};

struct TmaCopy {
  EncodedMap map;
  std::array<int, 5> coords{};
  std::uint32_t dst = 0;  // shared offset
  std::uint32_t bar = 0;
  unsigned phase = 0;     // of the mbarrier, at issue
  unsigned issuer = 0;
  std::vector<std::uint32_t> offsets;  // shared offset of each element, in box order
  std::vector<std::byte> before;       // the destination at issue
  std::unique_ptr<char> sync = std::make_unique<char>();  // racecheck: issue -> landing
};

// The element types of a wgmma's operands: 16-bit (k16, the sum formed in double and rounded
// once) or FP8 (k32, summed in FP32 in ascending k).
enum class WgmmaType { f16, bf16, e4m3, e5m2 };
bool is_fp8(WgmmaType t) { return t == WgmmaType::e4m3 || t == WgmmaType::e5m2; }

struct WgmmaOp {
  WgmmaType a_type = WgmmaType::f16, b_type = WgmmaType::f16;
  int n = 0;
  std::uint64_t desc_a = 0, desc_b = 0;
  bool scale_d = true;
  float scale_a = 1, scale_b = 1;
  std::array<float*, 128> acc{};
  std::vector<std::uint32_t> chunks;  // 16-byte chunks of shared memory it reads
  std::vector<std::byte> before;      // their contents at issue
};

struct InFlightAccumulator {
  std::vector<float> values;  // the accumulator as the queued operations leave it
  int ops = 0;
};

struct WarpgroupState {
  std::array<float*, 128> staged_acc{};  // each thread's accumulator, handed in before the collective
  std::array<std::uint64_t, 128> staged_a{}, staged_b{};
  std::vector<WgmmaOp> open;
  std::deque<std::vector<WgmmaOp>> committed;
  std::array<std::map<float*, InFlightAccumulator>, 128> in_flight;
  bool fenced = false;
  bool issued = false;  // any wgmma yet (counters: the warpgroups that use the tensor cores)
};

std::uint32_t poison_bits() { return 0x7fcbad00u; }  // a quiet NaN that no arithmetic produces
float poison() { return std::bit_cast<float>(poison_bits()); }

class Hopper final : public AsyncUnit {
 public:
  Hopper() { window_ = shared_window(&window_bytes_); }

  std::byte* at(std::uint32_t offset, std::size_t bytes, const char* what) const {
    if (std::size_t{offset} + bytes > window_bytes_)
      refuse(fmt::format("{} at shared offset {} ({} bytes) lies outside the block's {} bytes of shared memory", what, offset,
                         bytes, window_bytes_));
    return window_ + offset;
  }

  Mbarrier& barrier(std::uint64_t* word, const char* what) {
    const std::uint32_t offset = shared_address(word);
    const auto it = barriers_.find(offset);
    if (it == barriers_.end()) refuse(fmt::format("{} on shared offset {}, which mbarrier.init never initialised", what, offset));
    if (*word != it->second.marker)
      refuse(fmt::format("{}: the mbarrier at shared offset {} was overwritten by a store since mbarrier.init", what, offset));
    return it->second;
  }

  void init(std::uint64_t* word, unsigned count) {
    const std::uint32_t offset = shared_address(word);
    if (offset % 8) refuse(fmt::format("mbarrier.init at shared offset {}: an mbarrier is 8-byte aligned", offset));
    if (count < 1 || count > (1u << 20) - 1) refuse(fmt::format("mbarrier.init with count {}: 1 to 2^20 - 1", count));
    for (const TmaCopy& c : copies_)
      if (c.bar == offset) refuse(fmt::format("mbarrier.init at shared offset {} while a TMA copy still counts on it", offset));
    Mbarrier& m = barriers_[offset];
    m.expected = m.pending = count;
    m.tx = 0;
    m.phase = 0;
    m.marker = 0x6d62617200000000ull | (std::uint64_t{offset} << 8) | 0x5a;
    *word = m.marker;
  }

  void complete_phase_if_done(Mbarrier& m) {
    if (m.pending == 0 && m.tx == 0) {
      ++m.phase;
      m.pending = m.expected;
    }
  }

  void expect_tx(Mbarrier& m, unsigned bytes) {
    if (bytes > (1u << 20) - 1) refuse(fmt::format("mbarrier expect_tx of {} bytes: at most 2^20 - 1", bytes));
    m.tx += bytes;
  }

  void arrive(Mbarrier& m) {  // (the caller has released m.sync in its own fiber)
    if (m.pending == 0) refuse("mbarrier.arrive on a phase with no arrivals pending");
    --m.pending;
    if (m.pending == 0 && m.tx < 0)
      refuse(fmt::format("mbarrier transaction count overrun: its copies completed {} bytes more than arrive.expect_tx armed",
                         -m.tx));
    complete_phase_if_done(m);
  }

  // A copy may land as soon as it is issued: one issued into shared memory that a wgmma of any
  // warpgroup still reads is a race even when, as here, it lands later (a stage released to the
  // producer before the wgmma.wait_group that retires the wgmma reading it).
  void issue_copy(TmaCopy&& c) {
    const std::unordered_set<std::uint32_t> read_by_wgmma = chunks_read_in_flight();
    for (std::uint32_t offset : c.offsets)
      if (read_by_wgmma.count(offset / 16))
        refuse(fmt::format("a TMA copy (thread {}) is issued into shared offset {}, which an in-flight wgmma reads: the "
                           "stage was released before the wgmma.wait_group that retires the wgmma reading it", c.issuer,
                           offset));
    copies_.push_back(std::move(c));
  }

  std::unordered_set<std::uint32_t> chunks_read_in_flight() const {
    std::unordered_set<std::uint32_t> chunks;
    for (const WarpgroupState& g : warpgroups_) {
      for (const WgmmaOp& op : g.open) chunks.insert(op.chunks.begin(), op.chunks.end());
      for (const auto& group : g.committed)
        for (const WgmmaOp& op : group) chunks.insert(op.chunks.begin(), op.chunks.end());
    }
    return chunks;
  }

  // Lands the oldest copy (in the async fiber: the copy engine's accesses are its own).
  bool progress() override {
    const AsyncScope scope;
    if (copies_.empty()) return false;
    TmaCopy c = std::move(copies_.front());
    copies_.pop_front();
    land(c);
    return true;
  }

  void land(TmaCopy& c) {
    const std::size_t eb = c.map.element_bytes;
    // The destination must hold what it held at issue: nothing may write it while the copy is in flight.
    for (std::size_t e = 0; e < c.offsets.size(); ++e)
      if (!same_bytes(window_ + c.offsets[e], c.before.data() + e * eb, eb))
        refuse(fmt::format("shared memory at offset {} was written while a TMA copy into it (issued by thread {}) was in "
                           "flight, before its mbarrier's phase completed", c.offsets[e], c.issuer));
    const std::unordered_set<std::uint32_t> read_by_wgmma = chunks_read_in_flight();
    race::acquire(c.sync.get());
    std::array<std::uint64_t, 5> index{};
    const EncodedMap& m = c.map;
    for (std::size_t e = 0; e < c.offsets.size(); ++e) {
      if (read_by_wgmma.count(c.offsets[e] / 16))
        refuse(fmt::format("a TMA copy (issued by thread {}) lands on shared offset {}, which an in-flight wgmma reads (a "
                           "wgmma.wait_group is missing before the stage was released)", c.issuer, c.offsets[e]));
      bool inside = true;
      std::uint64_t src = m.address;
      for (int d = 0; d < m.rank; ++d) {
        const std::int64_t coord = std::int64_t{c.coords[static_cast<std::size_t>(d)]} + static_cast<std::int64_t>(index[d]);
        if (coord < 0 || static_cast<std::uint64_t>(coord) >= m.dims[d]) inside = false;
        else src += static_cast<std::uint64_t>(coord) * m.strides[d];
      }
      std::byte* dst = window_ + c.offsets[e];
      if (inside) {
        race::read(reinterpret_cast<const void*>(src), eb);
        count_tma_element(reinterpret_cast<const void*>(src), static_cast<unsigned>(eb));
        copy_bytes(dst, reinterpret_cast<const void*>(src), eb);
      } else if (m.oob_nan) {
        const std::uint64_t nan = eb == 2 ? 0x7fffu : (eb == 4 ? 0x7fffffffu : 0x7fffffffffffffffull);
        copy_bytes(dst, &nan, eb);
      } else {
        zero_bytes(dst, eb);
      }
      race::write(dst, eb);
      for (int d = 0; d < m.rank && ++index[d] == m.box[d]; ++d) index[d] = 0;
    }
    count_tma_copy_done();
    count_swizzled_shared(c.offsets.size() * eb, Access::store);
    const auto it = barriers_.find(c.bar);
    if (it == barriers_.end()) refuse("a TMA copy completes on an mbarrier that no longer exists");
    Mbarrier& bar = it->second;
    if (bar.phase != c.phase)
      refuse(fmt::format("a TMA copy (issued by thread {}) completes its bytes on mbarrier {} after the phase it was issued in "
                         "had completed: arrive.expect_tx armed fewer bytes than the copies carry", c.issuer, c.bar));
    bar.tx -= static_cast<std::int64_t>(c.offsets.size() * eb);
    if (bar.pending == 0 && bar.tx < 0)
      refuse(fmt::format("mbarrier transaction count overrun on mbarrier {}: its copies completed {} bytes more than "
                         "arrive.expect_tx armed", c.bar, -bar.tx));
    race::release(&bar.sync);
    complete_phase_if_done(bar);
  }

  WarpgroupState& warpgroup(unsigned linear) {
    if (warpgroups_.size() <= linear / 128) warpgroups_.resize(linear / 128 + 1);
    return warpgroups_[linear / 128];
  }

  void thread_exit(unsigned linear) override {
    if (linear / 128 >= warpgroups_.size()) return;
    const WarpgroupState& g = warpgroups_[linear / 128];
    if (!g.open.empty() || !g.committed.empty() || !g.in_flight[linear % 128].empty())
      refuse(fmt::format("a thread of warpgroup {} exits with wgmma operations in flight: its accumulators are read or "
                         "dropped before a wgmma.wait_group retired them", linear / 128));
  }

  void block_end() override {
    if (!copies_.empty())
      refuse(fmt::format("the block ends with {} TMA copies in flight (nothing waited on their mbarrier)", copies_.size()));
  }

  std::byte* window() const { return window_; }
  std::uint64_t tma_bytes_unwaited() const {
    std::uint64_t total = 0;
    for (const auto& [offset, m] : barriers_) total += m.tma_unwaited;
    return total;
  }

 private:
  std::byte* window_ = nullptr;
  std::size_t window_bytes_ = 0;
  std::unordered_map<std::uint32_t, Mbarrier> barriers_;
  std::deque<TmaCopy> copies_;
  std::vector<WarpgroupState> warpgroups_;
};

WarpgroupState& warpgroup_of(Hopper& h, unsigned linear) {
  const AsyncScope scope;  // may grow the table
  return h.warpgroup(linear);
}

Hopper& hopper() {
  const AsyncScope scope;
  return static_cast<Hopper&>(block_async([] { return std::make_unique<Hopper>(); }));
}

// ---- wgmma -----------------------------------------------------------------------------------

// rows × k (16, or 32 for FP8) elements of an operand, widened to FP32 (exactly), into out[r·k + k].
void load_operand(const Hopper& h, std::uint64_t desc, int rows, WgmmaType type, float* out, std::vector<std::uint32_t>* chunks) {
  const int depth = is_fp8(type) ? 32 : 16, bytes = is_fp8(type) ? 1 : 2;
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < depth; ++k) {
      std::uint32_t offset = 0;
      try {
        offset = wgmma_operand_offset(desc, r, k, bytes);
      } catch (const Error& e) {
        refuse(e.what());
      }
      if (chunks && (k * bytes) % 16 == 0) chunks->push_back(offset / 16);
      if (is_fp8(type)) {
        std::uint8_t code;
        std::memcpy(&code, h.at(offset, 1, "a wgmma operand"), 1);
        out[r * depth + k] = fp8_bits_to_f32(code, type == WgmmaType::e4m3 ? kE4M3 : kE5M2);
        continue;
      }
      std::uint16_t bits;
      std::memcpy(&bits, h.at(offset, 2, "a wgmma operand"), 2);
      if (type == WgmmaType::bf16) {
        __nv_bfloat16_raw raw;
        raw.x = bits;
        out[r * 16 + k] = __bfloat162float(__nv_bfloat16(raw));
      } else {
        __half_raw raw;
        raw.x = bits;
        out[r * 16 + k] = __half2float(__half(raw));
      }
    }
}

void snapshot(const Hopper& h, WgmmaOp& op) {
  op.before.resize(op.chunks.size() * 16);
  for (std::size_t i = 0; i < op.chunks.size(); ++i)
    copy_bytes(op.before.data() + 16 * i, h.at(op.chunks[i] * 16, 16, "a wgmma operand"), 16);
}

void retire(Hopper& h, WarpgroupState& g, WgmmaOp& op) {
  for (std::size_t i = 0; i < op.chunks.size(); ++i) {
    if (!same_bytes(h.window() + op.chunks[i] * 16, op.before.data() + 16 * i, 16))
      refuse(fmt::format("shared memory at offset {} that an in-flight wgmma reads was written before the wgmma.wait_group "
                         "that retires it", op.chunks[i] * 16));
  }
  const bool fp8 = is_fp8(op.a_type);
  const int depth = fp8 ? 32 : 16;
  std::vector<float> a(static_cast<std::size_t>(64 * depth)), b(static_cast<std::size_t>(op.n * depth));
  load_operand(h, op.desc_a, 64, op.a_type, a.data(), nullptr);
  load_operand(h, op.desc_b, op.n, op.b_type, b.data(), nullptr);
  for (int t = 0; t < 128; ++t) {
    InFlightAccumulator& acc = g.in_flight[static_cast<std::size_t>(t)].at(op.acc[static_cast<std::size_t>(t)]);
    for (int i = 0; i < op.n / 2; ++i) {
      int row = 0, col = 0;
      wgmma_accumulator_position(t, i, &row, &col);
      if (fp8) {  // ascending k, each product exact in FP32, one rounding an addition
        float sum = op.scale_d ? acc.values[static_cast<std::size_t>(i)] : 0.0f;
        for (int k = 0; k < 32; ++k)
          sum += (op.scale_a * a[static_cast<std::size_t>(row * 32 + k)]) * (op.scale_b * b[static_cast<std::size_t>(col * 32 + k)]);
        acc.values[static_cast<std::size_t>(i)] = sum;
        continue;
      }
      double sum = op.scale_d ? acc.values[static_cast<std::size_t>(i)] : 0.0;
      for (int k = 0; k < 16; ++k)
        sum += static_cast<double>(op.scale_a * a[static_cast<std::size_t>(row * 16 + k)]) * (op.scale_b * b[static_cast<std::size_t>(col * 16 + k)]);
      acc.values[static_cast<std::size_t>(i)] = static_cast<float>(sum);
    }
    if (--acc.ops == 0) {  // the last operation on these registers: hand them back
      float* d = op.acc[static_cast<std::size_t>(t)];
      for (int i = 0; i < op.n / 2; ++i)
        if (std::bit_cast<std::uint32_t>(d[i]) != poison_bits())
          refuse(fmt::format("thread {} of the warpgroup wrote accumulator register {} while a wgmma.mma_async on it was in "
                             "flight (before the wgmma.wait_group that retires it)", t, i));
      copy_bytes(d, acc.values.data(), sizeof(float) * static_cast<std::size_t>(op.n / 2));
      g.in_flight[static_cast<std::size_t>(t)].erase(d);
    }
  }
}

}  // namespace

// ---- device entry points -----------------------------------------------------------------------

std::uint32_t shared_address(const void* p) {
  std::size_t bytes = 0;
  const std::byte* base = shared_window(&bytes);
  const auto* q = static_cast<const std::byte*>(p);
  if (q < base || q >= base + bytes)
    kernel_error("__cvta_generic_to_shared of an address outside the block's dynamic shared memory (the emulator's shared "
                 "window; a static __shared__ variable has no shared address here)");
  return static_cast<std::uint32_t>(q - base);
}

void mbarrier_init(std::uint64_t* bar, unsigned count) {
  require_sm90("mbarrier.init");
  Hopper& h = hopper();
  const AsyncScope scope;
  h.init(bar, count);
}

// An arrival releases what the thread did before it (mbarrier.arrive is .release).
void mbarrier_arrive(std::uint64_t* bar) {
  require_sm90("mbarrier.arrive");
  Hopper& h = hopper();
  Mbarrier& m = h.barrier(bar, "mbarrier.arrive");
  race::release(&m.sync);
  const AsyncScope scope;
  h.arrive(m);
}

void mbarrier_arrive_expect_tx(std::uint64_t* bar, unsigned bytes) {
  require_sm90("mbarrier.arrive.expect_tx");
  Hopper& h = hopper();
  Mbarrier& m = h.barrier(bar, "mbarrier.arrive.expect_tx");
  race::release(&m.sync);
  const AsyncScope scope;
  h.expect_tx(m, bytes);
  h.arrive(m);
}

bool mbarrier_try_wait_parity(std::uint64_t* bar, unsigned parity) {
  require_sm90("mbarrier.try_wait.parity");
  Hopper& h = hopper();
  Mbarrier& m = h.barrier(bar, "mbarrier.try_wait.parity");  // (looks up; allocates nothing)
  const std::function<bool()> ready = [&m, parity] { return (m.phase & 1u) != (parity & 1u); };
  wait_until("mbarrier.try_wait.parity", ready);
  race::acquire(&m.sync);
  // the first wait past a phase TMA fills: the bytes the producer has in flight ahead of it
  if (m.tma_unwaited > 0 && counting()) count_tma_wait(h.tma_bytes_unwaited());
  m.tma_unwaited = 0;
  return true;
}

void fence_mbarrier_init() { require_sm90("fence.mbarrier_init"); }
void fence_proxy_async() { require_sm90("fence.proxy.async"); }

void tma_load(void* dst, const CUtensorMap* map, std::uint64_t* bar, const int* coords, int rank) {
  require_sm90("cp.async.bulk.tensor");
  Hopper& h = hopper();
  const char* sync = nullptr;
  {
    const AsyncScope scope;
    TmaCopy c;
    try {
      c.map = decode_map(map);
    } catch (const Error& e) {
      refuse(e.what());
    }
    if (rank != c.map.rank)
      refuse(fmt::format("cp.async.bulk.tensor.{}d with a tensor map of rank {}", rank, static_cast<int>(c.map.rank)));
    c.dst = shared_address(dst);
    const unsigned alignment = c.map.span == 0 ? 128u : 8u * c.map.span;
    if (c.dst % alignment)
      refuse(fmt::format("cp.async.bulk.tensor into shared offset {}: with the {} swizzle the destination must be {}-byte "
                         "aligned", c.dst, c.map.span ? fmt::format("{}B", c.map.span) : std::string("no"), alignment));
    c.bar = shared_address(bar);
    Mbarrier& m = h.barrier(bar, "cp.async.bulk.tensor's mbarrier");
    c.phase = m.phase;
    c.issuer = thread_linear();
    for (int d = 0; d < rank; ++d) c.coords[static_cast<std::size_t>(d)] = coords[d];
    std::size_t elements = 1;
    for (int d = 0; d < rank; ++d) elements *= c.map.box[d];
    const std::size_t eb = c.map.element_bytes;
    c.offsets.resize(elements);
    c.before.resize(elements * eb);
    for (std::size_t e = 0; e < elements; ++e) {
      c.offsets[e] = swizzle_offset(c.dst + static_cast<std::uint32_t>(e * eb), c.map.span);
      copy_bytes(c.before.data() + e * eb, h.at(c.offsets[e], eb, "a TMA destination"), eb);
    }
    sync = c.sync.get();
    m.tma_unwaited += elements * eb;
    h.issue_copy(std::move(c));
  }
  race::release(sync);  // the copy comes after what the issuing thread did before it
}

void wgmma_fence() {
  require_sm90("wgmma.fence");
  Hopper& h = hopper();
  WarpgroupState& g = warpgroup_of(h, thread_linear());
  warpgroup_collective("wgmma.fence", [&g] { g.fenced = true; });
}

void wgmma_commit_group() {
  require_sm90("wgmma.commit_group");
  Hopper& h = hopper();
  WarpgroupState& g = warpgroup_of(h, thread_linear());
  warpgroup_collective("wgmma.commit_group", [&g] {
    const AsyncScope scope;
    g.committed.push_back(std::move(g.open));
    g.open.clear();
  });
}

void wgmma_wait_group(int pending) {
  require_sm90("wgmma.wait_group");
  if (pending < 0 || pending > 7) kernel_error("wgmma.wait_group N: N is 0 to 7");
  Hopper& h = hopper();
  WarpgroupState& g = warpgroup_of(h, thread_linear());
  warpgroup_collective("wgmma.wait_group", [&h, &g, pending] {
    // The retiring operations' operand reads, on behalf of the warpgroup (this collective then
    // orders them before every one of its threads goes on).
    for (std::size_t i = 0; i + pending < g.committed.size(); ++i)
      for (const WgmmaOp& op : g.committed[i])
        for (std::uint32_t chunk : op.chunks) race::read(h.window() + chunk * 16, 16);
    const AsyncScope scope;
    if (!g.committed.empty()) count_wgmma_wait(pending == 0);  // pending 0: nothing stays in flight
    while (static_cast<int>(g.committed.size()) > pending) {
      for (WgmmaOp& op : g.committed.front()) retire(h, g, op);
      g.committed.pop_front();
    }
    g.fenced = false;  // the accumulators are the threads' again: the next wgmma needs a fence
  });
}

namespace {

void issue_wgmma(WgmmaType a_type, WgmmaType b_type, int n, float* d, std::uint64_t desc_a, std::uint64_t desc_b, int scale_d,
                 int scale_a, int scale_b) {
  Hopper& h = hopper();
  const unsigned linear = thread_linear();
  WarpgroupState& g = warpgroup_of(h, linear);
  g.staged_acc[linear % 128] = d;
  g.staged_a[linear % 128] = desc_a;
  g.staged_b[linear % 128] = desc_b;
  warpgroup_collective("wgmma.mma_async", [&] {
    const AsyncScope scope;
    if (!g.fenced) refuse("wgmma.mma_async without a wgmma.fence before it (since the warpgroup's last wgmma.wait_group)");
    WgmmaOp op;
    op.a_type = a_type;
    op.b_type = b_type;
    op.n = n;
    op.desc_a = g.staged_a[0];
    op.desc_b = g.staged_b[0];
    op.scale_d = scale_d != 0;
    op.scale_a = static_cast<float>(scale_a);
    op.scale_b = static_cast<float>(scale_b);
    for (int t = 0; t < 128; ++t)
      if (g.staged_a[static_cast<std::size_t>(t)] != op.desc_a || g.staged_b[static_cast<std::size_t>(t)] != op.desc_b)
        refuse(fmt::format("wgmma.mma_async: thread {} of the warpgroup passes other matrix descriptors than thread 0", t));
    op.acc = g.staged_acc;
    const int depth = is_fp8(a_type) ? 32 : 16;
    std::vector<float> scratch(static_cast<std::size_t>(256) * 32);
    load_operand(h, op.desc_a, 64, a_type, scratch.data(), &op.chunks);
    load_operand(h, op.desc_b, n, b_type, scratch.data(), &op.chunks);
    const std::uint64_t flops = std::uint64_t{2} * 64 * static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(depth);
    count_tensor_flops(flops);
    count_tensor_wgmma_flops(flops);
    if (is_fp8(a_type)) count_tensor_fp8_flops(flops);
    if (!g.issued) count_wgmma_warpgroup(), g.issued = true;
    count_swizzled_shared(op.chunks.size() * 16, Access::load);
    snapshot(h, op);
    for (int t = 0; t < 128; ++t) {
      float* acc = op.acc[static_cast<std::size_t>(t)];
      InFlightAccumulator& f = g.in_flight[static_cast<std::size_t>(t)][acc];
      if (f.ops++ == 0) {  // first in flight on these registers: keep them, poison what the thread sees
        f.values.resize(static_cast<std::size_t>(n / 2));
        copy_bytes(f.values.data(), acc, sizeof(float) * static_cast<std::size_t>(n / 2));
        for (int i = 0; i < n / 2; ++i) acc[i] = poison();
      } else if (static_cast<int>(f.values.size()) != n / 2) {
        refuse("wgmma.mma_async: accumulators already in flight with another N");
      }
    }
    g.open.push_back(std::move(op));
  });
}

void check_wgmma_shape(int n, int scale_d, int scale_a, int scale_b, const char* shape) {
  if (n < 8 || n > 256 || n % 8) kernel_error(fmt::format("wgmma.mma_async.{}: N is a multiple of 8 from 8 to 256", shape).c_str());
  if ((scale_a != 1 && scale_a != -1) || (scale_b != 1 && scale_b != -1) || (scale_d != 0 && scale_d != 1))
    kernel_error("wgmma.mma_async: imm-scale-a/b are 1 or -1, scale-d 0 or 1");
}

}  // namespace

void wgmma_mma_async(bool bf16, int n, float* d, std::uint64_t desc_a, std::uint64_t desc_b, int scale_d, int scale_a,
                     int scale_b, int tnsp_a, int tnsp_b) {
  require_sm90("wgmma.mma_async");
  check_wgmma_shape(n, scale_d, scale_a, scale_b, "m64nNk16");
  if (tnsp_a != 0 || tnsp_b != 0) kernel_error("wgmma.mma_async with transposed (MN-major) operands is not emulated");
  const WgmmaType type = bf16 ? WgmmaType::bf16 : WgmmaType::f16;
  issue_wgmma(type, type, n, d, desc_a, desc_b, scale_d, scale_a, scale_b);
}

void wgmma_mma_async_fp8(bool a_e5m2, bool b_e5m2, int n, float* d, std::uint64_t desc_a, std::uint64_t desc_b, int scale_d) {
  require_sm90("wgmma.mma_async (FP8)");
  check_wgmma_shape(n, scale_d, 1, 1, "m64nNk32");
  issue_wgmma(a_e5m2 ? WgmmaType::e5m2 : WgmmaType::e4m3, b_e5m2 ? WgmmaType::e5m2 : WgmmaType::e4m3, n, d, desc_a, desc_b,
              scale_d, 1, 1);
}

void setmaxnreg(bool increase, unsigned count) {
  require_sm90(increase ? "setmaxnreg.inc" : "setmaxnreg.dec");
  if (count < 24 || count > 256 || count % 8)
    kernel_error("setmaxnreg: the register count is a multiple of 8 from 24 to 256");
  warpgroup_collective(increase ? "setmaxnreg.inc" : "setmaxnreg.dec", [] {});
}

}  // namespace ht::emu
