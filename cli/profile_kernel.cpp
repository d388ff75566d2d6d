// `halftape profile --gpu G --kernel gemm|attention|copy --shape ... [--precision fp16|bf16]
// [--json FILE]`: one kernel, run on the counting emulator as the engine launches it and
// MODELLED on the GPU (bench/gpu_model.h), for the kernel-microbenchmark user. Large launches
// count a sample of their blocks, evenly spaced over the grid, and scale the figures to the
// whole grid (--sample-blocks; the row says how many ran). Nothing is measured on a GPU
// unless --measure asks for it: then the same launch runs on this machine's GPU, timed with CUDA
// events, and both figures are printed, each labelled.
#include "cli/commands.h"
#include "cli/profile.h"
#include "engine/backend.h"
#include "ground/error.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iostream>

namespace ht::cli {

namespace {

std::vector<std::int64_t> parse_shape(const std::string& text, std::size_t count, const char* meaning) {
  std::vector<std::int64_t> dims;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data() + at, text.data() + comma, v);
    HT_CHECK(ec == std::errc() && end == text.data() + comma && v > 0,
             "--shape {}: {} positive integers, comma-separated ({})", text, count, meaning);
    dims.push_back(v);
    at = comma + 1;
  }
  HT_CHECK(dims.size() == count, "--shape {}: {} positive integers, comma-separated ({})", text, count, meaning);
  return dims;
}

