#!/usr/bin/env bash
# The GPU check: one call on a machine with an NVIDIA GPU, inside one deadline.
#
#   scripts/gpu-check.sh [--budget SECONDS] [--build DIR]
#
# --budget (default 420): the whole run's wall-clock budget. Each step runs under the smaller of
#   its own limit and what is left of the budget; once it is spent the remaining steps are listed
#   as not run. gpu-report.md is rewritten after every step and once more on exit (an EXIT trap),
#   so whatever finished is in it even when the script is stopped from outside.
# --build DIR: take halftape and halftape_tests from an existing build folder. Without it the
#   binaries come from .gpu-bundle/bundle.tar.gz (scripts/gpu-bundle.sh, made on a machine
#   without a GPU), else they are built here (Release, sm_90).
#
# The steps, the most valuable first:
#   1. facts: GPU, driver, CUDA, glibc, that every library resolves, and that halftape starts on
#      the GPU (which runs the wgmma GEMM's start-up self-check, engine/gpu/wgmma_self_check.cpp);
#   2. the wgmma GEMM against FP64 on the self-check's shapes (256-wide and persistent tiles);
#      its FP8 form (opted into with HALFTAPE_FP8_WGMMA=1) against the CPU reference;
#   3. halftape bench all --device cuda (no PyTorch), then the one-rank NCCL allreduce bench;
#      the default GPT's step with every launch timed beside its MODELLED row, and five kernels
#      one at a time beside theirs (halftape profile --measure);
#   4. training: the MLP through each GEMM path, --cuda-graph and NCCL; nanoGPT's shakespeare-char
#      recipe in bf16 for 200 steps; the char GPT for 500 steps in bf16 and in fp8 (both
#      recipes); GPT-2 small for 10 bf16 steps;
#   5. the PyTorch AMP baseline, eager first (its own JSON and time limit), then torch.compile;
#   6. the unit and kernel tests on --device cuda.
# The performance model's figures (halftape profile, MODELLED on the emulator's counters) come
# with the bundle (modelled/profile-<gpu>.json and kernel-<gpu>-<i>.json, made by gpu-bundle.sh);
# with --build DIR they are made here, where that build has the counting emulator. The report
# sets each beside its measured time.
#
# Output in $OUT (or ./gpu-report): gpu-report.md, log.txt, bench.json, bench-nccl.json,
# pytorch.json, pytorch-compile.json, metrics JSONL, plots.
#
# Test hooks (tests/gpu_check.sh): GPU_CHECK_FAKE_GPU=1 goes on past a failed start, so
# that the steps run (and fail) without a GPU; GPU_CHECK_SLOW=NAME makes the step of
# that name sleep past any limit.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
budget=420 build_dir=
while (($#)); do
  case $1 in
    --budget) budget=${2:?--budget needs a number of seconds}; shift 2 ;;
    --build) build_dir=${2:?--build needs a folder}; shift 2 ;;
    *) echo "gpu-check: unknown argument '$1' (usage: scripts/gpu-check.sh [--budget SECONDS] [--build DIR])" >&2; exit 2 ;;
  esac
done
[[ $budget =~ ^[0-9]+$ && $budget -ge 10 ]] || { echo "gpu-check: --budget $budget: give a whole number of seconds, at least 10" >&2; exit 2; }

out=${OUT:-$repo/gpu-report}
mkdir -p "$out"
log=$out/log.txt
: >"$log"
started=$SECONDS
deadline=$((started + budget))
step_names=() step_results=() step_seconds=()
notes=()      # extra lines for the report (skips, reasons)
gpu_usable=1  # cleared when halftape cannot start on the GPU
say() { echo "$@" | tee -a "$log"; }

