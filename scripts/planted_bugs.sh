#!/usr/bin/env bash
# Shows that the emulator tests catch real kernel bugs: for each planted bug (an off-by-one
# index, a missing __syncthreads, a swapped fragment register, a pipeline wait one short, split-K
# slices that miss part of K or a partial left out of their sum, a column sum's slice dropped, an
# attention dropout mask not applied or not regenerated, a warp skipping its diagonal tile, a
# second row tile, half key tile or query chunk taking another's mask, an optimizer that forgets
# to unscale), the
# script copies the repository, plants the bug with sed, builds the test binary for the
# emulator (no nvcc needed) and runs the kernel's tests, which must fail. The race plants are
# bugs no schedule of the emulator shows (the script runs the tests under the forward, reverse
# and shuffled schedules and prints that they pass) and the racecheck build (ThreadSanitizer,
# simt/racecheck.h) must report as a data race. The Hopper plants (a wrong swizzle mode or
# leading byte offset in the wgmma descriptors, a missing or too lax wgmma.wait_group, a stage
# released while its wgmma is in flight, an mbarrier armed with the wrong byte count, a tile's
# last stage never released, a partial group of tile rows walked as a whole one, the stage ring
# reset at a tile boundary, a 256-wide tile's second half dropped) run the wgmma GEMM's tests on
# an emulated sm_90. The NCCL plants (a rank skipping a bucket's allreduce, a reduce-scatter of
# another count on one rank, a collective queued on the stream the result is not read on) run the
# data-parallel tests on 2 ranks over the NCCL stand-in. The FP8 plants (the delayed recipe
# scaling from the step's own amax, the gradient cast as E4M3, a transposed copy a row off, the
# ranks' amaxes not reduced, and on the emulated sm_90 the E5M2 operand handed to the FP8 wgmma
# as E4M3) run the FP8 tests. Takes about 45 minutes;
# PLANTS=TEXT runs only the plants whose description contains TEXT (PLANTS=gemm_wgmma: the
# Hopper ones; PLANTS='attention|column sums': either).
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git ls-files | tar cf - -T - | (mkdir -p "$work/src" && cd "$work/src" && tar xf -)
cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHALFTAPE_CUDA=OFF >/dev/null
ninja -C "$work/build" tests/halftape_tests tests/halftape_mpi_tests >/dev/null || { echo "the clean tree does not build"; exit 1; }
cmake -S "$work/src" -B "$work/race" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" \
      -DHALFTAPE_RACECHECK=ON >/dev/null
ninja -C "$work/race" tests/halftape_racecheck_tests >/dev/null || { echo "the clean tree does not build for the racecheck"; exit 1; }

