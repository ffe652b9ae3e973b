"""The docs site (issue 38.5): `rlexplain docs` builds it with Sphinx + myst-nb + sphinx-book-theme from the committed
outputs. Every page has the navigation sidebar, the site has a search index, no page shows an `In [` prompt, a hidden
cell or a `#|` directive, nothing is loaded from another host (MathJax is served from the site), the API reference is
built from the docstrings, and nothing is written outside `--out`. The README is the index notebook rendered."""
import re
from pathlib import Path

import nbformat
import pytest

from rlexplain.docs import build_docs, render_readme

ROOT = Path(__file__).resolve().parent.parent
v4 = nbformat.v4
REMOTE = re.compile(r"""<(script|link|img|iframe)\b[^>]*\b(src|href)=["'](https?:)?//""", re.I)   # a resource from another host


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    "The real site, built once from the repository's notebooks (about a minute of CPU)."
    root = tmp_path_factory.mktemp("site")
    index = build_docs(root / "docs", ROOT / "nbs", workers=2)
    return root, index.parent


def _pages(out: Path) -> list[Path]:
    "Every page of the site (not the theme's own templates under _static/)."
    return sorted(p for p in out.rglob("*.html") if "_static" not in p.relative_to(out).parts)


def page_problems(page: str) -> list[str]:
    "What a built page must not show or load, one line each (empty: the page is clean)."
    out = []
    if "bd-docs-nav" not in page: out.append("no navigation sidebar (bd-docs-nav)")
    if re.search(r"In\s*(&nbsp;)?\[\s*\d*\s*\]", page) or "jp-InputPrompt" in page or "prompt input_prompt" in page:
        out.append("an 'In [ ]' prompt")
    if (m := REMOTE.search(page)): out.append(f"loads a resource from another host: {m.group(0)}")
    if re.search(r'<span class="c1">#\s*\|\s*(export|hide|default_exp|slow|eval)\b', page) or re.search(r"^#\| (export|hide|default_exp)", page, re.M):
        out.append("an nbdev directive line shown")
    return out


def test_the_checker_finds_each_problem():
    "Each problem in a page is named (so the site tests below can fail)."
    bad = ('<div class="prompt input_prompt">In&nbsp;[3]:</div><script src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-chtml.js">'
           '</script><pre><span class="c1">#| export</span></pre>')
    found = " | ".join(page_problems(bad))
    for what in ("navigation", "prompt", "another host", "directive"): assert what in found, what
    assert page_problems('<nav class="bd-links bd-docs-nav"></nav><script src="_static/mathjax/tex-chtml.js"></script>') == []


def test_every_page_has_navigation_and_no_prompt_cdn_or_directive(site):
    _, out = site
    pages = _pages(out)
    names = {p.name for p in pages}
    assert {"index.html", "course.html", "10_ir.html", "30_saliency.html", "search.html"} <= names, names
    assert len(list((out / "api").glob("*.html"))) >= 15                 # one API page per exported module
    for p in pages:
        problems = page_problems(p.read_text())
        assert problems == [], f"{p.relative_to(out)}: {problems}"


def test_site_has_a_search_index_and_offline_math(site):
    _, out = site
    index = (out / "searchindex.js").read_text()
    assert index.startswith("Search.setIndex(") and "interventional" in index.lower() and "saliency" in index.lower()
    ir = (out / "10_ir.html").read_text()
    assert 'src="_static/mathjax/tex-chtml.js"' in ir and (out / "_static" / "mathjax" / "tex-chtml.js").exists()
    assert 'class="math' in ir                                           # equations are math nodes, typeset by the local MathJax
    assert 'id="pst-page-toc-nav"' in ir                                 # the page's own table of contents


