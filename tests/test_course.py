"""`rlexplain course` prints the course plan; `rlexplain course --student DIR` writes the lessons without their solution
cells and without outputs (issue 38.3). The solutions stay in nbs/, where nbdev_test runs them."""
import json
from pathlib import Path

import nbformat
import pytest

from rlexplain.cli import main
from rlexplain.docs import COURSE, course_plan, is_solution, student_notebook

ROOT = Path(__file__).resolve().parent.parent
NBS = ROOT / "nbs"
METHOD_LESSONS = ["10_ir", "20_ranld", "30_saliency", "31_saliency_bench", "40_xrlbench", "41_explainers_metrics",
                  "50_shift_timeseries", "51_switching"]
v4 = nbformat.v4


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def test_course_prints_the_plan_week_by_week(capsys):
    assert main(["course", "--nbs", str(NBS)]) == 0
    out = capsys.readouterr().out
    weeks = [line for line in out.splitlines() if line.startswith("Week ")]
    assert len(weeks) == 4 and weeks[0].startswith("Week 1") and weeks[3].startswith("Week 4")
    for stem in METHOD_LESSONS: assert f"  {stem} " in out, stem
    assert "Interventional robustness, 4 exercises" in out                 # title and exercises from the lesson itself
    assert "00_core" not in out and "Appendix" not in out                  # the infrastructure is reference, not a lesson
    assert main(["course", "--nbs", str(NBS), "--appendix"]) == 0 and "  00_core " in capsys.readouterr().out


def test_plan_lists_every_method_lesson_with_its_exercises():
    plan = course_plan(NBS).set_index("lesson")
    assert set(METHOD_LESSONS) <= set(plan.index)
    assert plan.loc[METHOD_LESSONS, "exercises"].ge(1).all(), plan.exercises
    everything = set(course_plan(NBS, appendix=True).lesson)        # no notebook is left out: COURSE's, or the appendix
    assert everything == {p.stem for p in NBS.glob("[0-9]*.ipynb")}
    assert {s for rows in COURSE.values() for s, _ in rows if (NBS / f"{s}.ipynb").exists()} <= everything


def test_solution_cells_are_recognised():
    "The marks the lessons use today: a `#| hide` code cell opening with '# Solution N:' or '# N:' (after imports too)."
    sol = [v4.new_code_cell("#| hide\n# Solution 1: by hand\nassert 1 + 1 == 2"),
           v4.new_code_cell("#| slow\n#| hide\n# Solution 2: the experiment\nx = 1"),
           v4.new_code_cell("#| hide\nfrom scipy.stats import t\n# 1: the placebo\ny = 2")]
    not_sol = [v4.new_code_cell("#| hide\nfrom nbdev.showdoc import show_doc"),      # hidden scaffolding
               v4.new_code_cell("# Solution 1: shown to everyone\nz = 3"),            # not hidden: prose the lesson shows
               v4.new_markdown_cell("#| hide\n# Solution 1")]
    assert all(is_solution(c) for c in sol) and not any(is_solution(c) for c in not_sol)
    nb, n = student_notebook(v4.new_notebook(cells=sol + not_sol))
    assert n == 3 and len(nb.cells) == 3


def test_student_edition_has_no_solution_cell_and_no_output(tmp_path, capsys):
    dest = tmp_path / "student"
    assert main(["course", "--nbs", str(NBS), "--student", str(dest)]) == 0
    assert "student notebooks" in capsys.readouterr().out
    written = {p.stem: p for p in dest.glob("*.ipynb")}
    assert set(METHOD_LESSONS) <= set(written) and "00_core" not in written
    for stem, path in written.items():
        cells, original = _cells(path), _cells(NBS / f"{stem}.ipynb")
        assert not any(is_solution(c) for c in cells), stem
        assert not any("# Solution" in "".join(c["source"]) for c in cells if c["cell_type"] == "code"), stem
        assert all(c["outputs"] == [] and c["execution_count"] is None for c in cells if c["cell_type"] == "code"), stem
        kept = [c for c in original if not is_solution(c)]
        assert [c["source"] for c in cells] == [c["source"] for c in kept], stem   # everything else is the lesson, in order
    for stem in METHOD_LESSONS:                 # each method lesson had solutions, and the instructor's copy keeps them
        assert any(is_solution(c) for c in _cells(NBS / f"{stem}.ipynb")), stem
        assert any("Exercises" in "".join(c["source"]) for c in _cells(written[stem]) if c["cell_type"] == "markdown"), stem


def test_student_edition_refuses_to_overwrite_the_lessons(capsys):
    assert main(["course", "--nbs", str(NBS), "--student", str(NBS)]) == 2
    assert "lessons' own folder" in capsys.readouterr().err


