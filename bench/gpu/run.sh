#!/usr/bin/env bash
# The GPU machine's one script: configure and build colo against the local
# PyTorch (CUDA), run the whole test suite against that LibTorch, then the
# GPU checks. Full logs and results go to $OUT; a short table is printed last.
#
#   bench/gpu/run.sh            # everything
#   bench/gpu/run.sh train      # build + tests + training checks only
#   bench/gpu/run.sh gpu        # build + the gpu layer's checks (NVML, energy, GPM, MPS)
#   bench/gpu/run.sh sched      # build + a real trace replayed exclusive vs best-fit/MPS
#   bench/gpu/run.sh fusion     # build + bench/fusion/run.sh (FUSION_ARGS picks models and N)
#   bench/gpu/run.sh sweepcheck # build + a 32-model colo sweep against 4 sequential colo train
#   bench/gpu/run.sh groupedconv # build + own grouped-conv kernels: tests, vs cuDNN, fused LeNet
#   bench/gpu/run.sh kernels    # build colo_fuse_tests + colo's own kernels against ATen on this GPU (KERNEL_FILTER)
#   bench/gpu/run.sh sidebyside # build + arrays side by side on CUDA streams vs one after another
#   bench/gpu/run.sh estimate   # build + peak memory of random jobs (ESTIMATE_ARGS; bench/estimate/)
#   bench/gpu/run.sh memtrace   # build + allocator event traces of some estimate rows (TRACE_ROWS)
#   bench/gpu/run.sh convws     # build + cuDNN workspace per convolution shape (estimate profile; CONVWS_ARGS="--grid")
#   bench/gpu/run.sh power      # build + power against SM activity (bench/gpu/power_curve.sh)
#   bench/gpu/run.sh dist       # build + bench/dist/run.sh (DIST_ARGS: busbw scaling tta); 2-4 GPUs
#   bench/gpu/run.sh ps         # build + bench/dist/ps/run.sh (PS_RUNS: "even:allreduce uneven:ps-async ..."); 2 GPUs
#   bench/gpu/run.sh distresume # build + colo dist checkpoints and --resume on CUDA (tests/gpu/dist_resume_on_gpu.sh); 1 GPU
#   bench/gpu/run.sh demo       # build + scripts/demo.sh on the GPU (MPS, one job recovered from OOM)
#   bench/gpu/run.sh realmodels # build + colo.estimate against NVML on real PyTorch models (REAL_ROWS)
#   bench/gpu/run.sh estsetups  # build + colo.estimate against NVML for fine-tuning, autocast, accumulation... (ESTSETUPS)
#   bench/gpu/run.sh realtraining # build + colo.estimate against NVML on issue 50's 31 architectures, 116 rows
#   bench/gpu/run.sh gpuprofile # build (colo colo_core_module) + colo gpus --profile (PROFILE_ARGS, e.g. --quick)
#                               #   into $OUT/profiles, compared with the built-in H100 profile
#                               #   (REALTRAINING: set-ups, architectures or libraries; REAL_PARALLEL)
#   bench/gpu/run.sh freshprobe # fresh against warm allocator traces, alone against 6 at once (PROBE_ROWS)
#   bench/gpu/run.sh recheck    # build colo._core + colo.estimate against the committed truth of this card (RECHECK_*)
#   bench/gpu/run.sh recheckboth # build colo._core + real_training's estimates against both cards' committed
#                               #   truth (H200 rows with h200_profile.json) -> $OUT/rechecks.tgz (adopt_recheck.py)
#   bench/gpu/run.sh phasepeaks # build colo._core + each PHASE_ROWS row's GPU peak by phase beside colo's replay
#   bench/gpu/run.sh profilerows # build colo._core + where colo.estimate's time goes on PROFILE_ROWS (MODEL:SETUP:BATCH)
#   bench/gpu/run.sh tracepair  # build + colo's replay and the real allocator's trace of PAIR_ROWS (model:batch:opt, setup:model:batch:opt)
#   bench/gpu/run.sh shared     # build colo + colo._core + shared-loader tests + 4 jobs on 4 cores:
#                               #   own loading vs one shared loader (bench/data/shared_loading.py;
#                               #   SHARED_RUNS="MODEL:SIZE:BATCH:STEPS[:amp] ...", SHARED_ARGS;
#                               #   SHARED_PROBE=1: first bench/data/consumer_cpu.py, fp32 and bf16;
#                               #   DECODE_COST=1: first bench/data/decode_cost.py, DECODE_ARGS;
#                               #   DUTY_PROBE=1: first bench/data/duty_cycle_probe.cpp, DUTY_ARGS)
#   bench/gpu/run.sh compare    # build colo + colo compare on COMPARE_RUNS ("NAME:FILE:ARGS;..."; default the
#                               #   four workloads of examples/compare/); summaries under $OUT/compare/NAME;
#                               #   COMPARE_AGREEMENT=1: + bench/fusion rows for the sweeps (COMPARE_AGREEMENT_SWEEPS,
#                               #   "NAME:MODEL:N ..."; "" for none) and, for a run named tvresnet18x8
#                               #   (examples/compare/torchvision_resnet18x8.py), user_models.py's colo.fuse
#                               #   row, checked by bench/compare/agreement.py
#   bench/gpu/run.sh userfuse   # build colo._core + colo.fuse tests under this torch + bench/fusion/user_models.py
#   bench/gpu/run.sh finetune   # build colo._core + fused fine-tuning against MPS, sequential, vmap (FINETUNE_SETUPS;
#                               #   FINETUNE_SWEEP=0 leaves out the sweep example against one run after another)
#   bench/gpu/run.sh strategies # build colo._core + bench/fusion/resnet_strategies.py (fused ResNet-18 against replicas on streams)
#   bench/gpu/run.sh smprobe    # build + which signal gives per-job SM activity, with MPS and without
#   bench/gpu/run.sh predict    # build + a colo train lr search: SM share predicted by model (PREDICT_ARGS="JOBS STEPS", PREDICT_FLAGS="--no-share-prediction" for the baseline)
#   bench/gpu/run.sh slurm      # build + colo slurm on a real Slurm with this GPU (.slurm carried)
#   bench/gpu/run.sh usertrace  # build (BUILD_TARGETS="colo colo_core_module") + bench/sched/user_trace/run.sh
#                               #   (TRACE_JOBS, TRACE_SCALE, USERTRACE_STEPS, USERTRACE_OUT); $OUT/user_trace.tgz
#   bench/gpu/run.sh settle     # build + bench/sched/settle_check.sh (3 undeclared jobs settle under colo run)
#   bench/gpu/run.sh proberules # build + bench/sched/probe_rules_check.sh (the probe's start-up rules)
#   bench/gpu/run.sh usertracebg  # build + bench/sched/user_trace/on_gpus.sh on every GPU, detached
#                               #   (USERTRACE_DEADLINE_S, USERTRACE_OUT; TRACE_* as above)
#   bench/gpu/run.sh realtrace  # build + the real work-bound trace (bench/sched/real) under REAL_RUNS
#                               #   ("TAG:POLICY:MODE ...", default "magm:magm:mps"); REAL_ARGS="--two-gpu"
#
# The colo binaries built here (colo and colo-torch, which colo hands most
# commands to) come back under $OUT when RETURN_BINARY=1; carried back in
# .gpubin, they replace the build when they still load (GPU_BINARY_ONLY=1).
#
# BUILD_TARGETS limits the build to some targets (e.g. "colo allreduce_busbw");
# unset, it builds everything: all, and the benchmark programs (target bench).
#
# Needs .deps (scripts/gpu-deps.sh) and .data carried with the device call.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/colo-gpu-out}
BUILD=${BUILD:-build-gpu}
mkdir -p "$OUT"
sections=("${@:-all}")
want() { [[ " ${sections[*]} " == *" all "* || " ${sections[*]} " == *" $1 "* ]]; }
summary="$OUT/summary.txt"
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }

