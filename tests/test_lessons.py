"The committed lessons keep their outputs within the rules of `rlexplain.lessons` (no absolute paths, widgets, banners, stderr; size budgets)."
from pathlib import Path

import pytest

from rlexplain.lessons import LESSON_BUDGET_BYTES, TOTAL_BUDGET_BYTES, lesson_paths, output_problems

NBS = Path(__file__).resolve().parent.parent / "nbs"


@pytest.mark.parametrize("path", lesson_paths(NBS), ids=lambda p: p.name)
def test_committed_notebook_outputs_follow_the_rules(path):
    assert output_problems(path, LESSON_BUDGET_BYTES) == []


def test_all_outputs_together_stay_under_the_total_budget():
    total = sum(p.stat().st_size for p in lesson_paths(NBS))
    assert total <= TOTAL_BUDGET_BYTES, f"{total:,} bytes of notebooks, budget {TOTAL_BUDGET_BYTES:,}"


def test_the_checker_flags_an_absolute_path(tmp_path):
    import json
    nb = {"cells": [{"cell_type": "code", "source": "", "metadata": {}, "execution_count": None,
                     "outputs": [{"output_type": "stream", "name": "stdout", "text": "saved to /home/alice/runs/x\n"}]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    p = tmp_path / "x.ipynb"; p.write_text(json.dumps(nb))
    assert any("absolute path" in s for s in output_problems(p))


@pytest.mark.parametrize("path", lesson_paths(NBS), ids=lambda p: p.name)
def test_committed_outputs_were_made_by_the_current_code(path):
    """Issue 28.3: the docs render the committed outputs, so they must come from the current code: `rlexplain lessons
    --execute` records the hash of what each lesson ran (its code cells and the rlexplain modules it imports).
    A lesson with no record yet is skipped, naming the command that records it; a recorded one that is stale fails."""
    from rlexplain.lessons import stale_outputs
    why = stale_outputs(path)
    if why and "no record" in why: pytest.skip(why)
    assert why is None, why


def test_the_staleness_check_can_fail(tmp_path):
    "A recorded lesson whose imported module's code changes is reported stale (prose-only edits are not)."
    import json
    from rlexplain.lessons import record_execution, stale_outputs
    lib = tmp_path / "lib"; lib.mkdir(); (lib / "m.py").write_text("def f():\n    'Doc.'\n    return 1\n")
    nb = tmp_path / "a.ipynb"
    out = [{"output_type": "stream", "name": "stdout", "text": "1\n"}]
    nb.write_text(json.dumps({"cells": [{"cell_type": "code", "source": "from rlexplain.m import f", "metadata": {}, "outputs": out}]}))
    assert "no record" in stale_outputs(nb, lib)
    record_execution(nb, 2.0, lib); assert stale_outputs(nb, lib) is None
    (lib / "m.py").write_text("def f():\n    'Changed prose.'\n    return 1\n"); assert stale_outputs(nb, lib) is None
    (lib / "m.py").write_text("def f():\n    return 2\n"); assert "other code" in stale_outputs(nb, lib)


def test_code_hash_follows_a_package_the_lesson_imports(tmp_path):
    "A lesson that imports rlexplain.attribution (a package) is stale when any module inside the package changes."
    import json
    from rlexplain.lessons import code_hash
    lib = tmp_path / "lib"; (lib / "pkg" / "sub").mkdir(parents=True)
    (lib / "pkg" / "__init__.py").write_text("x = 1\n"); (lib / "pkg" / "sub" / "m.py").write_text("def f(): return 1\n")
    nb = tmp_path / "a.ipynb"
    nb.write_text(json.dumps({"cells": [{"cell_type": "code", "source": "from rlexplain.pkg.sub.m import f\n"}]}))
    h0 = code_hash(nb, lib)
    (lib / "pkg" / "sub" / "m.py").write_text("def f(): return 2\n")
    assert code_hash(nb, lib) != h0
    (lib / "pkg" / "sub" / "m.py").write_text('def f():\n    "a docstring only"\n    return 2\n')   # prose does not count
    h1 = code_hash(nb, lib)
    (lib / "pkg" / "sub" / "m.py").write_text("def f(): return 2\n")
    assert code_hash(nb, lib) == h1


def test_code_hash_ignores_test_flag_lines_only(tmp_path):
    """Issue 28: marking a demo-scale experiment cell `#| slow` (or `#| cuda`) changes what `nbdev_test` runs, not what the
    cell computes, so a lesson's recorded outputs stay current; every other directive (and any code change) still counts."""
    import json
    from rlexplain.lessons import code_hash
    lib = tmp_path / "lib"; lib.mkdir()
    nb = tmp_path / "a.ipynb"
    def h(*sources):
        nb.write_text(json.dumps({"cells": [{"cell_type": "code", "source": s} for s in sources]}))
        return code_hash(nb, lib)
    h0 = h("x = 1\ny = x + 1\n", "print(y)")
    assert h("#| slow\nx = 1\ny = x + 1\n", "print(y)") == h0
    assert h(["#| slow\n", "x = 1\n", "y = x + 1\n"], ["#|cuda\n", "print(y)"]) == h0
    assert h("  #  |  slow  \nx = 1\ny = x + 1\n", "print(y)") == h0
    for changed in ("#| export\nx = 1\ny = x + 1\n", "#| eval: false\nx = 1\ny = x + 1\n", "#| slowly\nx = 1\ny = x + 1\n",
                    "x = 1  #| slow\ny = x + 1\n", "x = 2\ny = x + 1\n"):
        assert h(changed, "print(y)") != h0, changed


def test_the_ignored_flags_are_the_ones_nbdev_test_skips():
    "`TEST_FLAGS` are settings.ini's `tst_flags`: the cells `nbdev_test` skips unless `--flags` names them."
    import configparser
    from rlexplain.lessons import TEST_FLAGS
    ini = configparser.ConfigParser(); ini.read(NBS.parent / "settings.ini")
    assert set(TEST_FLAGS) == set(ini["DEFAULT"]["tst_flags"].split())


def _notebook(path: Path, cells: list) -> Path:
    import json
    path.write_text(json.dumps({"cells": cells, "metadata": {"kernelspec": {"display_name": "python3", "language": "python", "name": "python3"}},
                                "nbformat": 4, "nbformat_minor": 5}))
    return path


def _code(src: str, outputs=()) -> dict:
    return {"cell_type": "code", "source": src, "metadata": {}, "execution_count": None, "outputs": list(outputs)}


def test_a_failing_lesson_does_not_stop_the_others(tmp_path):
    """`execute_lessons` runs every chosen lesson even when one raises, then names the ones that failed; the failed file
    keeps what it held, the others are executed and recorded."""
    from rlexplain.lessons import RECORD, LessonsFailed, execute_lessons
    nbs = tmp_path / "nbs"; nbs.mkdir()
    _notebook(nbs / "a_broken.ipynb", [_code("raise ValueError('planted')")])
    _notebook(nbs / "b_fine.ipynb", [_code("print(6 * 7)")])
    with pytest.raises(LessonsFailed, match="(?s)1 lesson.*a_broken.ipynb: CellExecutionError: ValueError: planted") as e: execute_lessons(nbs, timeout=120)
    assert e.value.done.notebook.tolist() == ["b_fine.ipynb"]
    import json
    rec = json.loads((nbs / RECORD).read_text())
    assert "b_fine.ipynb" in rec and "a_broken.ipynb" not in rec
    assert "42" in (nbs / "b_fine.ipynb").read_text()


def test_a_number_in_prose_that_no_cell_prints_is_found(tmp_path):
    """A decimal number in markdown must be printed by the lesson (at the typed rounding, or as a percentage); a
    planted one is reported, and in a `PROSE_BOUND` lesson `lesson_problems` fails on it."""
    from rlexplain.lessons import PROSE_BOUND, lesson_problems, unprinted_numbers
    out = {"output_type": "stream", "name": "stdout", "text": "share 0.4571 of 1,600 cells\n"}
    md = lambda s: {"cell_type": "markdown", "metadata": {}, "source": s}
    p = _notebook(tmp_path / "x.ipynb", [md("The share is 0.46 (45.7%); the paper says 0.61. Section 3.2, `eps=0.05`, $p < 0.01$."),
                                         _code("print(share)", [out])])
    assert [(n) for _, n, _ in unprinted_numbers(p)] == ["0.61"]
    assert PROSE_BOUND and set(PROSE_BOUND) <= {q.stem for q in lesson_paths(NBS)}   # every bound lesson exists (nbs/ or nbs/attribution/)
    nbs = tmp_path / "nbs"; nbs.mkdir()
    _notebook(nbs / f"{PROSE_BOUND[0]}.ipynb", [md("It reads 0.61."), _code("print(share)", [out])])
    assert any("states 0.61" in q for q in lesson_problems(nbs))


def test_code_without_outputs_is_never_executed():
    "A notebook with code cells and no output at all was never executed: `stale_outputs` says so (prose alone is fine)."
    import tempfile
    from rlexplain.lessons import stale_outputs
    with tempfile.TemporaryDirectory() as d:
        assert "never executed" in stale_outputs(_notebook(Path(d) / "c.ipynb", [_code("x = 1")]))
        assert stale_outputs(_notebook(Path(d) / "m.ipynb", [{"cell_type": "markdown", "metadata": {}, "source": "text"}])) is None
