#!/usr/bin/env python3
"""Fails when a figure in README.md differs from the summary file it comes from.

    python3 scripts/check_readme_figures.py [README]

Each figure the README states is listed in FIGURES below with the summary
file and key it comes from and how it is written. A README cell keeps to its
headline; the spread and the variants behind it are stated on the results
page the cell links to, and their entries name that page (a fourth field,
relative to the repository root). The check reads every summary, writes each
figure as its page must show it, and fails (status 1, one line per problem)
when
  - a figure's text is not on its page (the page or the result changed),
  - a summary file or key is missing,
  - the README states a figure (a number followed by x, %, M samples/s or
    GB/s, outside code) that no entry below accounts for.
"""
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ratio(v):
    return f"{v:.2f}x"


def whole_ratio(v):
    return f"{v:.0f}x"


def percent(v):
    return f"{100 * v:.1f}%"


def whole_percent(v):
    return f"{100 * v:.0f}%"


def stated_percent(v):
    """A figure already in percent (…_pct keys)."""
    return f"{v:.1f}%"


def millions(v):
    return f"{v / 1e6:.2f}M samples/s"


def gbps(v):
    return f"{v:.1f} GB/s"


SHARED = "bench/results/data/shared/README.md"

# (summary file, key path with '.' between levels, how the page writes it
# [, the page when it is not README.md])
FIGURES = [
    ("bench/results/fusion/summary.json", "lenet_n32_fused_samples_per_s", millions),
    ("bench/results/fusion/summary.json", "lenet_n32_fused_over_pytorch_fused", ratio),
    ("bench/results/fusion/summary.json", "lenet_n32_fused_over_sequential", whole_ratio),
    ("bench/results/fusion/summary.json", "lenet_n32_fused_over_mps", ratio),
    ("bench/results/fusion/summary.json", "sweep32_time_over_4_sequential", ratio),
    ("bench/results/fusion/user_models/summary.json", "samples_per_s.lenet/colo/fp32", millions),
    ("bench/results/fusion/user_models/summary.json", "lenet_n32_over_vmap", ratio),
    ("bench/results/fusion/user_models/summary.json", "lenet_n32_over_graphed_handfused", ratio),
    ("bench/results/fusion/user_models/summary.json", "resnet18_n8_over_best_alternative_bf16", ratio),
    ("bench/results/fusion/user_models/summary.json", "resnet18_n8_over_best_alternative_fp32", ratio),
    ("bench/results/fusion/finetune/summary.json", "frozen_heads_over_best", ratio),
    ("bench/results/fusion/finetune/summary.json", "frozen_heads_mem_ratio", ratio),
    ("bench/results/fusion/finetune/summary.json", "frozen_blocks_over_best", ratio),
    ("bench/results/fusion/finetune/summary.json", "lora_over_best", ratio),
    ("bench/results/fusion/finetune/summary.json", "lora_mem_ratio", ratio),
    ("bench/results/fusion/finetune/summary.json", "sweep_time_ratio", ratio),
    ("bench/results/fusion/finetune/summary.json", "targets.frozen_blocks_over_best", lambda v: f"{v:.1f}x"),
    ("bench/results/fusion/finetune/summary.json", "targets.lora_over_best", lambda v: f"{v:.1f}x"),
    ("bench/results/estimate/summary.json", "analytical_median_rel_err", percent),
    ("bench/results/estimate/summary.json", "analytical_p95_rel_err", percent),
    ("bench/results/estimate/summary.json", "analytical_under10_frac", percent),
    ("bench/results/estimate/real_training/summary.json", "by_card.h100.all.median_pct", stated_percent),
    ("bench/results/estimate/real_training/summary.json", "by_card.h100.all.p95_pct", stated_percent),
    ("bench/results/estimate/real_training/summary.json", "by_card.h100.all.under5_pct", stated_percent),
    ("bench/results/estimate/real_training/summary.json", "by_card.h100.all.under5_high_pct", stated_percent),
    ("bench/results/estimate/real_training/summary.json", "by_card.h200.all.under5_pct", stated_percent),
    ("bench/results/estimate/real_training/summary.json", "seconds_max_2cores", lambda v: f"{v:.1f} s"),
    ("bench/results/estimate/real_training/summary.json", "peers.horus_rule.median_pct", stated_percent),
    ("bench/results/estimate/real_models/summary.json", "median_pct", stated_percent),
    ("bench/results/estimate/real_models/summary.json", "p95_pct", stated_percent),
    ("bench/results/estimate/real_models/summary.json", "peers.horus_rule.median_pct", stated_percent),
    ("bench/results/sched/user_trace/summary.json", "speedup_model", ratio),
    ("bench/results/sched/user_trace/summary.json", "speedup_opaque", ratio),
    ("bench/results/sched/user_trace/summary.json", "speedup_declared", ratio),
    ("bench/results/sched/user_trace/summary.json", "energy_saved_model_pct", stated_percent),
    ("bench/results/sched/user_trace/summary.json", "target_speedup_model", lambda v: f"{v:.1f}x"),
    ("bench/results/sched/user_trace/summary.json", "speedup_ceiling_perfect_packing", ratio),
    ("bench/results/sched/user_trace/summary.json", "share_gap_median", lambda v: f"shares within {v:.2f}"),
    ("bench/results/sched/user_trace/summary.json", "loop_sm_active_mean", lambda v: f"the GPU {v:.2f} busy"),
    ("bench/results/sched/user_trace/capacity/summary.json", "jobs.resnet50-b64-sgd.copies.4.throughput_over_alone", ratio),
    ("bench/results/sched/real_trace/summary.json", "speedup_vs_exclusive", ratio),
    ("bench/results/sched/real_trace/summary.json", "energy_saved_pct", stated_percent),
    ("bench/results/data/shared/summary.json",
     "gpu_4jobs_speedup", ratio),
    ("bench/results/data/shared/summary.json",
     "gpu_4jobs_cpu_per_sample_ratio", ratio),
    ("bench/results/data/shared/summary.json",
     "consumer_wait_pct.gpu_4jobs", stated_percent),
    ("bench/results/data/shared/summary.json",
     "gpu_4jobs_pooled.speedup", ratio),
    ("bench/results/data/shared/summary.json",
     "gpu_4jobs_pooled.cpu_per_sample_ratio", ratio),
    ("bench/results/data/shared/summary.json",
     "gpu_4jobs_cpu_per_sample_ratio_floor", ratio),
    # Stated on the shared-loading page: the other hosts, models and set-ups.
    ("bench/results/data/shared/summary.json",
     "other_gpu_runs.gpu_4jobs_resnet18_224_amp_c128_480steps_final5.speedup", ratio, SHARED),
    ("bench/results/data/shared/summary.json",
     "other_gpu_runs.gpu_4jobs_resnet18_224_amp_c128_480steps_final5.cpu_per_sample_ratio", ratio, SHARED),
    ("bench/results/data/shared/summary.json",
     "gpu_4jobs_pooled.cpu_per_sample_ratio_range.0", ratio, SHARED),
    ("bench/results/data/shared/summary.json",
     "gpu_4jobs_pooled.cpu_per_sample_ratio_range.1", ratio, SHARED),
    ("bench/results/data/shared/summary.json",
     "other_gpu_runs.gpu_4jobs_efficientnet_b0_224_amp_c128_effb0.speedup", ratio, SHARED),
    ("bench/results/data/shared/summary.json",
     "other_gpu_runs.gpu_4jobs_efficientnet_b0_224_amp_c128_effb0.cpu_per_sample_ratio", ratio, SHARED),
    ("bench/results/data/shared/summary.json",
     "other_gpu_runs.gpu_4jobs_efficientnet_b0_224_amp_c128_effb0.consumer_wait_pct", stated_percent, SHARED),
    ("bench/results/data/shared/summary.json",
     "other_gpu_runs.gpu_4jobs_resnet50_224_amp_c128_r50.speedup", ratio, SHARED),
    ("bench/results/data/shared/summary.json",
     "other_gpu_runs.gpu_4jobs_resnet50_224_amp_c128_r50.cpu_per_sample_ratio", ratio, SHARED),
    ("bench/results/data/shared/summary.json",
     "other_gpu_runs.gpu_4jobs_resnet50_224_amp_c128_r50.consumer_wait_pct", stated_percent, SHARED),
    ("bench/results/data/shared/summary.json",
     "other_gpu_runs.gpu_4jobs_resnet18-resnet50_224_amp_mixed_holes.by_job_kind.resnet18/128.shared_over_own", ratio, SHARED),
    ("bench/results/data/shared/summary.json",
     "other_gpu_runs.gpu_4jobs_resnet18-resnet50_224_amp_mixed_holes.by_job_kind.resnet18/128.shared_scheduler.wait_pct_max", stated_percent, SHARED),
    ("bench/results/data/shared/summary.json",
     "other_gpu_runs.gpu_4jobs_mobilenet_v3_large_224_amp_mnv3_batches_margin.consumer_wait_pct", stated_percent, SHARED),
    ("bench/results/data/shared/summary.json",
     "other_gpu_runs.gpu_4jobs_resnet18_224_amp_c128_480steps_fast.speedup", ratio, SHARED),
    ("bench/results/data/shared/summary.json",
     "cpu_2jobs_speedup", ratio, SHARED),
    ("bench/results/data/shared/summary.json",
     "cpu_2jobs_speedup_ceiling", ratio, SHARED),
    ("bench/results/data/shared/summary.json",
     "other_gpu_runs.cpu_2jobs.speedup", ratio, SHARED),
    ("bench/results/sched/predict/summary.json", "makespan_ratio", ratio),
    ("bench/results/slurm/summary.json", "policies.slurm-shard.speedup_vs_exclusive", ratio),
    ("bench/results/slurm/summary.json", "policies.slurm-shard.energy_saved_pct", stated_percent),
    ("bench/results/slurm/summary.json", "policies.magm.speedup_vs_exclusive", ratio),
    ("bench/results/dist/summary.json", "busbw_colo_2gpu_gbps", gbps),
    ("bench/results/dist/summary.json", "busbw_torch_2gpu_gbps", gbps),
    ("bench/results/dist/summary.json", "allreduce_eff_2gpu", whole_percent),
    ("bench/results/dist/summary.json", "allreduce_eff_4gpu", whole_percent),
    ("bench/results/dist/ps/summary.json", "uneven_best_switch_over_allreduce", lambda v: f"{1 / v:.2f}x"),
    ("bench/results/dist/ps/summary.json", "uneven_slowdown.median", ratio),
]