# Tests and examples read Fashion-MNIST from Debian's path.
if [ ! -e /usr/share/datasets/fashion-mnist ] && [ -d .data/fashion-mnist ]; then
  mkdir -p /usr/share/datasets && ln -s "$PWD/.data/fashion-mnist" /usr/share/datasets/fashion-mnist
fi

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' | tee -a "$OUT/gpu.txt"

start=$(date +%s)
if [ "${GPU_BINARY_ONLY:-0}" = 1 ] && { [ -x .gpubin/colo-torch ] && ! ldd .gpubin/colo-torch | grep -q "not found" \
    || ls .gpubin/_core*.so >/dev/null 2>&1; }; then
  mkdir -p "$BUILD"
  [ -x .gpubin/colo-torch ] && cp .gpubin/colo .gpubin/colo-torch "$BUILD/"
  # colo._core too, when it came back: the package beside it is this tree's.
  for core in .gpubin/_core*.so; do
    [ -e "$core" ] || continue
    mkdir -p "$BUILD/python/colo" && cp -r python/colo/. "$BUILD/python/colo/" && cp "$core" "$BUILD/python/colo/"
  done
  note "build: carried binaries $(ls .gpubin | tr '\n' ' ')"
else
# Warnings are counted, not fatal, here: the table says how many this toolchain gives.
# CMAKE_EXTRA: more cmake options, e.g. -DCOLO_BUILD_TESTS=OFF when .deps travels without GoogleTest.
# shellcheck disable=SC2086
if ! cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOLO_WERROR=OFF ${CMAKE_EXTRA:-} >"$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; exit 1
fi
grep -E "colo: LibTorch" "$OUT/build.log"
# shellcheck disable=SC2086
if ! cmake --build "$BUILD" -j "$(nproc)" --target ${BUILD_TARGETS:-all bench} >>"$OUT/build.log" 2>&1; then
  grep -E -A8 "error" "$OUT/build.log" | head -120; exit 1
