"""scripts/check_readme_figures.py: the README's figures equal the summary files."""
import importlib.util
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "scripts", "check_readme_figures.py")


def first_figure():
    """The first figure the checker expects, written as the README writes it."""
    spec = importlib.util.spec_from_file_location("check_readme_figures", CHECK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path, key, write = module.FIGURES[0]
    return write(module.value_at(json.load(open(os.path.join(ROOT, path))), key))


def check(readme):
    return subprocess.run([sys.executable, CHECK, readme], capture_output=True, text=True)


def test_readme_figures_match_summaries():
    result = check(os.path.join(ROOT, "README.md"))
    assert result.returncode == 0, result.stdout


def test_changed_figure_is_caught(tmp_path):
    figure = first_figure()
    text = open(os.path.join(ROOT, "README.md")).read()
    assert figure in text
    changed = tmp_path / "README.md"
    changed.write_text(text.replace(figure, "0.01M samples/s"))
    result = check(str(changed))
    assert result.returncode == 1
    assert f"expected '{figure}'" in result.stdout
    assert "figure '0.01M samples/s'" in result.stdout


def test_figure_without_a_summary_is_caught(tmp_path):
    text = open(os.path.join(ROOT, "README.md")).read()
    changed = tmp_path / "README.md"
    changed.write_text(text + "\nNow 9.99x faster than anything.\n")
    result = check(str(changed))
    assert result.returncode == 1
    assert "figure '9.99x'" in result.stdout


def test_figure_stated_on_a_results_page_is_checked_there(tmp_path):
    spec = importlib.util.spec_from_file_location("check_readme_figures", CHECK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    page_entries = [entry for entry in module.FIGURES if len(entry) > 3]
    assert page_entries, "no figure is stated on a results page"
    path, key, write, page = page_entries[0]
    figure = write(module.value_at(json.load(open(os.path.join(ROOT, path))), key))
    changed = tmp_path / "page.md"
    changed.write_text(open(os.path.join(ROOT, page)).read().replace(figure, "0.01x"))
    module.FIGURES = [(path, key, write, str(changed))]
    found = module.problems(os.path.join(ROOT, "README.md"))
    assert any(f"expected '{figure}'" in line and str(changed) in line for line in found)
