#!/usr/bin/env bash
# GPU-machine checks of the gpu layer (run by bench/gpu/run.sh): NVML readings
# against nvidia-smi, the energy counter against integrated power, GPM SM
# activity idle and under a matmul loop, two MPS clients at 50% threads, the
# MPS daemon gone after exit and after SIGINT, and the sampler's own cost at
# 10 Hz. Writes $OUT/gpu_check.json and prints one summary line per check.
set -uo pipefail
COLO=$1/colo
OUT=$2
work=$(mktemp -d)
here=tests/gpu

# Idle: GPM SM activity with nothing running.
$COLO monitor --interval 0.1 --duration 3 --summary-json "$work/idle.json" >/dev/null 2>&1

# Load: 30 s of matmuls holding 10 GiB; during it, 20 s of monitoring at 10 Hz
# and three NVML-vs-nvidia-smi comparisons.
python3 $here/load.py 32 10 >"$work/load.txt" 2>&1 &
load=$!
sleep 6
$COLO monitor --interval 0.1 --out "$work/monitor.csv" --summary-json "$work/busy.json" -- sleep 20 \
  >"$work/monitor.txt" 2>&1 &
monitor=$!
for i in 1 2 3; do
  $COLO gpus --json >"$work/colo_gpus_$i.json" 2>/dev/null
  nvidia-smi --query-gpu=memory.used,memory.total,power.draw --format=csv,noheader,nounits >"$work/smi_$i.csv"
  sleep 4
done
wait $monitor
wait $load

# MPS: two clients at 50% of the SMs; then the same interrupted with SIGINT.
$COLO mps run --count 2 --percentage 50 --summary-json "$work/mps.json" -- python3 $here/load.py 10 0 4096 \
  >"$work/mps.txt" 2>&1
mkdir -p "$work/mpsint"
$COLO mps run --count 2 --percentage 50 --dir "$work/mpsint" -- python3 $here/load.py 60 0 4096 \
  >"$work/mpsint.txt" 2>&1 &
colo_pid=$!
sleep 12
int_daemon=$(cat "$work/mpsint/pipe/nvidia-cuda-mps-control.pid" 2>/dev/null || echo 0)
kill -INT $colo_pid
wait $colo_pid
sleep 1
# Gone: no such process, or a zombie (PID 1 here may not reap orphans).
int_state=$(awk '{print $3}' "/proc/$int_daemon/stat" 2>/dev/null || true)
int_gone=false
if [ "$int_daemon" != 0 ] && { [ -z "$int_state" ] || [ "$int_state" = Z ]; }; then int_gone=true; fi
leftover=$(for p in $(pgrep -f 'nvidia-cuda-mps-(control|server)'); do
  [ "$(awk '{print $3}' /proc/$p/stat 2>/dev/null)" = Z ] || echo -n "$p "; done)
"$1/bench/nvml_call_cost" >"$work/nvml_call_cost.json" 2>&1
# Never leave a daemon behind, whatever happened above.
for d in "$work"/mpsint/pipe; do
  CUDA_MPS_PIPE_DIRECTORY=$d CUDA_MPS_LOG_DIRECTORY=$work/mpsint/log timeout 10 sh -c 'echo quit | nvidia-cuda-mps-control' >/dev/null 2>&1
done

python3 - "$work" "$int_gone" "$int_daemon" "$leftover" "$int_state" <<'PY' | tee "$OUT/gpu_check_lines.txt"
import csv, json, sys
work, int_gone, int_daemon, leftover, int_state = sys.argv[1], sys.argv[2] == "true", sys.argv[3], sys.argv[4], sys.argv[5]
rel = lambda a, b: abs(a - b) / abs(b) if b else float("nan")
mem_errs, power_errs, pairs = [], [], []
for i in (1, 2, 3):
    gpus = json.load(open(f"{work}/colo_gpus_{i}.json"))
    used, total, power = [float(x) for x in open(f"{work}/smi_{i}.csv").read().split(",")]
    g = gpus[0]
    mem_errs.append(rel(g["mem_used_bytes"] / 2**20, used))
    power_errs.append(rel(g["power_w"], power))
    pairs.append({"colo_mem_used_mib": g["mem_used_bytes"] / 2**20, "smi_mem_used_mib": used,
                  "colo_power_w": g["power_w"], "smi_power_w": power})
idle = json.load(open(f"{work}/idle.json"))
busy = json.load(open(f"{work}/busy.json"))
d = busy["devices"][0]
mps = json.load(open(f"{work}/mps.json"))
summary = {
    "command": "bench/gpu/run.sh gpu   (device call carrying .deps and .data; runs tests/gpu/check_on_gpu.sh)",
    "gpu": json.load(open(f"{work}/colo_gpus_1.json"))[0]["name"],
    "mem_rel_err_vs_smi": max(mem_errs),
    "power_rel_err_vs_smi": max(power_errs),
    "energy_counter_vs_integrated_rel_err": rel(d["energy_j"], d["energy_integrated_power_j"]),
    "energy_counter_j": d["energy_j"],
    "energy_integrated_power_j": d["energy_integrated_power_j"],
    "energy_window_s": d["duration_s"],
    "gpm_sm_active_idle": idle["devices"][0]["sm_active_mean"],
    "gpm_sm_active_matmul": d["sm_active_mean"],
    "mps_clients_seen": mps["clients_seen"],
    "mps_exit_codes": mps["exit_codes"],
    "mps_daemon_gone_after_exit": mps["daemon_gone"],
    "mps_daemon_gone_after_sigint": int_gone and int_daemon != "0" and leftover.strip() == "",
    "mps_sigint_daemon_pid": int_daemon,
    "mps_sigint_daemon_state_after": int_state or "gone",
    "mps_leftover_processes": leftover,
    "sampler_core_fraction_at_10hz": busy["sampler_core_fraction"],
    "nvml_call_cost_us": json.load(open(f"{work}/nvml_call_cost.json")),
    "comparisons": pairs,
    "monitor_summary": busy,
}
json.dump(summary, open(f"{work}/gpu_check.json", "w"), indent=1)
for k in ["gpu", "mem_rel_err_vs_smi", "power_rel_err_vs_smi", "energy_counter_vs_integrated_rel_err",
          "gpm_sm_active_idle", "gpm_sm_active_matmul", "mps_clients_seen", "mps_daemon_gone_after_exit",
          "mps_daemon_gone_after_sigint", "sampler_core_fraction_at_10hz", "nvml_call_cost_us"]:
    print(f"gpu check {k}: {summary[k]}")
PY
cp "$work/gpu_check.json" "$OUT/gpu_check.json"
tar -C "$work" -czf "$OUT/gpu_check_raw.tgz" . 2>/dev/null
rm -rf "$work"