fi
note "build: $(( $(date +%s) - start )) s, $(grep -c 'warning:' "$OUT/build.log") warning(s) ($(g++ --version | head -1))"
grep -E "warning:" "$OUT/build.log" | sort | uniq | head -20
fi
if [ "${RETURN_BINARY:-0}" = 1 ]; then
  cp "$BUILD/colo" "$BUILD/colo-torch" "$OUT/"
  cp "$BUILD"/python/colo/_core*.so "$OUT/" 2>/dev/null || true
fi

if want tests || want train; then
  # Four tests at a time with four threads each: sixteen CPU-heavy tests of
  # sixteen threads each oversubscribe the machine until tests time out.
  OMP_NUM_THREADS=4 ctest --test-dir "$BUILD" -j 4 --timeout 400 --output-on-failure >"$OUT/ctest.log" 2>&1
  note "ctest: $(grep -E 'tests passed|tests failed' "$OUT/ctest.log")"
  grep -E "\(Failed\)|\(Timeout\)|\(SEGFAULT\)|Not Run" "$OUT/ctest.log" | head -20
fi

if want gpu; then
  tests/gpu/check_on_gpu.sh "$BUILD" "$OUT" | tee -a "$summary"
fi

if want smprobe; then
  python3 bench/sched/real/sm_probe.py "$PWD/$BUILD/colo" "$OUT/sm_probe.json" | tee -a "$summary"
fi

if want realtrace; then
  for run in ${REAL_RUNS:-magm:magm:mps}; do
    IFS=: read -r tag policy mode <<<"$run"
    # shellcheck disable=SC2086
    bench/sched/real/run_trace.sh "$BUILD" "$OUT" "$tag" "$policy" "$mode" ${REAL_ARGS:-} | tee -a "$summary"
  done
fi

if want predict; then
  bench/sched/predict/run.sh "$BUILD" "$OUT" ${PREDICT_ARGS:-} | tee -a "$summary"
fi

if want slurm; then
  # Needs .slurm (scripts/slurm-carry.sh) carried with the call.
  tests/gpu/slurm_on_gpu.sh "$BUILD" "$OUT" | tee -a "$summary"
fi

if want usertrace; then
  # The user trace (issue 49): bench/sched/user_trace/run.sh with TRACE_JOBS,
  # TRACE_SCALE and USERTRACE_STEPS (default: every step). Its OUT stays in
  # USERTRACE_OUT between calls on a warm machine (each step resumes);
  # everything but the jobs' own outputs comes back as $OUT/user_trace.tgz.
  ut=${USERTRACE_OUT:-/tmp/user-trace}
  # shellcheck disable=SC2086
  bench/sched/user_trace/run.sh "$BUILD" "$ut" ${USERTRACE_STEPS:-} | tee -a "$summary"
  tar czf "$OUT/user_trace.tgz" -C "$ut" --exclude=./runs .
fi

if want usertracebg; then
  # The user trace on every GPU of the host at once (on_gpus.sh), started in
  # its own session so that it outlives this call on a warm machine: from a
  # copy of the tree and the build, which later calls' trees cannot change.
  # USERTRACE_DEADLINE_S (default 1200) cuts every step; then
  # `bench/sched/user_trace/on_gpus.sh poll USERTRACE_OUT SECONDS` in later
  # calls, and tar the OUT folder back.
  ut=${USERTRACE_OUT:-/tmp/user-trace}
  snap=/tmp/user-trace-tree
  rm -rf "$snap" "$ut" && mkdir -p "$snap/$BUILD" "$ut"
  tar -c --exclude="./$BUILD" --exclude=./build --exclude=./.git . | tar -x -C "$snap"
  cp "$BUILD/colo" "$BUILD/colo-torch" "$snap/$BUILD/" && cp -r "$BUILD/python" "$snap/$BUILD/"
  setsid nohup "$snap/bench/sched/user_trace/on_gpus.sh" "$snap/$BUILD" "$ut" "${USERTRACE_DEADLINE_S:-1200}" \
    >"$ut/on_gpus.log" 2>&1 </dev/null &
  note "usertracebg: on_gpus.sh started (pid $!), deadline ${USERTRACE_DEADLINE_S:-1200} s; output in $ut"
fi

if want sched; then
  bench/sched/replay.sh "$BUILD" "$OUT" | tee -a "$summary"
fi

if want oom; then
  bench/sched/oom_check.sh "$BUILD" "$OUT" | tee -a "$summary"
fi

if want proberules; then
  bench/sched/probe_rules_check.sh "$BUILD" "$OUT" | tee -a "$summary"
fi

if want settle; then
  bench/sched/settle_check.sh "$BUILD" "$OUT" | tee -a "$summary"
fi

if want fusion; then
  # FUSION_ARGS: models and counts for bench/fusion/run.sh, e.g. "lenet -- 1 32".
  # shellcheck disable=SC2086
  bench/fusion/run.sh "$BUILD" "$OUT" ${FUSION_ARGS:-} | tee -a "$summary"
fi

