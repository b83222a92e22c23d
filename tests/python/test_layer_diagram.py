"""scripts/layer_diagram.py: docs/architecture.md's diagram of the layers is
the one the build's CMakeLists.txt files give now, and no layer links one
above it."""
import importlib.util
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "layer_diagram.py")


def load():
    spec = importlib.util.spec_from_file_location("layer_diagram", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as out:
        out.write(text)


def small_tree(root):
    """Three layers: a library, one linking it (and an external library), a
    program under a condition, and a link a path already gives."""
    write(os.path.join(root, "src/colo/CMakeLists.txt"),
          "# lowest first\nadd_subdirectory(core)\nadd_subdirectory(sched)\nadd_subdirectory(cli)\n")
    write(os.path.join(root, "src/colo/core/CMakeLists.txt"),
          "colo_library(colo_core\n  SOURCES a.cpp # (a comment)\n  DEPS fmt::fmt)\n")
    write(os.path.join(root, "src/colo/sched/CMakeLists.txt"),
          "colo_library(colo_sched TORCH\n  SOURCES b.cpp\n  DEPS colo_core SQLite::SQLite3)\n")
    write(os.path.join(root, "src/colo/cli/CMakeLists.txt"),
          "colo_library(colo_cli SOURCES c.cpp DEPS colo_sched colo_core)\n"
          "if(COLO_HAS_HTTP)\n  add_executable(colod main.cpp)\n"
          "  target_link_libraries(colod PRIVATE colo_cli CLI11::CLI11)\n"
          "  target_link_libraries(colo_cli PUBLIC colo_core)\nendif()\n")


def test_the_documented_diagram_is_the_one_the_build_gives():
    module = load()
    doc = open(os.path.join(ROOT, module.DOC)).read()
    held = module.section(doc)
    assert held is not None, f"{module.DOC} lacks the marker lines of the layer diagram"
    assert held == module.diagram(ROOT), (
        f"{module.DOC}'s layer diagram differs from the build: run python3 scripts/layer_diagram.py --write")


def test_no_layer_links_a_layer_above_it():
    module = load()
    targets, links = module.read_build(ROOT)
    assert len(targets) > 10 and links, "the script found no colo targets in src/colo"
    assert module.upward_links(targets, links) == []


def test_diagram_draws_links_between_colo_targets_only(tmp_path):
    small_tree(str(tmp_path))
    text = load().diagram(str(tmp_path))
    assert text.startswith("```mermaid\nflowchart TD\n")
    assert '  colo_core["core/: colo_core"]' in text
    assert '  colod["cli/: colod (program, if COLO_HAS_HTTP)"]' in text
    assert "  colod --> colo_cli" in text           # defined and linked under the same if(): plain
    assert "  colo_cli --> colo_sched" in text
    assert "  colo_sched --> colo_core" in text
    assert "colo_cli --> colo_core" not in text     # implied by colo_cli -> colo_sched -> colo_core
    assert "fmt" not in text and "SQLite" not in text and "CLI11" not in text
    assert "  class colo_sched torch" in text


def test_every_link_is_drawn_with_all(tmp_path):
    small_tree(str(tmp_path))
    text = load().diagram(str(tmp_path), every_link=True)
    assert "  colo_cli --> colo_core" in text


def test_a_link_made_under_a_condition_is_dashed(tmp_path):
    small_tree(str(tmp_path))
    write(os.path.join(str(tmp_path), "src/colo/cli/CMakeLists.txt"),
          "colo_library(colo_cli SOURCES c.cpp DEPS colo_core)\n"
          "if(COLO_HAS_CUDA)\n  target_link_libraries(colo_cli PUBLIC colo_sched)\nendif()\n")
    text = load().diagram(str(tmp_path))
    assert '  colo_cli -. "COLO_HAS_CUDA" .-> colo_sched' in text
    assert "  colo_cli --> colo_core" in text       # only a conditional path gives it


def test_a_link_up_a_layer_is_found(tmp_path):
    small_tree(str(tmp_path))
    write(os.path.join(str(tmp_path), "src/colo/core/CMakeLists.txt"),
          "colo_library(colo_core SOURCES a.cpp DEPS colo_cli)\n")
    module = load()
    assert module.upward_links(*module.read_build(str(tmp_path))) == [("colo_core", "colo_cli")]


def check(doc):
    return subprocess.run([sys.executable, SCRIPT, "--check", "--doc", doc], capture_output=True, text=True)


def test_check_and_write_catch_and_mend_a_changed_diagram(tmp_path):
    module = load()
    doc = open(os.path.join(ROOT, module.DOC)).read()
    assert check(os.path.join(ROOT, module.DOC)).returncode == 0
    changed = tmp_path / "architecture.md"
    edge = next(line for line in doc.splitlines(keepends=True) if " --> " in line)
    changed.write_text(doc.replace(edge, "", 1))
    assert changed.read_text() != doc
    result = check(str(changed))
    assert result.returncode == 1
    assert "the layer diagram differs from the build" in result.stdout
    subprocess.run([sys.executable, SCRIPT, "--write", "--doc", str(changed)], check=True)
    assert changed.read_text() == doc


def test_check_fails_without_the_markers(tmp_path):
    bare = tmp_path / "architecture.md"
    bare.write_text("# Architecture\n")
    result = check(str(bare))
    assert result.returncode == 1
    assert "no diagram between the lines" in result.stdout