status=0
mpiexec=$(command -v mpiexec)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALFTAPE_SIMT_THREADS=1
wanted() {  # DESCRIPTION: does PLANTS (TEXT or TEXT|TEXT...) pick it?
  local pattern patterns
  IFS='|' read -ra patterns <<< "${PLANTS:-}"
  [[ ${#patterns[@]} -eq 0 ]] && return 0
  for pattern in "${patterns[@]}"; do [[ $1 == *"$pattern"* ]] && return 0; done
  return 1
}
plant() {  # FILE SED_EXPRESSION TEST_FILTER DESCRIPTION
  local file=$1 expr=$2 filter=$3 what=$4
  wanted "$what" || return 0
  cp "$work/src/$file" "$work/original"
  sed -i "$expr" "$work/src/$file"
  if cmp -s "$work/src/$file" "$work/original"; then echo "?    $what: the sed expression changed nothing"; status=1; return; fi
  if ! ninja -C "$work/build" tests/halftape_tests >"$work/build.log" 2>&1; then
    echo "?    $what: does not build"; status=1
  elif "$work/build/tests/halftape_tests" "$filter" >"$work/test.log" 2>&1; then
    echo "MISS $what: the tests still pass"; status=1
  else
    summary=$(grep -Eo 'test cases: +[0-9]+ \| +[0-9]+ passed \| +[0-9]+ failed' "$work/test.log" | tail -1)
    echo "ok   $what: ${summary:-$(grep -v '^\s*$' "$work/test.log" | tail -1)}"
  fi
  cp "$work/original" "$work/src/$file"
}

plant kernels/cross_entropy.cu 's/dz\[i\] = from_float<T>(grad(to_float(z\[i\]), i));/dz[i + (i + 1 < classes)] = from_float<T>(grad(to_float(z[i]), i));/' \
  "kernel cross_entropy*" "cross_entropy: gradient written one column off"
plant kernels/cross_entropy.cu 's/s.sum = s.sum \* expf(s.max - v) + 1.0f;/s.sum = s.sum + 1.0f;/' \
  "kernel cross_entropy*" "cross_entropy: the online sum not rescaled when the row's max grows"
plant kernels/cross_entropy.cu 's/(kPacked ? label \/ kPack : label) % 32/label % 32/' \
  "kernel cross_entropy*" "cross_entropy: the label's logit taken from the wrong lane of a packed row"
plant kernels/gemm_tiled.cu '0,/    __syncthreads();/s///' "kernel gemm*" "gemm_tiled: __syncthreads() after the tile loads removed"
plant kernels/grad_stats.cu 's/for (std::int64_t i = chunk.begin + threadIdx.x; i < chunk.end;/for (std::int64_t i = chunk.begin + threadIdx.x + 1; i < chunk.end;/' \
  "kernels check_norm*" "check_norm: every thread starts one element late"
plant kernels/attention_tc.cu 's/            if (!(kept\[i\] >> (4 \* nt + 2 \* r + e) \& 1u))/            if (false \&\& !(kept[i] >> (4 * nt + 2 * r + e) \& 1u))/' \
  "kernel attention*" "attention forward: the probabilities' dropout mask drawn but never applied"
plant kernels/attention_tc.cu 's/  const bool needed = kt \* kRows < w0 + 16 \* M;/  const bool needed = kt * kRows < w0;/' \
  "kernel attention*" "attention forward and dQ: a warp skips the key tile that starts at its first query (its diagonal)"
plant kernels/attention_tc.cu 's/  for (int i = 0; i < M; ++i) kept\[i\] = sbits\[i \* kThreads\];/  for (int i = 0; i < M; ++i) kept[i] = sbits[0];/' \
  "kernel attention*" "attention forward and dQ: the second row tile takes the first one's dropout bits"
plant kernels/attention_tc.cu 's/            const bool keep = kept\[i\] >> (4 \* (4 \* half + nt) + e) \& 1u;/            const bool keep = kept[i] >> (4 * nt + e) \& 1u;/' \
  "kernel attention*" "attention dQ: the second half of a key tile takes the first half's dropout bits"
plant kernels/attention_tc.cu 's/            const bool keep = tile_kept\[i\] >> (8 \* j + 4 \* nt + e) \& 1u;/            const bool keep = (tile_kept[i] | ~0u) >> (8 * j + 4 * nt + e) \& 1u;/' \
  "kernel attention*" "attention dK and dV: the backward forgets the forward's mask"
plant kernels/attention_tc.cu 's/ \& 0xffu) << (8 \* j);/) << (8 * j);/' \
  "kernel attention*" "attention dK and dV: a 16-query chunk's dropout bits not cut to its 8 (later chunks read as kept)"
plant kernels/attention_tc.cu 's/    const bool needed = qt \* kRows + kRows > w0;/    const bool needed = qt * kRows > w0;/' \
  "kernel attention*" "attention dK and dV: a warp skips the query tile holding its first key (its diagonal)"
plant kernels/column_sums.cuh 's/if (threadIdx.y != 0 || c >= cols) return;/if (threadIdx.y != 1 || c >= cols) return;/' \
  "kernel bias_grad*" "column sums: the wrong row group publishes the column sums"
plant kernels/reduce.cuh 's/for (int z = 0; z < slices; ++z)/for (int z = 0; z + 1 < slices; ++z)/' \
  "kernel bias_grad*" "column sums: sum_slices drops the last row slice"
plant kernels/elementwise.cuh 's/    done = packs \* kPack;/    done = packs * kPack + 1;/' \
  "*packed where aligned*" "element-wise maps: the first element after the packs skipped"
plant kernels/optimizers.cu '0,/control, unscale_factor(\*state),/s//control, 1.0f,/' \
  "kernels sgd and adamw unscale*" "AdamW: the optimizer forgets to unscale the arena's scaled gradients"
plant kernels/gemm_mma.cuh 's/        bf\[j\]\[1\] = r\[1\];/        bf[j][1] = r[2];/' "[gemm]~[.]" "gemm_mma: B fragment registers swapped"
plant kernels/gemm_mma.cuh 's/cp_async_wait<kStages - 2>();/cp_async_wait<kStages - 1>();/' "[gemm]~[.]" \
  "gemm_mma: the pipeline waits for one cp.async group too few"
plant kernels/gemm_mma.cuh 's/  return {static_cast<int>((k_tiles + per - 1) \/ per), per \* kBK};/  return {static_cast<int>((k_tiles + per - 1) \/ per), per * kBK - kBK};/' \
  "[gemm]~[.]" "gemm_mma split-K: each slice one K-tile short (the slices no longer cover K)"
plant kernels/reduce.cuh 's/for (int z = 0; z < slices; ++z)/for (int z = 1; z < slices; ++z)/' \
  "[gemm]~[.]" "gemm_mma split-K: sum_slices leaves the first slice's partial out"
plant kernels/reduce.cuh '0,/  __syncthreads();/s///' "[kernels]~[.]" "block_sum: the barrier between the warp sums and their reduction removed"
# A race plant: every schedule of the emulator still computes the right answer; ThreadSanitizer
# must report the race.
race_plant() {  # FILE SED_EXPRESSION TEST_FILTER DESCRIPTION
  local file=$1 expr=$2 filter=$3 what=$4 order missed=""
  wanted "$what" || return 0
  cp "$work/src/$file" "$work/original"
  sed -i "$expr" "$work/src/$file"
  if cmp -s "$work/src/$file" "$work/original"; then echo "?    $what: the sed expression changed nothing"; status=1; return; fi
  if ! ninja -C "$work/build" tests/halftape_tests >"$work/build.log" 2>&1 ||
     ! ninja -C "$work/race" tests/halftape_racecheck_tests >>"$work/build.log" 2>&1; then
    echo "?    $what: does not build"; status=1; cp "$work/original" "$work/src/$file"; return
  fi
  for order in forward reverse shuffle; do
    HALFTAPE_SIMT_SCHEDULE=$order "$work/build/tests/halftape_tests" "$filter" >"$work/test.log" 2>&1 && missed+=" $order"
  done
  echo "     $what: the emulator's schedules that miss it (tests pass):${missed:- none}"
  if OPENBLAS_NUM_THREADS=1 TSAN_OPTIONS=halt_on_error=1:exitcode=66 "$work/race/tests/halftape_racecheck_tests" "$filter" \
       >"$work/race.log" 2>&1; then
    echo "MISS $what: the racecheck reports nothing"; status=1
  elif grep -q "ThreadSanitizer: data race" "$work/race.log"; then
    echo "ok   $what: racecheck: $(grep -m1 -Eo "Thread T[0-9]+ 'kernel [^']*'" "$work/race.log")"
  else
    echo "?    $what: the racecheck failed without a race report"; tail -5 "$work/race.log"; status=1
  fi
  cp "$work/original" "$work/src/$file"
}

race_plant kernels/reduce.cuh '0,/  __syncthreads();/s//  __syncwarp();/' "[kernels]~[.]" \
  "block_sum: a warp barrier where the block barrier between the warp sums and their reduction belongs"
race_plant kernels/gemm_mma.cuh \
  '/    __syncthreads();               \/\/ ... for every thread/d; /if (next < k_tiles) load_stage(static_cast<int>(next % kStages), k_begin + next \* kBK);/s/$/\n    __syncthreads();/' \
  "[gemm]~[.]" "gemm_mma: the next stage's cp.async issued before the barrier that frees its buffer (overwritten one stage early)"
# Hopper: the wgmma GEMM on an emulated sm_90 (its FP64 test and the emulator's misuse checks).
export HALFTAPE_SIMT_ARCH=sm_90
plant kernels/gemm_wgmma.cu 's/(std::uint64_t{1} << 62)/(std::uint64_t{2} << 62)/' "[hopper][gemm]" \
  "gemm_wgmma: the descriptors say 64B swizzle where TMA wrote 128B"
plant kernels/gemm_wgmma.cu 's/(std::uint64_t{16 >> 4} << 16)/(std::uint64_t{1024 >> 4} << 16)/' "[hopper][gemm]" \
  "gemm_wgmma: the descriptors' leading byte offset set to the atom stride"
plant kernels/gemm_wgmma.cu '/  sm90::wgmma_wait<0>();  \/\/ the tile.s last batch/d' "[hopper][gemm]" \
  "gemm_wgmma: no wgmma.wait_group 0 before the accumulators are stored"
plant kernels/gemm_wgmma.cu 's/sm90::wgmma_wait<kKeep>();/sm90::wgmma_wait<kKeep + 1>();/' "[hopper][gemm]" \
  "gemm_wgmma: wait_group 2, so the released stage's wgmma may still be in flight"
plant kernels/gemm_wgmma.cu 's/} else if (kt > 0 \&\& t == 0) {/} else if (t == 0) {/; s/sm90::mbar_arrive(&empty\[(it - 1) % L::kStages\]);  \/\/ done reading stage of kt - 1/sm90::mbar_arrive(\&empty[it % L::kStages]);/' \
  "[hopper][gemm]" "gemm_wgmma: a stage released while its own wgmma is in flight"
plant kernels/gemm_wgmma.cu 's/sm90::mbar_expect_tx(&full\[s\], L::kStageBytes);/sm90::mbar_expect_tx(\&full[s], L::kStageBytes \/ 2);/' \
  "[hopper][gemm]" "gemm_wgmma: the full barrier armed with half the stage's bytes"
plant kernels/gemm_wgmma.cu '/    if (t == 0) sm90::mbar_arrive(&empty\[(it - 1) % L::kStages\]);  \/\/ its stage/d' "[hopper][gemm]" \
  "gemm_wgmma: a tile's last stage never released (the persistent walk's next tile waits for it)"
plant kernels/gemm_wgmma.cu 's/const int rows = tiles_m - first < kGroupM ? tiles_m - first : kGroupM,/const int rows = kGroupM,/' \
  "[hopper][gemm]" "gemm_wgmma: the last, partial group of tile rows walked as a whole one"
# The self-check's shapes at 132 SMs: 256-wide tiles and several tiles a block.
export HALFTAPE_SIMT_SMS=132
plant kernels/gemm_wgmma.cu 's/^    float d\[kBN \/ 2\];/    it = 0;\n    float d[kBN \/ 2];/' "[hopper-wide]" \
  "gemm_wgmma: the consumers' stage ring reset at each tile (position and phase), the producer's running on"
plant kernels/gemm_wgmma.cu 's/for (int j = 0; j < kBN \/ 8; ++j) {/for (int j = 0; j < (kBN == 256 ? 16 : kBN \/ 8); ++j) {/' \
  "[hopper-wide]" "gemm_wgmma: a 256-wide tile's second half of columns never stored"
plant kernels/ptx_sm90.cuh 's/ht::emu::wgmma_mma_async_fp8(A == Fp8Kind::e5m2,/ht::emu::wgmma_mma_async_fp8(false,/' "[hopper]" \
  "gemm_wgmma (FP8): the E5M2 operand handed to wgmma as E4M3"
unset HALFTAPE_SIMT_ARCH HALFTAPE_SIMT_SMS
# NCCL's contract, over the stand-in this build (without CUDA) links in NCCL's place: the data
# parallel tests on 2 ranks, simt device, NCCL communicator (tests/test_data_parallel.cpp).
mpi_plant() {  # TRANSPORT (nccl | mpi) FILE SED_EXPRESSION TEST_FILTER DESCRIPTION
  local transport=$1 file=$2 expr=$3 filter=$4 what=$5
  wanted "$what" || return 0
  cp "$work/src/$file" "$work/original"
  sed -i "$expr" "$work/src/$file"
  if cmp -s "$work/src/$file" "$work/original"; then echo "?    $what: the sed expression changed nothing"; status=1; return; fi
  if ! ninja -C "$work/build" tests/halftape_mpi_tests >"$work/build.log" 2>&1; then
    echo "?    $what: does not build"; status=1
  elif timeout 300 "$mpiexec" -n 2 --oversubscribe --bind-to none -x HT_TEST_COMM="$transport" \
         "$work/build/tests/halftape_mpi_tests" "$filter" >"$work/test.log" 2>&1; then
    echo "MISS $what: the tests still pass"; status=1
  elif grep -q "did not complete within\|timeout" "$work/test.log"; then
    echo "MISS $what: caught by a timeout, not by a test"; status=1
  else
    summary=$(grep -Eo 'test cases: +[0-9]+ \| +[0-9]+ passed \| +[0-9]+ failed' "$work/test.log" | tail -1)
    echo "ok   $what: ${summary:-$(grep -Eam1 'NCCL stand-in: |FAILED|error:' "$work/test.log" | cut -c1-160)}"
  fi
  cp "$work/original" "$work/src/$file"
}
mpi_plant nccl comm/reducer.cpp 's/    b.request = comm_.allreduce_async(wire, n,/    b.request = (comm_.rank() == 1 \&\& b.begin == 0 ? *make_single_process_communicator() : comm_).allreduce_async(wire, n,/' \
  "data parallel: N ranks with batch*" "nccl: rank 1 skips one bucket's allreduce"
mpi_plant nccl comm/nccl_communicator.cpp 's/ncclReduceScatter(send, recv, static_cast<std::size_t>(count),/ncclReduceScatter(send, recv, static_cast<std::size_t>(count + (rank_ == 1)),/' \
  "collectives:*" "nccl: a reduce-scatter with another count on rank 1"
mpi_plant nccl comm/nccl_communicator.cpp '0,/nccl_op(op), comm_, compute_));/s//nccl_op(op), comm_, comm_stream_));/' \
  "data parallel: an overflow on rank 1*" "nccl: the overflow flag's allreduce queued on the communication stream, read on the compute stream before it completes"
# FP8 (--precision fp8): the recipe, the formats, the casts' transposes, the ranks' amaxes.
plant engine/fp8_state.cpp 's/  const bool current = config_.recipe == Fp8Recipe::current;/  const bool current = true;/' "[fp8]" \
  "fp8: the delayed recipe casts with a scale from the current step's own amax"
plant engine/fp8_state.cpp 's/  const Fp8Kind kind = fp8_slot_kind(slot);/  const Fp8Kind kind = Fp8Kind::e4m3;/' "[fp8]" \
  "fp8: the gradient (an E5M2 operand) cast as E4M3"
plant kernels/fp8_cast.cu 's/const std::int64_t c = c0 + j, r = r0 + threadIdx.x;/const std::int64_t c = c0 + j, r = r0 + threadIdx.x + 1;/' "[fp8]" \
  "fp8_cast: the transposed copy written one row off"
mpi_plant mpi train/trainer_step.cpp 's/    if (comm_.world_size() > 1 \&\& fp8->tensors().count > 0)/    if (false)/' \
  "data parallel: FP8*" "fp8: the step's amaxes not MAX-reduced across the ranks"
exit $status