if want sweepcheck; then
  bench/fusion/sweep_check.sh "$BUILD" "$OUT" | tee -a "$summary"
fi

if want groupedconv; then
  bench/fusion/grouped_conv_check.sh "$BUILD" "$OUT" | tee -a "$summary"
fi

if want kernels; then
  # BUILD_TARGETS needs colo_fuse_tests.
  "$BUILD/tests/fuse/colo_fuse_tests" --gtest_filter="${KERNEL_FILTER:-*Own*:*Cuda*}" >"$OUT/kernels.log" 2>&1
  note "kernels: $(grep -E '^\[  (PASSED|FAILED)' "$OUT/kernels.log" | tr '\n' ' ')"
  grep -E "Failure|FAILED|error" "$OUT/kernels.log" | head -20
fi

if want sidebyside; then
  bench/fusion/side_by_side_check.sh "$BUILD" "$OUT" | tee -a "$summary"
fi

if want power; then
  bench/gpu/power_curve.sh "$BUILD" "$OUT" | tee "$OUT/power_fit.json" | tee -a "$summary"
fi

if want dist; then
  # shellcheck disable=SC2086
  bench/dist/run.sh "$BUILD" "$OUT" ${DIST_ARGS:-} | tee -a "$summary"
fi

if want ps; then
  # shellcheck disable=SC2086
  bench/dist/ps/run.sh "$BUILD" "$OUT" ${PS_RUNS:-} | tee -a "$summary"
fi

if want distresume; then
  tests/gpu/dist_resume_on_gpu.sh "$BUILD/colo" "$OUT" | tee "$OUT/dist_resume.txt"
  note "dist resume on CUDA: $(tail -n 1 "$OUT/dist_resume.txt")"
fi

if want estimate; then
  # ESTIMATE_ARGS: rows, workers, time limit (s), first row; see bench/estimate/collect.sh.
  # shellcheck disable=SC2086
  bench/estimate/collect.sh "$BUILD" "$OUT" ${ESTIMATE_ARGS:-} | tee -a "$summary"
fi

if want convws; then
  mkdir -p "$OUT/estimate"
  # shellcheck disable=SC2086
  "$BUILD/bench/measure_conv_workspace" --out "$OUT/estimate/h100_conv_workspace.json" ${CONVWS_ARGS:-} \
    2>"$OUT/estimate/convws.log" \
    | tee -a "$summary"
  tail -3 "$OUT/estimate/convws.log"
fi

if want memtrace; then
  # TRACE_ROWS: rows of the estimate data set (seed 1) whose allocator events to record.
  # shellcheck disable=SC2086
  "$BUILD/bench/collect_memory" --trace-rows ${TRACE_ROWS:-2303 549} --trace-dir "$OUT/memtrace" \
    --threads 4 | tee "$OUT/memtrace.jsonl" | tee -a "$summary"
fi

if want train; then
  bench/gpu/train_check.sh "$BUILD" "$OUT" | tee -a "$summary"
fi

if want demo; then
  scripts/demo.sh "$BUILD" >"$OUT/demo.log" 2>&1
  note "demo: exit $?, $(grep -E '^[0-9]+ completed' "$OUT/demo.log"), $(grep -E '^== \[ *[0-9]+s\] demo done' "$OUT/demo.log")"
  grep -E "OUT_OF_MEMORY|out of memory|outgrows" "$OUT/demo.log" | head -5
  cp runs/demo/report/gantt_magm_mps.png runs/demo/report/timeline_gpus.png "$OUT/" 2>/dev/null
fi

if want gpuprofile; then
  # The measured profile beside the built-in one: context, library workspaces, and the
  # median ratio of measured to built-in cuDNN workspace over the shapes both have.
  mkdir -p "$OUT/profiles"
  # shellcheck disable=SC2086
  # colo gpus --profile runs python3 -m colo.device_profile; the module alone when only colo._core was built.
  if [ -x "$BUILD/colo" ]; then profile_cmd=("$BUILD/colo" gpus --profile); else profile_cmd=(python3 -m colo.device_profile); fi
  # shellcheck disable=SC2086
  COLO_PROFILE_DIR="$OUT/profiles" PYTHONPATH="$BUILD/python" timeout "${PROFILE_TIMEOUT_S:-300}" "${profile_cmd[@]}" \
    ${PROFILE_ARGS:-} 2>&1 | tail -3 | tee -a "$summary"
  COLO_PROFILE_DIR="$OUT/profiles" PYTHONPATH="$BUILD/python" python3 - <<'PY' 2>&1 | tee -a "$summary"
