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