def test_student_edition_refuses_to_overwrite_a_students_work(tmp_path, capsys):
    "Issue 54.2: `course --student DIR` run again into a folder where a student had worked replaced their notebooks (exit 0)."
    dest = tmp_path / "student"
    assert main(["course", "--nbs", str(NBS), "--student", str(dest)]) == 0
    assert main(["course", "--nbs", str(NBS), "--student", str(dest)]) == 0      # its own, unchanged edition: written again
    lesson = sorted(dest.glob("1*.ipynb"))[0]
    lesson.write_text(lesson.read_text().replace('"cells": [', '"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["my answer"]},', 1))
    edited = lesson.read_bytes(); capsys.readouterr()
    assert main(["course", "--nbs", str(NBS), "--student", str(dest)]) == 2
    err = capsys.readouterr().err
    assert lesson.name in err and "--force" in err and lesson.read_bytes() == edited     # refused, the work kept
    other = tmp_path / "notes"; other.mkdir(); (other / "todo.txt").write_text("mine")
    assert main(["course", "--nbs", str(NBS), "--student", str(other)]) == 2 and "todo.txt" in capsys.readouterr().err
    assert main(["course", "--nbs", str(NBS), "--student", str(dest), "--force"]) == 0
    assert lesson.read_bytes() != edited


def test_course_names_a_missing_notebooks_folder(tmp_path, capsys):
    assert main(["course", "--nbs", str(tmp_path / "nope")]) == 2
    assert "no notebooks folder" in capsys.readouterr().err
    with pytest.raises(FileNotFoundError, match="no lessons"):
        from rlexplain.docs import write_student_edition
        write_student_edition(tmp_path / "s", tmp_path)


def test_first_week_lessons_exist_with_the_template_and_exercises():
    "Issue 38.1-2: the first week's lessons exist, have graded exercises with checked solutions, and every part of the template."
    from rlexplain.docs import TEMPLATE, lesson_info, template_gaps
    week1 = [s for s, _ in next(iter(COURSE.values()))]
    assert week1[:2] == ["0a_why", "0b_primer"], week1
    for stem in week1[:2]:
        path = NBS / f"{stem}.ipynb"
        assert template_gaps(path) == [], (stem, template_gaps(path))
        assert len(lesson_info(path)["exercises"]) >= 3, stem
        assert sum(is_solution(c) for c in _cells(path)) >= 2, stem


def test_template_gaps_names_what_a_lesson_lacks(tmp_path):
    from rlexplain.docs import TEMPLATE, template_gaps
    nb = v4.new_notebook(cells=[v4.new_markdown_cell("# t\n\n> x\n\n## Summary\n\n- one\n\nNext: [a](a.ipynb)")])
    nbformat.write(nb, tmp_path / "t.ipynb")
    gaps = template_gaps(tmp_path / "t.ipynb")
    assert len(gaps) == len(TEMPLATE) - 2 and "a ## Exercises heading" in gaps and "a link to the paper (arXiv or DOI)" in gaps


def _week_lessons() -> list[str]:
    "COURSE's lessons in teaching order, the appendix left out."
    from rlexplain.docs import APPENDIX
    return [s for part, rows in COURSE.items() if part != APPENDIX for s, _ in rows]


def test_every_lesson_has_the_template_graded_exercises_and_a_next_line():
    """Issue 38.2: every lesson of COURSE's weeks (not the appendix) has every part of `TEMPLATE`, at least three graded
    exercises (the first one's title starts with a star), and a last 'Next:' line whose first link is the lesson that
    follows it in COURSE (the last lesson: the course plan), a notebook that exists."""
    import re
    from rlexplain.docs import lesson_info, template_gaps
    lessons = _week_lessons()
    assert len(lessons) >= 14 and "32_episode" in lessons, lessons
    problems = {}
    for i, stem in enumerate(lessons):
        path = NBS / f"{stem}.ipynb"
        assert path.exists(), f"COURSE names {stem}, which has no notebook"
        gaps = list(template_gaps(path))
        ex = lesson_info(path)["exercises"]
        if len(ex) < 3: gaps.append(f"{len(ex)} exercises (at least 3)")
        if ex and not all(re.match(r"★{1,3} ", t) for t in ex): gaps.append(f"ungraded exercises: {[t for t in ex if not t.startswith('★')]}")
        md = "\n\n".join("".join(c["source"]) for c in _cells(path) if c["cell_type"] == "markdown")
        nxt = re.findall(r"^Next: [^\n]*?\]\(([^)#]+\.ipynb)", md, re.M)
        want = f"{lessons[i + 1]}.ipynb" if i + 1 < len(lessons) else "course.ipynb"
        if not nxt: gaps.append("no 'Next: [...](....ipynb)' line")
        elif nxt[-1] != want or not (NBS / nxt[-1]).exists(): gaps.append(f"Next links {nxt[-1]}, expected {want} (existing)")
        if gaps: problems[stem] = gaps
    assert not problems, problems


def test_template_check_fails_on_a_lesson_without_it(tmp_path):
    "The check above can fail: a lesson with ungraded exercises and no Next line is reported."
    import re
    from rlexplain.docs import lesson_info, template_gaps
    nb = v4.new_notebook(cells=[v4.new_markdown_cell("# t\n\n> x"),
                                v4.new_markdown_cell("## Exercises\n\n1. **One.** a\n2. **Two.** b")])
    nbformat.write(nb, tmp_path / "t.ipynb")
    assert "a 'Next: ...' line linking the next lesson" in template_gaps(tmp_path / "t.ipynb")
    assert not any(re.match(r"★", t) for t in lesson_info(tmp_path / "t.ipynb")["exercises"])