// Device memory of the backend, zeroed (the counts do not depend on the values), given back at scope end.
struct DeviceBuffer {
  Backend& backend;
  void* data;
  DeviceBuffer(Backend& b, std::size_t bytes) : backend(b), data(b.allocate(std::max<std::size_t>(bytes, 16))) {
    backend.zero(data, std::max<std::size_t>(bytes, 16));
  }
  ~DeviceBuffer() { backend.deallocate(data); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

struct Work {
  double useful_flops = 0;  // the conventional FLOPs of the operation (TFLOP/s), or 0
  double bytes = 0;         // the bytes it must move (GB/s), or 0
  std::string what;
};

}  // namespace

int run_kernel_profile(const KernelProfileFlags& f, const bench::GpuSpec& gpu) {
  HT_CHECK(f.kernel == "gemm" || f.kernel == "attention" || f.kernel == "copy",
           "--kernel {}: gemm, attention or copy", f.kernel);
  HT_CHECK(!f.shape.empty(), "profile --kernel {} needs --shape ({})", f.kernel,
           f.kernel == "gemm" ? "M,N,K" : f.kernel == "attention" ? "batch,seq,heads,head_dim" : "elements");
  const std::string precision = f.precision.empty() ? "bf16" : f.precision;
  HT_CHECK(precision == "fp16" || precision == "bf16" || (precision == "fp32" && f.kernel == "copy"),
           "profile --kernel {} --precision {}: fp16 or bf16{}", f.kernel, precision, f.kernel == "copy" ? " or fp32" : "");
  HT_CHECK(f.gemm_design == "pipelined" || (f.gemm_design == "first" && f.kernel == "gemm"),
           "--gemm-design {}: pipelined, or first (the first wgmma design) with --kernel gemm", f.gemm_design);
  HT_CHECK(!f.unaligned || f.kernel == "copy", "--unaligned is for --kernel copy (its scalar path)");
  HT_CHECK(f.sample_blocks >= 0, "--sample-blocks {}: 0 (the kernel's default) or more", f.sample_blocks);
  HT_CHECK(!f.measure || f.gemm_design == "pipelined", "--measure with --gemm-design first: the first design is built "
           "for the emulator only");
  HT_CHECK(f.modelled.empty() || f.measure, "profile --modelled: it is --measure's (the MODELLED profile to measure "
           "beside); add --measure, or leave out --modelled");
  // --modelled: the MODELLED figures of an earlier `profile --kernel ... --json` of this kernel
  std::optional<nlohmann::json> earlier;
  if (!f.modelled.empty()) {
    earlier = read_modelled_json(f.modelled, gpu);
    for (const auto& [key, given] : {std::pair<const char*, std::string>{"kernel", f.kernel}, {"shape", f.shape},
                                     {"precision", precision}})
      HT_CHECK(earlier->value(key, "") == given, "profile --modelled {}: it models {} {}, not the {} {} asked for here",
               f.modelled, key, earlier->value(key, "?"), key, given);
    HT_CHECK(f.kernel != "gemm" || earlier->value("gemm_design", "") == f.gemm_design, "profile --modelled {}: it models "
             "the {} GEMM design, not the {} asked for here", f.modelled, earlier->value("gemm_design", "?"), f.gemm_design);
    HT_CHECK(f.kernel != "copy" || earlier->value("unaligned", false) == f.unaligned, "profile --modelled {}: its copy's "
             "alignment is not the one asked for here (--unaligned)", f.modelled);
  }
  if (!f.json.empty()) write_json_file(f.json, "{\"incomplete\": \"halftape profile is still running or did not finish\"}\n");
  HT_CHECK(!f.measure || cuda_available(), "profile --measure: no GPU here (or a build without CUDA): the measured time "
           "needs one; leave out --measure for the MODELLED figures alone");
  HT_CHECK(!f.modelled.empty() || have_kernel_counters(), "profile: this build has no counting emulator (it needs the "
           "SIMT emulator and no sanitizer); --measure --modelled FILE measures beside a profile modelled elsewhere");
  const DType dtype = precision == "fp16" ? DType::f16 : precision == "bf16" ? DType::bf16 : DType::f32;
  const std::size_t es = dtype_size(dtype);
  // Default samples, the blocks counted a launch: two of a persistent GEMM's (each walks its share
  // of the tiles); 64 of attention's, evenly spaced, so that a causal mask's short and long rows
  // are both counted (at T/64 query tiles a head, every tile of one head); a copy's eight.
  const std::int64_t sample = f.sample_blocks ? f.sample_blocks : f.kernel == "gemm" ? 2 : f.kernel == "attention" ? 64 : 8;
  Work work;
  // The kernel's operands on a backend, and the call that launches it there (the counting
  // emulator's, and with --measure the GPU's).
  using Buffers = std::vector<std::unique_ptr<DeviceBuffer>>;
  const auto prepare = [&](Backend& b, Buffers& buffers) -> std::function<void()> {
    const auto buffer = [&](std::size_t bytes) {
      buffers.push_back(std::make_unique<DeviceBuffer>(b, bytes));
      return buffers.back()->data;
    };
    if (f.kernel == "gemm") {
      const std::vector<std::int64_t> d = parse_shape(f.shape, 3, "M,N,K");
      const std::int64_t M = d[0], N = d[1], K = d[2];
      LinearGemmArgs a{.gemm = {.op = GemmOp::nt, .M = M, .N = N, .K = K, .a = buffer(static_cast<std::size_t>(M * K) * es),
                                .b = buffer(static_cast<std::size_t>(N * K) * es), .dtype = dtype},
                       .epilogue = Epilogue::cast, .out = buffer(static_cast<std::size_t>(M * N) * es)};
      if (f.gemm_design == "first") b.set_gemm_impl(GemmImpl::wgmma_first_design);
      work.useful_flops = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
      work.what = fmt::format("{} GEMM {}x{}x{} (nt: A {}x{}, B {}x{}), {}", precision, M, N, K, M, K, N, K,
                              f.gemm_design == "first" ? "the first wgmma design" : b.gemm_kernel_name(dtype));
      return [&b, a] { b.linear_gemm(a); };
    }
    if (f.kernel == "attention") {
      const std::vector<std::int64_t> d = parse_shape(f.shape, 4, "batch,seq,heads,head_dim");
      const std::int64_t B = d[0], T = d[1], H = d[2], D = d[3], C = H * D;
      AttentionArgs a{.qkv = buffer(static_cast<std::size_t>(B * T * 3 * C) * es), .out = buffer(static_cast<std::size_t>(B * T * C) * es),
                      .lse = static_cast<float*>(buffer(static_cast<std::size_t>(B * H * T) * sizeof(float))), .dtype = dtype,
                      .batch = B, .seq = T, .heads = H, .head_dim = D, .scale = 1.0f / std::sqrt(static_cast<float>(D)), .dropout = {}};
      // causal: half of the 4·B·H·T²·D of the full score and output products (FlashAttention's convention)
      work.useful_flops = 2.0 * static_cast<double>(B * H * D) * static_cast<double>(T) * static_cast<double>(T);
      work.what = fmt::format("{} causal attention forward, batch {}, seq {}, {} heads of {}", precision, B, T, H, D);
      return [&b, a] { b.attention(a); };
    }
    const std::int64_t n = parse_shape(f.shape, 1, "elements")[0];
    const std::size_t off = f.unaligned ? es : 0;  // one element past the packs' alignment
    void* src = static_cast<char*>(buffer(static_cast<std::size_t>(n) * es + off)) + off;
    void* dst = static_cast<char*>(buffer(static_cast<std::size_t>(n) * es + off)) + off;
    const CastArgs a{.src = src, .src_dtype = dtype, .dst = dst, .dst_dtype = dtype, .n = n};
    work.bytes = 2.0 * static_cast<double>(n) * static_cast<double>(es);
    work.what = fmt::format("{} copy of {} elements ({} MB read, as many written){}", precision, n,
                            n * static_cast<std::int64_t>(es) / 1000000,
                            f.unaligned ? ", one element off the 16-byte packs (scalar accesses)" : "");
    return [&b, a] { b.cast(a); };
  };
  nlohmann::json out;  // the MODELLED figures: counted here, or the earlier profile's
  if (earlier) {
    out = *earlier;
    std::cout << fmt::format("halftape profile --kernel {} | MODELLED on {} by an earlier profile ({}) | {} {}\n", f.kernel,
                             gpu.name, f.modelled, precision, f.shape);
  } else {
    emulate_gpu(gpu);
    std::unique_ptr<Backend> backend = make_backend(DeviceChoice::simt_counted, 0);
    Buffers buffers;
    const std::function<void()> run = prepare(*backend, buffers);
    std::cout << fmt::format("halftape profile --kernel {} | MODELLED on {} from the emulator's counters | {}\n", f.kernel,
                             gpu.name, work.what);
    backend->synchronize();
    take_kernel_counters();  // the backend's own first work (the wgmma self-check) stays out of the count
    sample_kernel_blocks(static_cast<std::uint64_t>(sample));
    run();
    backend->synchronize();
    sample_kernel_blocks(0);
    const std::vector<KernelCounters> kernels = take_kernel_counters();
    HT_CHECK(!kernels.empty(), "profile: no kernel was counted (internal error)");

    const bench::KernelResourceTable resources = bench::KernelResourceTable::load(HALFTAPE_KERNEL_RESOURCES);
    const std::vector<ModelledKernel> modelled = model_kernels(gpu, kernels, resources);
    double total_us = 0;
    for (const ModelledKernel& m : modelled) total_us += m.estimate.us;
    print_kernel_header();
    nlohmann::json rows = nlohmann::json::array();
    for (const ModelledKernel& m : modelled) {
      print_kernel_row(m, 1.0, total_us);
      rows.push_back(kernel_json(m, 1.0, total_us));
      if (m.counters.sampled_blocks)
        std::cout << fmt::format("  ({} of its {} blocks counted, the figures scaled to all)\n", m.counters.sampled_blocks,
                                 m.counters.blocks);
    }
    const double tflops = work.useful_flops / (total_us * 1e-6) * 1e-12, gbps = work.bytes / (total_us * 1e-6) * 1e-9;
    std::cout << fmt::format("{}: {:.2f} us MODELLED on {} | {}\n", f.kernel, total_us, gpu.name,
                             work.useful_flops > 0 ? fmt::format("{:.0f} TFLOP/s", tflops) : fmt::format("{:.0f} GB/s", gbps));
    out = {{"modelled", true},
           {"model", "throughput and latency over the emulator's counters (bench/gpu_model.h, docs/performance-model.md)"},
           {"gpu", gpu_json(gpu)}, {"emulated_arch", gpu.arch}, {"kernel", f.kernel}, {"shape", f.shape},
           {"precision", precision}, {"what", work.what}, {"modelled_us", total_us}, {"kernels", rows}};
    if (f.kernel == "gemm") out["gemm_design"] = f.gemm_design;
    if (f.kernel == "copy") out["unaligned"] = f.unaligned;
    if (work.useful_flops > 0) out["tflops"] = tflops;
    else out["gbps"] = gbps;
  }
  // --measure: the same launch on this machine's GPU, timed with CUDA events (median of the repeats)
  if (f.measure) {
    std::unique_ptr<Backend> gpu_backend = make_backend(DeviceChoice::cuda, 0);
    check_measured_gpu(*gpu_backend, gpu);
    Buffers gpu_buffers;
    const std::function<void()> gpu_run = prepare(*gpu_backend, gpu_buffers);
    for (int i = 0; i < 3; ++i) gpu_run();
    std::vector<double> times;
    for (int i = 0; i < 20; ++i) {
      const std::unique_ptr<Event> start = gpu_backend->record_event();
      gpu_run();
      const std::unique_ptr<Event> end = gpu_backend->record_event();
      end->wait();
      times.push_back(1e3 * end->elapsed_ms_since(*start));
    }
    std::sort(times.begin(), times.end());
    const double measured_us = times[times.size() / 2], modelled_us = out.at("modelled_us").get<double>();
    std::cout << fmt::format("MEASURED on this GPU ({}): {:.2f} us (CUDA events, median of 20) | MODELLED {:.2f} us | "
                             "measured / modelled = {:.2f}\n", gpu_backend->description(), measured_us, modelled_us,
                             measured_us / modelled_us);
    out["measured_us"] = measured_us;
    out["measured_on"] = gpu_backend->description() + ": CUDA events around the launch, median of 20";
  }
  if (!f.json.empty()) write_json_file(f.json, out.dump(2) + "\n");
  HT_CHECK(std::cout.flush().good(), "writing the table to standard output failed");
  return 0;
}

}  // namespace ht::cli