import glob, json, os, statistics
from colo import _core
ref = json.loads(_core.reference_device_profile_json())
for path in glob.glob(os.path.join(os.environ["COLO_PROFILE_DIR"], "*.json")):
    p = json.load(open(path))
    built_in = {(key, name, batch): bytes_ for key, passes in ref["conv_workspace"]["shapes"].items()
                for name, points in passes.items() for batch, bytes_ in points}
    ratios = [b / built_in[(key, name, batch)] for key, passes in p["conv_workspace"]["shapes"].items()
              for name, points in passes.items() for batch, b in points if built_in.get((key, name, batch))]
    print(f"{os.path.basename(path)}: context {p['context_bytes'] >> 20} MiB (built-in {ref['context_bytes'] >> 20}), "
          f"library {p['library_workspace_bytes'] >> 20} MiB ({ref['library_workspace_bytes'] >> 20}), "
          f"cuDNN workspace / built-in: median {statistics.median(ratios) if ratios else float('nan'):.3f} "
          f"over {len(ratios)} points")
PY
fi

if want freshprobe; then
  # PROBE_ROWS: real_training.py rows traced fresh and warm, and alone against 6 at once.
  # shellcheck disable=SC2086
  bench/estimate/fresh_probe.sh "$OUT/freshprobe" ${PROBE_ROWS:-frozen_backbone:resnet18:128:sgd} 2>&1 | tail -40 \
    | tee -a "$summary"
fi

if want tracepair; then
  # shellcheck disable=SC2086
  bench/estimate/trace_pair.sh "$BUILD" "$OUT/pair" ${PAIR_ROWS:-plain_gpt:32:sgd} 2>&1 | grep -v Warning | tail -20
fi

if want realmodels; then
  # REAL_ROWS: FIRST-LAST of bench/estimate/real_models.py's rows (all when empty).
  mkdir -p "$OUT/realmodels"
  PYTHONPATH="$BUILD/python" python3 bench/estimate/real_models.py run --out "$OUT/realmodels" \
    ${REAL_ROWS:+--rows $REAL_ROWS} --parallel "${REAL_PARALLEL:-2}" 2>"$OUT/realmodels/stderr.log" | tail -60
  python3 bench/estimate/real_models.py summarize "$OUT/realmodels/rows.jsonl" --out "$OUT/realmodels" \
    | head -40 | tee -a "$summary"
fi

if want estsetups; then
  # ESTSETUPS: set-ups of bench/estimate/setups.py (all when empty).
  mkdir -p "$OUT/estsetups"
  PYTHONPATH="$BUILD/python" python3 bench/estimate/setups.py run --out "$OUT/estsetups" ${ESTSETUPS:+--only $ESTSETUPS} \
    --parallel "${REAL_PARALLEL:-2}" 2>"$OUT/estsetups/stderr.log" | tail -30
  python3 bench/estimate/setups.py summarize "$OUT/estsetups/rows.jsonl" --out "$OUT/estsetups" \
    --gpu "$(head -1 "$OUT/gpu.txt")" | tail -1 | tee -a "$summary"
fi

if want realtraining; then
  # REALTRAINING: set-ups, architectures or libraries of bench/estimate/real_training.py (all when empty).
  mkdir -p "$OUT/realtraining"
  PYTHONPATH="$BUILD/python" python3 bench/estimate/real_training.py run --out "$OUT/realtraining" \
    ${REALTRAINING:+--only $REALTRAINING} --parallel "${REAL_PARALLEL:-4}" 2>"$OUT/realtraining/stderr.log" | tail -30
  python3 bench/estimate/real_training.py summarize "$OUT/realtraining/rows.jsonl" --out "$OUT/realtraining" \
    --gpu "$(head -1 "$OUT/gpu.txt")" | tail -1 | tee -a "$summary"
fi

if want recheck; then
  # This tree's colo.estimate, on this host's CPUs, against a GPU run's committed truth (RECHECK_TRUTH,
  # default this card's rows_CARD.jsonl of bench/results/estimate/real_training): truth does not change
  # with colo, so an estimator change needs no new truth processes. RECHECK_ESTIMATORS at once.
  # The estimates use the profile `gpuprofile` measured in this call when there is one, else
  # colo's built-in one (an empty profile directory), never whatever the host has stored; so a
  # RECHECK_TRUTH of another card belongs in a call without `gpuprofile`.
  # RECHECK_NAME names the output folder (default the card) when one call rechecks two truths.
  card=$(head -1 "$OUT/gpu.txt" | awk -F'[ ,]+' '{print tolower($2)}')
  recheck_dir="$OUT/recheck_${RECHECK_NAME:-$card}"
  mkdir -p "$recheck_dir" "$OUT/profiles"
  COLO_PROFILE_DIR="$OUT/profiles" PYTHONPATH="$BUILD/python" python3 bench/estimate/real_training.py recheck \
    --truth "${RECHECK_TRUTH:-bench/results/estimate/real_training/rows_$card.jsonl}" --out "$recheck_dir" \
    --estimators "${RECHECK_ESTIMATORS:-8}" 2>"$recheck_dir/stderr.log" | tail -2 | cut -c1-400 | tee -a "$summary"
fi

