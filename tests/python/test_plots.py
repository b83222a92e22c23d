"""python/colo/plots.py on colo compare output left by earlier runs."""
import json
import os

from colo import plots

HEADER = "unix_s,time_s,index,mem_used_bytes,sm_active,gpu_util,power_w\n"


def write_timeline(path, mem_gib):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(HEADER)
        for t in range(3):
            f.write(f"{t},{t},0,{mem_gib * 2**30},0.5,,100\n")


def test_compare_timeline_draws_this_runs_last_round_and_levels_only(tmp_path, monkeypatch):
    summary = {"workload": "jobs.toml", "jobs": 2, "rounds": 2,
               "levels": [{"level": "sequential", "samples_per_s": 10.0},
                          {"level": "timeslice", "samples_per_s": 20.0}],
               "recommended_for_throughput": {"best": "timeslice", "measure": "samples_per_s"},
               "recommended_for_energy": {"best": None, "measure": "samples_per_j"}}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    for level in ("sequential", "timeslice"):
        write_timeline(str(tmp_path / "round-2" / f"timeline_{level}.csv"), 1)
    # An earlier run into the same --out: ten rounds, and a level this run left out.
    write_timeline(str(tmp_path / "round-10" / "timeline_sequential.csv"), 7)
    write_timeline(str(tmp_path / "round-2" / "timeline_mps.csv"), 7)
    drawn = {}
    real_save = plots.save

    def save(fig, directory, name):
        drawn[name] = {line.get_label(): max(line.get_ydata()) for line in fig.axes[-1].get_lines()}
        return real_save(fig, directory, name)

    monkeypatch.setattr(plots, "save", save)
    written = plots.compare_plot(str(tmp_path))
    assert drawn["compare_timeline.png"] == {"sequential": 1.0, "timeslice": 1.0}
    assert all(os.path.getsize(p) > 0 for p in written)
