"""Fits power = idle + (max - idle) * activity^gamma to the samples of
bench/gpu/power_curve.sh (SM activity from GPM where the GPU has it, else
NVML utilisation) and prints the fit as JSON, with the error of the linear
model (gamma = 1) beside it. Usage: fit_power_curve.py power_curve.csv"""
import csv
import json
import sys


def fit(points, gamma):
    """Least squares of p = a + b x^gamma; returns (a, b, rms)."""
    xs = [x ** gamma for x, _ in points]
    ys = [p for _, p in points]
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx > 0 else 0.0
    a = my - b * mx
    rms = (sum((a + b * x - y) ** 2 for x, y in zip(xs, ys)) / n) ** 0.5
    return a, b, rms


def main(path):
    rows = list(csv.DictReader(open(path)))
    points, per_workload = [], {}
    for r in rows:
        activity = r.get("sm_active") or r.get("gpu_util")
        if not activity or not r.get("power_w"):
            continue
        x, p = float(activity), float(r["power_w"])
        points.append((x, p))
        per_workload.setdefault(r["workload"], []).append((x, p))
    if len(points) < 10:
        sys.exit(f"{path}: too few samples with activity and power ({len(points)})")
    gamma = min((g / 20 for g in range(2, 41)), key=lambda g: fit(points, g)[2])
    idle, span, rms = fit(points, gamma)
    linear = fit(points, 1.0)
    result = {
        "samples": len(points),
        "idle_power_w": idle,
        "max_power_w": idle + span,
        "power_exponent": gamma,
        "rms_w": rms,
        "linear_rms_w": linear[2],
        "linear_idle_w": linear[0],
        "linear_max_w": linear[0] + linear[1],
        "workloads": {w: {"samples": len(ps), "mean_activity": sum(x for x, _ in ps) / len(ps),
                          "mean_power_w": sum(p for _, p in ps) / len(ps)} for w, ps in per_workload.items()},
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