if want recheckboth; then
  # real_training's estimates of this tree against both cards' committed truth, in one call on any
  # host: the H100 rows with the built-in profile, the H200 rows with the committed h200_profile.json.
  # $OUT/rechecks.tgz holds recheck_h100/ and recheck_h200/ for bench/estimate/adopt_recheck.py.
  # RECHECK_ONLY: set-ups, architectures or libraries (all rows when empty).
  results=bench/results/estimate/real_training
  bash bench/estimate/recheck_card.sh "$BUILD" h100 "$OUT/recheck_h100" | tee -a "$summary"
  bash bench/estimate/recheck_card.sh "$BUILD" h200 "$OUT/recheck_h200" "$results/h200_profile.json" | tee -a "$summary"
  tar czf "$OUT/rechecks.tgz" -C "$OUT" recheck_h100 recheck_h200
fi

if want profilerows; then
  # PROFILE_ROWS: MODEL:SETUP:BATCH rows of real_training, each estimated once and again under
  # cProfile (bench/estimate/profile_row.py), one after another with nothing beside them.
  mkdir -p "$OUT/profilerows"
  for row in ${PROFILE_ROWS:-densenet121:frozen_backbone:64 vit_b_32:lora:64 densenet121:fp32:32}; do
    IFS=: read -r model setup batch <<<"$row"
    PYTHONPATH="$BUILD/python" python3 bench/estimate/profile_row.py "$model" "$setup" "$batch" \
      >"$OUT/profilerows/$model-$setup-$batch.txt" 2>&1
    head -1 "$OUT/profilerows/$model-$setup-$batch.txt" | tee -a "$summary"
  done
  tar czf "$OUT/profilerows.tgz" -C "$OUT" profilerows
fi