# --- the report: written after every step and on exit -------------------------------------
profile_json=
write_report() {
  local tmp=$out/.gpu-report.md.tmp failed=0 i
  for i in "${!step_results[@]}"; do [[ ${step_results[$i]} == ok* ]] || failed=1; done
  {
    echo "# GPU check"
    echo
    echo "- date: $(date -u +%Y-%m-%d)"
    echo "- commit: ${commit:-unknown}"
    echo "- GPU: ${gpu:-none found}"
    echo "- driver: ${driver:-none}"
    echo "- CUDA: ${cuda_version:-unknown}"
    echo "- glibc: ${glibc:-unknown}"
    echo "- budget: ${budget} s, used $((SECONDS - started)) s"
    echo "- result: $( ((failed)) && echo "not all steps passed (below)" || echo "every step passed")"
    echo
    echo "## Steps"
    echo
    echo "| step | result | seconds |"
    echo "|---|---|---|"
    for i in "${!step_names[@]}"; do echo "| ${step_names[$i]} | ${step_results[$i]} | ${step_seconds[$i]} |"; done
    echo
    for line in "${notes[@]}"; do echo "- $line"; done
    ((${#notes[@]})) && echo
    report_training
    report_model
    report_benchmarks
  } >"$tmp" 2>>"$log"
  mv -f "$tmp" "$out/gpu-report.md"
}
val_losses() { grep -o '"val_loss": *[0-9.]*' "$1" 2>/dev/null | grep -o '[0-9.]*$' | tr '\n' ' '; }
report_training() {
  if [[ -s $out/nanogpt-bf16.jsonl ]]; then
    echo "nanoGPT's shakespeare-char recipe, bf16, 200 steps: validation losses $(val_losses "$out/nanogpt-bf16.jsonl")(nanoGPT's README: 1.4697 after 5000 steps)."
    echo
  fi
  if [[ -s $out/gpt500-bf16.jsonl ]]; then
    echo "char GPT, 500 steps, validation losses: bf16 $(val_losses "$out/gpt500-bf16.jsonl")| fp8 delayed $(val_losses "$out/gpt500-fp8-delayed.jsonl")| fp8 current $(val_losses "$out/gpt500-fp8-current.jsonl")(docs/numerics.md: the 2000-step comparison on the CPU reference)."
    echo
  fi
  if [[ -s $out/gpt-fp16-eval.json && -s $out/gpt-fp16.jsonl ]]; then
    echo "GPT fp16, 200 steps: halftape's last validation loss $(val_losses "$out/gpt-fp16.jsonl" | awk '{print $NF}'); PyTorch recomputes $(val_losses "$out/gpt-fp16-eval.json") from the checkpoint."
    echo
  fi
}
report_model() {
  [[ -n $profile_json && -s $profile_json ]] || return 0
  echo "## The performance model (MODELLED), and kernels measured beside it"
  echo
  /usr/bin/env python3 - "$profile_json" "$out/bench.json" <<'PY' || echo "(the modelled profile could not be read: see log.txt)"
import json, os, sys
profile = json.load(open(sys.argv[1]))
gpu = profile.get("gpu", {}).get("name", "?")
step = profile.get("modelled_step_ms")
print(f"`halftape profile` of the default GPT on the emulator's counting executor, modelled for {gpu} "
      f"(throughput and latency over exact counters, bench/gpu_model.h): one fp16 training step MODELLED at {step:.3f} ms.")
measured = None
if os.path.exists(sys.argv[2]):
    try:
        bench = json.load(open(sys.argv[2]))
        rows = [r for r in bench.get("results", []) if r.get("name") == "train step gpt 4x128 t64 b12 fp16"]
        measured = rows[0]["median_ms"] if rows else None
    except (ValueError, KeyError):
        pass
if measured is not None:
    print(f"Measured here (halftape bench, median): {measured:.3f} ms; measured / modelled = {measured / step:.2f}.")
else:
    print("No measured step beside it (bench.json has no `train step gpt 4x128 t64 b12 fp16`).")
print()
import glob
pairs = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(os.path.dirname(sys.argv[2]), "kernel-*.json")))]
pairs = [p for p in pairs if "measured_us" in p]
if pairs:
    print("One kernel at a time (`halftape profile --kernel ... --measure`): MEASURED here with CUDA events "
          "(median of 20) beside the model's figure (MODELLED from the emulator's counters). These pairs refit the "
          "model's constants (docs/performance-model.md).")
    print()
    print("| kernel | shape | MEASURED us | MODELLED us | measured / modelled | modelled bound |")
    print("|---|---|---|---|---|---|")
    for p in pairs:
        bound = p["kernels"][0]["bound"] if p.get("kernels") else "?"
        print(f"| {p['kernel']} | {p['shape']} | {p['measured_us']:.1f} | {p['modelled_us']:.1f} | "
              f"{p['measured_us'] / p['modelled_us']:.2f} | {bound} |")
    print()
step_measured = os.path.join(os.path.dirname(sys.argv[2]), "step-measured.json")
if os.path.exists(step_measured):
    try:
        sm = json.load(open(step_measured))
        m = sm["measured"]
        print(f"One training step on this GPU ({m['on']}), every launch bracketed with CUDA events "
              f"(`halftape profile --measure`): kernels MEASURED {m['kernels_ms']:.3f} ms, the whole step "
              f"{m['step_ms']:.3f} ms, MODELLED {sm['modelled_step_ms']:.3f} ms.")
        print()
        print("| kernel | launches | MEASURED us | MODELLED us | measured / modelled | modelled bound |")
        print("|---|---|---|---|---|---|")
        for k in sorted(sm["kernels"], key=lambda k: -(k.get("measured_us") or 0)):
            meas = k.get("measured_us")
            ratio = f"{meas / k['modelled_us']:.2f}" if meas and k.get("modelled_us") else "-"
            print(f"| {k['name']} | {k['launches']:g} | {'-' if meas is None else f'{meas:.1f}'} | "
                  f"{k['modelled_us']:.1f} | {ratio} | {k['bound']} |")
        for k in m.get("kernels_not_modelled", []):
            print(f"| {k['name']} (not counted by the emulator) | {k['launches']:g} | {k['measured_us']:.1f} | - | - | - |")
        print()
    except (ValueError, KeyError, TypeError) as e:
        print(f"(step-measured.json could not be read: {e})")
        print()
kernels = sorted(profile.get("kernels", []), key=lambda k: -k.get("modelled_us", 0))[:12]
if kernels:
    print("| kernel (largest modelled times) | launches | MODELLED us | bound by |")
    print("|---|---|---|---|")
    for k in kernels:
        print(f"| {k.get('name', '?')} | {k.get('launches', '?')} | {k.get('modelled_us', 0):.2f} | {k.get('bound', '?')} |")
    print()
PY
}
report_benchmarks() {
  local reports=() f
  for f in "$out/bench.json" "$out/bench-nccl.json" "$out/pytorch.json" "$out/pytorch-compile.json"; do
    [[ -s $f ]] && grep -q '"results"' "$f" && reports+=("$f")
  done
  ((${#reports[@]})) || return 0
  echo "## Benchmarks (measured here)"
  echo
  local plots=()
  /usr/bin/env python3 -c "import matplotlib" 2>/dev/null && plots=(--plots "$out")
  /usr/bin/env python3 "$scripts/bench_report.py" "${reports[@]}" "${plots[@]}" || echo "(bench_report.py failed: see log.txt)"
}
trap 'write_report; say "report: $out/gpu-report.md ($((SECONDS - started)) s)"' EXIT
trap 'exit 143' TERM INT

# --- steps ----------------------------------------------------------------------------------
record() { step_names+=("$1"); step_results+=("$2"); step_seconds+=("$3"); write_report; }
# run NAME LIMIT [--gpu] COMMAND...: runs under min(LIMIT, what is left), logs, records; never
# stops the script. --gpu: skipped once halftape could not use the GPU.
run() {
  local name=$1 limit=$2 needs_gpu=0
  shift 2
  [[ ${1:-} == --gpu ]] && { needs_gpu=1; shift; }
  if ((needs_gpu && !gpu_usable)); then record "$name" "not run (halftape cannot use the GPU)" 0; return 1; fi
  local left=$((deadline - SECONDS))
  if ((left < 3)); then record "$name" "not run (budget spent)" 0; return 1; fi
  ((limit > left)) && limit=$left
  [[ -n ${GPU_CHECK_SLOW:-} && $name == "$GPU_CHECK_SLOW" ]] && set -- sleep 100000
  say
  say "== $name (limit $limit s, at $((SECONDS - started)) s)"
  say "\$ $*"
  local t0=$SECONDS rc=0
  timeout -k 5 "$limit" "$@" >>"$log" 2>&1 || rc=$?
  local took=$((SECONDS - t0)) result
  case $rc in
    0) result=ok ;;
    124 | 137) result="TIMEOUT (stopped at $limit s)" ;;
    *) result="FAIL (exit $rc)" ;;
  esac
  say "$result: $name"
  record "$name" "$result" "$took"
  ((rc == 0))
}
# halftape's own binaries find their libraries through RPATH ($ORIGIN/../lib); the GPU machine's
# CUDA libraries (cuBLAS, NCCL) are added for them alone ("${ht_env[@]}" COMMAND), never for
# python3 and PyTorch.