# Numbers in the README that are definitions, not measurements.
THRESHOLDS = ["10%", "90%"]

FIGURE_PATTERN = re.compile(r"\d+(?:\.\d+)?(?:x\b|%|M samples/s| GB/s)")


def value_at(summary, key):
    for part in key.split("."):
        summary = summary[int(part)] if isinstance(summary, list) else summary[part]
    return summary


def prose_of(readme):
    """The README without code (example output is not a claim)."""
    return re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", readme, flags=re.S))


def problems(readme_path):
    readme = prose_of(open(readme_path).read())
    pages = {}
    found, expected = [], list(THRESHOLDS)
    for path, key, write, *page in FIGURES:
        try:
            summary = json.load(open(os.path.join(ROOT, path)))
            text = write(value_at(summary, key))
        except (OSError, ValueError, KeyError, TypeError) as e:
            found.append(f"{path}: cannot read {key}: {e}")
            continue
        if page:
            page_path = os.path.join(ROOT, page[0])
            if page_path not in pages:
                try:
                    pages[page_path] = prose_of(open(page_path).read())
                except OSError as e:
                    pages[page_path] = ""
                    found.append(f"{page[0]}: cannot read the page: {e}")
            if text not in pages[page_path]:
                found.append(f"{page[0]}: expected '{text}' ({path}: {key}); the page or the result changed")
            continue
        expected.append(text)
        if text not in readme:
            found.append(f"{readme_path}: expected '{text}' ({path}: {key}); the README or the result changed")
    for match in FIGURE_PATTERN.finditer(readme):
        if not any(match.group(0) in text or text in match.group(0) for text in expected):
            line = readme.count("\n", 0, match.start()) + 1
            found.append(f"{readme_path}: figure '{match.group(0)}' (line {line} of the prose) has no summary "
                         "entry in scripts/check_readme_figures.py")
    return found


def main():
    readme_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "README.md")
    found = problems(readme_path)
    for line in found:
        print(line)
    if not found:
        on_pages = sum(1 for entry in FIGURES if len(entry) > 3)
        print(f"{readme_path}: {len(FIGURES) - on_pages} figures match their summary files, "
              f"and {on_pages} more on the results pages it links to")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