if want phasepeaks; then
  # PHASE_ROWS: MODEL:SETUP pairs of real_training, split over PHASE_SHARDS processes at once; each
  # row's GPU phase peaks beside colo's replay (bench/estimate/phase_peaks.py), built-in profile.
  mkdir -p "$OUT/phasepeaks" "$OUT/phasepeaks/profiles"
  read -r -a phase_rows <<<"${PHASE_ROWS//,/ }"
  shards=${PHASE_SHARDS:-3}
  for ((s = 0; s < shards; s++)); do
    mine=()
    for ((i = s; i < ${#phase_rows[@]}; i += shards)); do mine+=("${phase_rows[i]}"); done
    [ ${#mine[@]} -gt 0 ] || continue
    only=$(IFS=,; echo "${mine[*]}")
    COLO_PROFILE_DIR="$OUT/phasepeaks/profiles" PYTHONPATH="$BUILD/python" python3 bench/estimate/phase_peaks.py \
      --only "$only" --out "$OUT/phasepeaks/rows_$s.jsonl" >/dev/null 2>"$OUT/phasepeaks/stderr_$s.log" &
  done
  wait
  cat "$OUT/phasepeaks"/rows_*.jsonl >"$OUT/phasepeaks/rows.jsonl"
  note "phasepeaks: $(wc -l <"$OUT/phasepeaks/rows.jsonl") rows"
fi

if want userfuse; then
  # BUILD_TARGETS=colo_core_module is enough: colo.fuse needs the Python module only.
  PYTHONPATH="$BUILD/python" python3 -m pytest -q -p no:cacheprovider tests/python/test_fuse.py 2>&1 | tail -5 \
    | tee -a "$summary"
  mkdir -p "$OUT/userfuse"
  PYTHONPATH="$BUILD/python" python3 bench/fusion/user_models.py all --out "$OUT/userfuse" \
    --seconds "${USERFUSE_SECONDS:-3}" 2>"$OUT/userfuse/stderr.log" | tail -14 | tee -a "$summary"
fi

if want finetune; then
  # BUILD_TARGETS=colo_core_module is enough. FINETUNE_SETUPS picks set-ups, FINETUNE_MODES modes
  # (bench/fusion/finetune.py all --modes).
  PYTHONPATH="$BUILD/python" python3 -m pytest -q -p no:cacheprovider tests/python/test_fuse_frozen.py 2>&1 \
    | tail -3 | tee -a "$summary"
  mkdir -p "$OUT/finetune"
  PYTHONPATH="$BUILD/python" python3 bench/fusion/finetune.py check 2>&1 | tail -3 | tee -a "$summary"
  PYTHONPATH="$BUILD/python" python3 bench/fusion/finetune.py all --out "$OUT/finetune" \
    --setups "${FINETUNE_SETUPS:-frozen_heads,frozen_blocks,lora,lora_mixed}" --seconds "${FINETUNE_SECONDS:-8}" \
    ${FINETUNE_MODES:+--modes "$FINETUNE_MODES"} \
    2>"$OUT/finetune/stderr.log" | tail -24 | tee -a "$summary"
  if [ "${FINETUNE_SWEEP:-1}" = 1 ]; then  # time to the best configuration of examples/finetune_sweep.py
    PYTHONPATH="$BUILD/python" python3 bench/fusion/finetune_sweep_time.py --out "$OUT/finetune/sweep_time.json" \
      2>>"$OUT/finetune/stderr.log" | tail -2 | tee -a "$summary"
  fi
fi

if want strategies; then
  # BUILD_TARGETS=colo_core_module is enough.
  mkdir -p "$OUT/strategies"
  PYTHONPATH="$BUILD/python" python3 bench/fusion/resnet_strategies.py run --out "$OUT/strategies" \
    --seconds "${USERFUSE_SECONDS:-3}" 2>"$OUT/strategies/stderr.log" | tail -20 | tee -a "$summary"
fi

if want shared; then
  # BUILD_TARGETS="colo colo_core_module colo_images_tests" is enough.
  mkdir -p "$OUT/shared"
  if [ "${SHARED_TESTS:-1}" = 1 ]; then  # SHARED_TESTS=0: the benchmark only
    "$BUILD/tests/data/colo_images_tests" 2>&1 | tail -1 | sed 's/^/colo_images_tests: /' | tee -a "$summary"
    PYTHONPATH="$BUILD/python" COLO_EXECUTABLE="$BUILD/colo" python3 -X faulthandler -m pytest -q -p no:cacheprovider \
      tests/python/test_shared_loader.py tests/python/test_shared_loader_dataloader.py >"$OUT/shared/pytest.log" 2>&1
    tail -3 "$OUT/shared/pytest.log" | tee -a "$summary"
  fi
  "$BUILD/colo" loader write-images --source synthetic --limit 3000 --size 256 --out /tmp/colo-images/train \
    >"$OUT/shared/images.json" 2>/dev/null
  # SHARED_IMAGE_SIZES="400 ...": also folders of larger JPEGs, /tmp/colo-images-SIZE/train, that a run
  # names in its ARGS (--images,/tmp/colo-images-400/train).
  for px in ${SHARED_IMAGE_SIZES:-}; do
    "$BUILD/colo" loader write-images --source synthetic --limit 3000 --size "$px" --out "/tmp/colo-images-$px/train" \
      >"$OUT/shared/images_$px.json" 2>/dev/null
  done
  nproc >"$OUT/shared/nproc.txt"
  lscpu -e >"$OUT/shared/lscpu.txt" 2>&1 || true
  if [ "${DECODE_COST:-0}" = 1 ]; then  # decode core-ms per sample: a producer against own decoding, busy and paced
    PYTHONPATH="$BUILD/python" python3 bench/data/decode_cost.py run --images /tmp/colo-images/train --cores 0-3 \
      --colo "$BUILD/colo" --processes 4 --threads 2 --producer-threads 4 --producer-device cuda ${DECODE_ARGS:-} \
      --out "$OUT/shared/decode_cost.json" 2>&1 | tail -6 | tee -a "$summary"
  fi
  if [ "${DUTY_PROBE:-0}" = 1 ]; then  # CPU time of fixed work on cores 0-3 busy part of the time (DUTY_ARGS)
    g++ -O2 -pthread bench/data/duty_cycle_probe.cpp -o /tmp/duty_cycle_probe \
      && /tmp/duty_cycle_probe --cores 0-3 ${DUTY_ARGS:---seconds 3 --burst-ms 10} >"$OUT/shared/duty_cycle.json" \
      && python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
for k, v in d["kernels"].items(): print("duty cycle probe", k, " ".join("%s:%s" % (x["duty"], x["relative_to_saturated"]) for x in v["duty"]))' \
        "$OUT/shared/duty_cycle.json" | tee -a "$summary"
  fi
  if [ "${SHARED_PROBE:-0}" = 1 ]; then  # a consumer's own CPU while the GPU is the limit
    for amp in "" --amp; do
      PYTHONPATH="$BUILD/python" python3 bench/data/consumer_cpu.py --jobs 4 --cores 0-3 $amp \
        --out "$OUT/shared/consumer_cpu${amp:+_amp}.json" 2>&1 | tail -4 | tee -a "$summary"
    done
  fi
  # SHARED_RUNS: "MODEL:SIZE:BATCH:STEPS[:amp[:TAG[:ARGS]]] ..." 4 jobs on cores 0-3 each (amp: bf16
  # autocast; TAG names the file; ARGS, commas for spaces and "+" for commas within a value
  # (--modes,own_colo+shared_scheduler), come after SHARED_ARGS). MODEL and BATCH
  # may be comma lists, job by job (resnet18,resnet50: jobs that train at different speeds).
  for run in ${SHARED_RUNS:-resnet18:224:128:120}; do
    IFS=: read -r model size batch steps amp tag args <<<"$run"
    args=${args//,/ }
    args=${args//+/,}
    note "shared loading, 4 jobs on 4 cores: $model at $size px, batch $batch, $steps steps${amp:+, bf16 autocast} $args"
    # shellcheck disable=SC2086
    PYTHONPATH="$BUILD/python" python3 bench/data/shared_loading.py run --images /tmp/colo-images/train \
      --jobs 4 --cores 0-3 --device cuda --model "$model" --steps "$steps" --batch "$batch" --size "$size" \
      --colo "$BUILD/colo" --threads 2 --producer-threads 4 ${amp:+--amp} \
      --out "$OUT/shared/gpu_4jobs_${model//,/-}_${size}${amp:+_amp}${tag:+_$tag}.json" ${SHARED_ARGS:-} $args 2>&1 \
      | tee -a "$OUT/shared/bench.log" | grep -E -i "round:|jobs:|by thread|samples/s|shared over|error" | tee -a "$summary"
  done
  # A call returns at most 8 files: the side files go back as one, so that every run's JSON comes back.
  (cd "$OUT/shared" && tar czf side.tgz --ignore-failed-read images*.json nproc.txt lscpu.txt pytest.log 2>/dev/null \
    && rm -f images*.json nproc.txt lscpu.txt pytest.log)
fi

if want compare; then
  export PATH="$PWD/$BUILD:$PATH"
  # colo.fuse (Python workloads) needs the built core; colo.report_progress alone does not.
  export PYTHONPATH="$PWD/$BUILD/python:$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
  mkdir -p "$OUT/compare"
  runs=${COMPARE_RUNS:-"lenet16:examples/compare/lenet16.toml:--steps 4000;resnet18x8:examples/compare/resnet18x8.toml:--steps 400;hetero:examples/compare/hetero.toml:;torchvision4:examples/compare/torchvision4.toml:"}
  IFS=';' read -r -a entries <<<"$runs"
  for entry in "${entries[@]}"; do
    IFS=: read -r name file extra <<<"$entry"
    note "colo compare $name ($file $extra)"
    # shellcheck disable=SC2086
    "$BUILD/colo" compare "$file" $extra --level-timeout "${COMPARE_TIMEOUT:-120}" --out "$OUT/compare/$name" \
      ${COMPARE_ARGS:-} >"$OUT/compare/$name.txt" 2>"$OUT/compare/$name.log"
    grep -E "^ *(sequential|timeslice|mps|slots|scheduler|fused|streams) |recommended" "$OUT/compare/$name.txt" \
      | tee -a "$summary"
    # Only the summary and the PNGs come back (the device returns few files);
    # COMPARE_KEEP_ROUNDS=1 packs each process's records into NAME.rounds.tgz.
    if [ "${COMPARE_KEEP_ROUNDS:-0}" = 1 ]; then
      (cd "$OUT/compare/$name" && find . -path './round-*' \( -name '*.jsonl' -o -name '*.log' -o -name '*.json' \) -print0 \
        | tar czf "$OUT/compare/$name.rounds.tgz" --null -T -)
    fi
    rm -rf "$OUT/compare/$name"/round-* "$OUT/compare/$name"/warmup-*
  done
  if [ "${COMPARE_AGREEMENT:-0}" = 1 ]; then
    # The steady-state fusion benchmark, each process run as compare's
    # process levels run it, for the sweep workloads of this call
    # (BUILD_TARGETS needs fusion_throughput).
    agree=()
    for run in ${COMPARE_AGREEMENT_SWEEPS-lenet16:lenet:16 resnet18x8:resnet18:8}; do
      IFS=: read -r name model n <<<"$run"
      [ -f "$OUT/compare/$name/summary.json" ] || continue
      fused=fused; [ "$model" = resnet18 ] && fused=fused_cl
      # compare's mps level gives each of its N processes 100/N % of the SMs.
      PROCESS_MODE=fused1 MPS_PERCENTAGE=$((100 / n)) STRATEGIES="sequential $fused concurrent mps" \
        bench/fusion/run.sh "$BUILD" "$OUT/agreement" "$model" -- "$n" >/dev/null 2>&1
      rm -rf "$OUT/agreement/fusion/procs"
      agree+=(--compare "$name=$OUT/compare/$name/summary.json:$model:$n")
    done
    # A Python workload of torchvision's ResNet-18: its fused level against
    # bench/fusion/user_models.py's colo.fuse row of the same array.
    sources=()
    [ -f "$OUT/agreement/fusion/raw.jsonl" ] && sources+=(--fusion "$OUT/agreement/fusion/raw.jsonl")
    if [ -f "$OUT/compare/tvresnet18x8/summary.json" ]; then
      mkdir -p "$OUT/agreement"
      python3 bench/fusion/user_models.py one --case resnet18 --mode colo_nhwc --models 8 --batch 128 \
        --precision fp32 --seconds 5 >"$OUT/agreement/user_models.jsonl" 2>"$OUT/agreement/user_models.log"
      sources+=(--user-models "$OUT/agreement/user_models.jsonl")
      agree+=(--compare "tvresnet18x8=$OUT/compare/tvresnet18x8/summary.json:user:resnet18:colo_nhwc:8")
    fi
    [ ${#agree[@]} -gt 0 ] && python3 bench/compare/agreement.py "${sources[@]}" \
      "${agree[@]}" --out "$OUT/compare/agreement.json" | tee -a "$summary"
  fi
  tar czf "$OUT/compare.tgz" -C "$OUT" compare
fi

echo "== summary =="
cat "$summary"