# --- binaries -------------------------------------------------------------------------------
ht_env=(env)
if [[ -n $build_dir ]]; then
  bin=$build_dir/halftape tests=$build_dir/tests/halftape_tests scripts=$repo/scripts
  corpus=/usr/share/datasets/shakespeare/shakespeare.txt
  commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
  say "binaries from $build_dir"
elif [[ -f .gpu-bundle/bundle.tar.gz ]]; then
  root=$(mktemp -d)
  tar xzf .gpu-bundle/bundle.tar.gz -C "$root"
  root=$root/halftape
  bin=$root/bin/halftape tests=$root/bin/halftape_tests scripts=$root/scripts
  corpus=$root/data/shakespeare.txt
  commit=$(cat "$root/COMMIT")
  cuda_libs=$(python3 - <<'PY' 2>/dev/null
import glob, os, importlib.util
dirs = ["/usr/local/cuda/lib64", "/usr/local/cuda/lib"]
for pkg in ("nvidia.nccl", "nvidia.cublas", "nvidia.cuda_runtime", "nvidia.cu13"):
    try:
        spec = importlib.util.find_spec(pkg)
    except Exception:
        spec = None
    for loc in (spec.submodule_search_locations or []) if spec else []:
        dirs += [d for d in glob.glob(os.path.join(loc, "**", "lib"), recursive=True) if os.path.isdir(d)]
print(":".join(d for d in dict.fromkeys(dirs) if os.path.isdir(d)))
PY
)
  say "bundle of commit $commit unpacked in $root"
  ht_env=(env "LD_LIBRARY_PATH=${cuda_libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
else
  say "no .gpu-bundle and no --build: building here (needs scripts/setup.sh's packages)"
  run "build (Release, sm_90)" 600 scripts/build.sh -DCMAKE_CUDA_ARCHITECTURES=90 -DHALFTAPE_SIMT=OFF
  bin=$repo/build/halftape tests=$repo/build/tests/halftape_tests scripts=$repo/scripts
  corpus=/usr/share/datasets/shakespeare/shakespeare.txt
  commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
fi

# --- 1. facts -------------------------------------------------------------------------------
IFS=, read -r gpu driver gpu_memory < <(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
gpu=${gpu# } driver=${driver# }
cuda_version=$(nvcc --version 2>/dev/null | tail -1)
glibc=$(ldd --version 2>/dev/null | head -1)
say "GPU: ${gpu:-none found} (driver ${driver:-none}, ${gpu_memory:-?})"
say "CUDA: ${cuda_version:-no nvcc}; glibc: $glibc"
missing=$("${ht_env[@]}" ldd "$bin" "$tests" 2>&1 | grep "not found" | sort -u)
if [[ -n $missing ]]; then
  say "missing libraries:"; say "$missing"; record "every library resolves" "FAIL: $(echo "$missing" | awk '{print $1}' | tr '\n' ' ')" 0
else
  record "every library resolves" ok 0
fi
if ! run "halftape starts on the GPU (and the wgmma self-check passes)" 60 "${ht_env[@]}" "$bin" train --device cuda --data synthetic --steps 1 --log-every 1 --no-progress; then
  if [[ ${GPU_CHECK_FAKE_GPU:-} == 1 ]]; then
    notes+=("GPU_CHECK_FAKE_GPU=1: the steps below ran although halftape could not use a GPU (a test of this script)")
  else
    gpu_usable=0
    notes+=("halftape could not use a GPU here: the GPU steps were not run (log.txt has its error)")
  fi
fi

# The modelled profile: the bundle's for this GPU, or made here by an emulator build.
case "$gpu" in
  *H200*) model_gpu=h200 ;; *H100*) model_gpu=h100 ;; *A100*) model_gpu=a100 ;; *) model_gpu=h100 ;;