def test_pages_show_committed_outputs_not_hidden_cells(site):
    _, out = site
    ir = (out / "10_ir.html").read_text()
    assert "<img" in ir and (out / "_images").is_dir()                    # the committed figures
    assert "Solution 1" not in ir and "exact expectation of Algorithm 1" not in ir   # the hidden solution cells
    assert "from fastcore.test import" not in ir                          # the setup block under the title
    instructor = (out / "instructor.html").read_text()                    # the solutions are on the instructor's page
    assert "Solution 1" in instructor and "exact expectation of Algorithm 1" in instructor
    home = (out / "index.html").read_text()
    assert "Interventional robustness" in home and 'href="10_ir.html"' in home   # the sidebar links the lessons


def test_api_reference_is_built_from_the_docstrings(site):
    _, out = site
    api = (out / "api" / "rlexplain.ir.html").read_text()
    assert "interventional_robustness" in api and "bits" in api           # the function and its docstring's unit
    docs = (out / "api" / "rlexplain.docs.html").read_text()
    assert "build_docs" in docs and "sphinx" in docs.lower()


def test_nothing_is_written_outside_out(site):
    root, out = site
    assert sorted(p.name for p in root.iterdir()) == ["docs"]
    assert not (out / ".build").exists() and not (root / "jupyter_execute").exists()


def test_executed_docs_keep_figures_and_math_under_agg(tmp_path, monkeypatch):
    "run.sh exports MPLBACKEND=Agg; `execute=True` runs the notebooks (in a scratch copy) and the pages still show their figures."
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nbs = tmp_path / "nbs"; nbs.mkdir()
    nbformat.write(v4.new_notebook(cells=[v4.new_markdown_cell("# home\n\n> a tiny site")]), nbs / "index.ipynb")
    nb = v4.new_notebook(cells=[v4.new_markdown_cell("# t\n\n> one figure\n\nThe return $G_t = \\sum_k \\gamma^k r_{t+k}$."),
                                v4.new_code_cell("import matplotlib.pyplot as plt\nplt.plot([0, 1]); plt.show()\nprint('ran here')")])
    nb.metadata["kernelspec"] = {"display_name": "python3", "language": "python", "name": "python3"}
    nbformat.write(nb, nbs / "01_t.ipynb")
    index = build_docs(tmp_path / "docs", nbs, execute=True, timeout=120)
    page = (tmp_path / "docs" / "01_t.html").read_text()
    assert index.exists() and "<img" in page and "ran here" in page
    assert 'class="math' in page and "$G_t" not in page
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs", "nbs"]   # the execution wrote nothing beside the site
    assert page_problems(page) == []


def test_build_docs_refuses_a_folder_without_the_index(tmp_path):
    with pytest.raises(FileNotFoundError, match="index.ipynb"):
        build_docs(tmp_path / "docs", tmp_path)


def test_readme_is_the_index_notebook_rendered(tmp_path):
    "README.md is generated from nbs/index.ipynb by `rlexplain readme` (its committed outputs): edit the notebook, then regenerate."
    out = render_readme(ROOT / "nbs" / "index.ipynb", tmp_path / "README.md")
    assert out.read_text() == (ROOT / "README.md").read_text(), "README.md is out of step with nbs/index.ipynb: run `rlexplain readme`"
    assert "```python" in out.read_text()


def test_readme_is_short_and_shows_a_committed_figure():
    "Issue 38.6: a README for newcomers, at most 1,000 words, with one figure that is committed in the repository."
    import re
    import subprocess
    text = (ROOT / "README.md").read_text()
    assert len(text.split()) <= 1000, f"README.md has {len(text.split())} words (at most 1,000: move details to nbs/measurements.ipynb)"
    figures = re.findall(r"!\[[^\]]*\]\(([^)\s]+\.png)\)", text)
    assert len(figures) == 1, figures
    tracked = subprocess.run(["git", "ls-files", "--error-unmatch", figures[0]], cwd=ROOT, capture_output=True)
    assert (ROOT / figures[0]).is_file() and tracked.returncode in (0, 128), figures[0]   # 128: not a git checkout
    for command in ("bash run.sh demo", "bash run.sh test", "rlexplain course", "claims reproduced"):
        assert command in text, command
