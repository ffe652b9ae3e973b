"""The rendered docs (issue 27.2): no raw `{target=...}` text, source links relative or none, no LaTeX command as text,
no raw `$`, no stderr boxes, and nothing written outside `--out`. Pages are rendered from committed outputs (fast)."""
import json
from pathlib import Path

import nbformat
import pytest

from rlexplain.cli import page_defects, render_docs

ROOT = Path(__file__).resolve().parent.parent
v4 = nbformat.v4

# what nbdev's show_doc writes into a committed output (its source link: Quarto attribute syntax, a code host's
# address from settings.ini, and '#LNone' when it cannot find the line)
SHOW_DOC = ('---\n\n[source](https://github.com/rlexplain/rlexplain/blob/main/rlexplain/core.py#L42)'
            '{target="_blank" style="float:right; font-size:smaller"}\n\n### get_scale\n\n>      get_scale (default:str=\'demo\')\n')
SHOW_DOC_NONE = SHOW_DOC.replace("core.py#L42", "attribution.py#LNone").replace("get_scale", "Explainer")
TQDM = "rollout:  40%|####      | 120/300 [00:02<00:03, 51.2it/s]\r"


def _defect_notebook() -> nbformat.NotebookNode:
    "One notebook holding every defect the docs once showed, as committed outputs and Markdown."
    md = ("# defects\n\n> every defect once seen\n\nThe greedy action $\\arg\\max_a Q(s, a)$; AIM$(k) \\approx 1 - k/4$ and an AUC "
          "$\\approx\n0.5$ wrapped by the editor; code `$HOME` and a price of $5 stay text.")
    code = v4.new_code_cell("show_doc(get_scale)")
    code.outputs = [v4.new_output("display_data", data={"text/markdown": SHOW_DOC, "text/plain": "<...>"}),
                    v4.new_output("display_data", data={"text/markdown": SHOW_DOC_NONE, "text/plain": "<...>"}),
                    v4.new_output("stream", name="stderr", text=TQDM),
                    v4.new_output("stream", name="stdout", text="[rollout] 300 steps\n")]
    return v4.new_notebook(cells=[v4.new_markdown_cell(md), code, v4.new_code_cell("#| default_exp core")])


def test_the_checker_finds_each_defect():
    "Each defect of issue 27.2 in a page is named (so the tests below can fail)."
    bad = ('<div class="text_cell_render border-box-sizing rendered_html"><p>a $x$ left</p></div></div>'
           '<p><a href="https://github.com/rlexplain/rlexplain/blob/main/rlexplain/core.py#L1">source</a>'
           '{target=&quot;_blank&quot; style=&quot;float:right&quot;}</p><a href="x.html#LNone">source</a>'
           '<math><mi>\\arg</mi></math><div class="output_subarea output_stream output_stderr output_text">40%|##</div>')
    found = " | ".join(page_defects(bad))
    for what in ("target=", "github.com", "LNone", "\\arg", "raw '$'", "stderr"): assert what in found, what
    assert page_defects('<a href="00_core.html#api">source</a><math><mo>arg</mo></math>') == []


def test_rendered_page_has_none_of_the_defects(tmp_path):
    nbs = tmp_path / "nbs"; nbs.mkdir()
    nbformat.write(_defect_notebook(), nbs / "00_core.ipynb")
    render_docs(nbs, tmp_path / "docs")
    page = (tmp_path / "docs" / "00_core.html").read_text()
    assert page_defects(page) == []
    assert '<a href="00_core.html#api">source</a>' in page       # the module's own page: a real relative link
    assert "[rollout] 300 steps" in page and "51.2it/s" not in page   # stdout kept; the progress bar's stderr box gone
    assert page.count("<math") == 3 and "$5" in page               # three inline formulas (one wrapped); the price stays text


def test_a_real_lesson_renders_clean_from_its_committed_outputs(tmp_path):
    "05_attribution showed every defect (raw attributes, code-host links, \\arg, a wrapped equation) when rendered."
    nbs = tmp_path / "nbs"; nbs.mkdir()
    for name in ("00_core", "05_attribution"):    # 00_core: the page that 05's links to core point at
        (nbs / f"{name}.ipynb").write_text((ROOT / "nbs" / f"{name}.ipynb").read_text())
    render_docs(nbs, tmp_path / "docs", only=["05_attribution"])
    page = (tmp_path / "docs" / "05_attribution.html").read_text()
    assert page_defects(page) == []
    assert "<math" in page and "API" in page


def test_executed_docs_write_only_under_out(tmp_path):
    "Rendering once wrote runs/saliency_bench_paper beside the repository's notebooks: execution now runs in a scratch copy."
    repo = tmp_path / "repo"; nbs = repo / "nbs"; nbs.mkdir(parents=True)
    nbformat.write(v4.new_notebook(cells=[v4.new_markdown_cell("# w\n\n> writes"), v4.new_code_cell(
        "from pathlib import Path\nPath('../runs/x').mkdir(parents=True, exist_ok=True); Path('../runs/x/f.txt').write_text('1')\n"
        "Path('here.txt').write_text('2'); print(sorted(p.name for p in Path('../runs/demo').iterdir()))")]), nbs / "w.ipynb")
    run = tmp_path / "run"; run.mkdir(); (run / "report.html").write_text("")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    out = repo / "docs"
    render_docs(nbs, out, execute=True, run=run)
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert [p for p in after if p not in before and not str(p).startswith("repo/docs")] == []
    assert not (out / ".execute").exists()                           # the scratch copy is removed
    assert "report.html" in (out / "w.html").read_text()             # the run folder was visible as ../runs/demo


def test_readme_is_the_index_notebook_rendered(tmp_path):
    "README.md is generated from nbs/index.ipynb by `rlexplain readme` (its committed outputs): edit the notebook, then regenerate."
    from rlexplain.cli import render_readme
    out = render_readme(ROOT / "nbs" / "index.ipynb", tmp_path / "README.md")
    assert out.read_text() == (ROOT / "README.md").read_text(), "README.md is out of step with nbs/index.ipynb: run `rlexplain readme`"
    assert "```python" in out.read_text()


def test_pages_rendered_on_two_processes_equal_the_serial_ones(tmp_path):
    """Issue 28.3: `render_docs(workers=2)` renders the committed pages side by side; the pages (and the index's lesson plan)
    must be byte-identical to a one-process render, and the defect checker must still pass on them."""
    nbs = tmp_path / "nbs"; nbs.mkdir()
    nbformat.write(_defect_notebook(), nbs / "00_core.ipynb")
    nb = _defect_notebook(); nb.cells[-1].source = "#| default_exp envs"; nbformat.write(nb, nbs / "01_envs.ipynb")
    one = render_docs(nbs, tmp_path / "one").parent
    two = render_docs(nbs, tmp_path / "two", workers=2).parent
    names = sorted(p.name for p in one.glob("*.html"))
    assert names == sorted(p.name for p in two.glob("*.html")) and len(names) == 3   # two lessons and the index
    for n in names: assert (one / n).read_bytes() == (two / n).read_bytes(), n
    assert page_defects((two / "00_core.html").read_text()) == []