esac
if [[ -n ${root:-} && -s $root/modelled/profile-$model_gpu.json ]]; then
  profile_json=$root/modelled/profile-$model_gpu.json
  record "the modelled profile for $model_gpu (made with the bundle, on the emulator)" ok 0
elif "$bin" profile --help >/dev/null 2>&1 && run "halftape profile --gpu $model_gpu (MODELLED, on the emulator)" 240 \
       "$bin" profile --gpu "$model_gpu" --model gpt --data "text:$corpus" --steps 1 --json "$out/profile-$model_gpu.json"; then
  profile_json=$out/profile-$model_gpu.json
fi
[[ -z $profile_json ]] && notes+=("no modelled profile: neither the bundle nor this build has one")

# --- 2. the wgmma GEMM on the self-check's shapes --------------------------------------------
run "wgmma GEMM vs FP64: the self-check's wide and persistent shapes" 120 --gpu "${ht_env[@]}" "$tests" "[wgmma-gpu]"

run "FP8 GEMM on Hopper's tensor cores (HALFTAPE_FP8_WGMMA=1) and on CUDA cores vs the reference" 60 --gpu "${ht_env[@]}" \
  HALFTAPE_FP8_WGMMA=1 "$tests" "[fp8-gpu]"

# --- 3. benchmarks ----------------------------------------------------------------------------
run "halftape bench all --device cuda" 150 --gpu "${ht_env[@]}" "$bin" bench all --device cuda --json "$out/bench.json"
run "halftape bench allreduce (NCCL, one rank)" 45 --gpu "${ht_env[@]}" "$bin" bench allreduce --device cuda --comm nccl --json "$out/bench-nccl.json"

# One training step, every launch MEASURED with CUDA events beside its MODELLED row; then one
# kernel at a time, each MEASURED (median of 20) beside the model's figure for this GPU. The
# modelled halves come from the bundle (made where the emulator ran: the bundle's GPU build has
# none), or are counted here by a build that has the emulator. The model's constants are refit
# from these pairs (docs/performance-model.md says how).
modelled_flag=()
[[ -n $profile_json ]] && modelled_flag=(--modelled "$profile_json")
run "one training step: every launch MEASURED (CUDA events) beside MODELLED" 120 --gpu "${ht_env[@]}" \
  "$bin" profile --gpu "$model_gpu" --model gpt --data "text:$corpus" --steps 1 --measure "${modelled_flag[@]}" \
  --json "$out/step-measured.json"
run "kernels one at a time: MEASURED (CUDA events) beside MODELLED" 150 --gpu "${ht_env[@]}" bash -c '
  bin=$0 gpu=$1 out=$2 modelled=$3 i=0
  for spec in "gemm 4096,4096,4096" "gemm 8192,8192,8192" "copy 67108864" "attention 4,4096,16,128" "attention 4,4096,32,64"; do
    set -- $spec
    from=()
    [[ -s $modelled/kernel-$gpu-$i.json ]] && from=(--modelled "$modelled/kernel-$gpu-$i.json")
    "$bin" profile --gpu "$gpu" --kernel "$1" --shape "$2" --precision bf16 --measure "${from[@]}" \
      --json "$out/kernel-$i.json" || exit 1
    i=$((i + 1))
  done' "$bin" "$model_gpu" "$out" "${root:-/nonexistent}/modelled"

# --- 4. training ------------------------------------------------------------------------------
synthetic=(train --device cuda --data synthetic --synthetic-features 784 --steps 200 --log-every 100 --no-progress)
run "train MLP fp16 --gemm native" 30 --gpu "${ht_env[@]}" "$bin" "${synthetic[@]}" --gemm native
run "train MLP fp16 --gemm cublas" 30 --gpu "${ht_env[@]}" "$bin" "${synthetic[@]}" --gemm cublas
run "train MLP bf16 --cuda-graph" 30 --gpu "${ht_env[@]}" "$bin" "${synthetic[@]}" --precision bf16 --cuda-graph
run "train MLP through NCCL (one rank, buckets)" 30 --gpu "${ht_env[@]}" "$bin" "${synthetic[@]}" --comm nccl --bucket-mb 0.25
# nanoGPT's config/train_shakespeare_char.py: 6 layers, 6 heads, 384 wide, block 256, batch 64,
# dropout 0.2; here 200 steps with the cosine over them, so the loss is set beside its published
# 5000-step figure, not its curve.
run "nanoGPT's shakespeare-char recipe, bf16, 200 steps" 120 --gpu "${ht_env[@]}" "$bin" train --device cuda --model gpt \
  --data "text:$corpus" --n-layer 6 --n-head 6 --n-embd 384 --block-size 256 --batch-size 64 --dropout 0.2 \
  --steps 200 --warmup-steps 20 --eval-every 100 --log-every 100 --no-progress --precision bf16 --metrics "$out/nanogpt-bf16.jsonl"
# FP8 (--precision fp8) beside bf16: the char GPT's recipe cut to 500 steps, both scaling recipes.
gpt_500=(train --device cuda --model gpt --data "text:$corpus" --steps 500 --eval-every 250 --log-every 100 --no-progress)
run "char GPT, 500 steps, bf16 (FP8's baseline)" 60 --gpu "${ht_env[@]}" "$bin" "${gpt_500[@]}" --precision bf16 \
  --metrics "$out/gpt500-bf16.jsonl"
run "char GPT, 500 steps, fp8, delayed scaling" 90 --gpu "${ht_env[@]}" "$bin" "${gpt_500[@]}" --precision fp8 \
  --fp8-recipe delayed --metrics "$out/gpt500-fp8-delayed.jsonl"
run "char GPT, 500 steps, fp8, current scaling" 90 --gpu "${ht_env[@]}" "$bin" "${gpt_500[@]}" --precision fp8 \
  --fp8-recipe current --metrics "$out/gpt500-fp8-current.jsonl"
# GPT-2 small on the Shakespeare bytes as nanoGPT-format uint16 tokens (no tokenizer needed).
tokens=$out/gpt2-tokens
if ((gpu_usable)); then
  mkdir -p "$tokens"
  /usr/bin/env python3 - "$corpus" "$tokens" <<'PY' >>"$log" 2>&1 || say "could not write the byte tokens"
import array, sys
data = open(sys.argv[1], "rb").read()
cut = len(data) * 9 // 10
array.array("H", list(data[:cut])).tofile(open(f"{sys.argv[2]}/train.bin", "wb"))
array.array("H", list(data[cut:])).tofile(open(f"{sys.argv[2]}/val.bin", "wb"))
PY
fi
run "GPT-2 small: 10 bf16 steps, batch 8 x 1024 (step time in the metrics)" 120 --gpu "${ht_env[@]}" "$bin" train --device cuda \
  --model gpt --preset gpt2 --data "tokens:$tokens" --batch-size 8 --precision bf16 --steps 10 --warmup-steps 2 --log-every 5 \
  --eval-windows 8 --eval-batch-size 8 --no-progress --metrics "$out/gpt2-bf16.jsonl"
rm -rf "$tokens"
if run "train GPT fp16, 200 steps, saved" 60 --gpu "${ht_env[@]}" "$bin" train --device cuda --model gpt --data "text:$corpus" --steps 200 \
     --warmup-steps 20 --eval-every 200 --log-every 100 --no-progress --save "$out/gpt-fp16" --metrics "$out/gpt-fp16.jsonl"; then
  run "PyTorch recomputes the fp16 GPT's validation loss from its checkpoint" 90 sh -c 'python3 "$0" eval --checkpoint "$1" --data "$2" >"$3"' \
    "$scripts/gpt_reference.py" "$out/gpt-fp16" "$corpus" "$out/gpt-fp16-eval.json"
fi
rm -rf "$out/gpt-fp16"

# --- 5. PyTorch AMP beside it ---------------------------------------------------------------
if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  run "PyTorch AMP baseline, eager" 150 python3 "$scripts/pytorch_baseline.py" --no-compile --json "$out/pytorch.json"
  run "PyTorch AMP baseline, torch.compile" 180 python3 "$scripts/pytorch_baseline.py" --variants compile --json "$out/pytorch-compile.json"
else
  notes+=("PyTorch with CUDA is not available to python3 here: no baseline")
fi

# --- 6. the test suite on the GPU --------------------------------------------------------------
run "unit and kernel tests (cuda vs the CPU reference)" 240 --gpu "${ht_env[@]}" "$tests" \
  "[dtype],[kernels]~[.],[gemm]~[.],[device-training],[graph],[scaler],[optim],[gradcheck],[gpt],[fp8],[fp8-sm90]"
run "GEMM with more row tiles than grid.y allows" 60 --gpu "${ht_env[@]}" "$tests" "[huge]"

failed=0
for r in "${step_results[@]}"; do [[ $r == ok* ]] || failed=1; done
exit $failed
