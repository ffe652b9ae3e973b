"""The papers' published numbers as data (rlexplain/papers/, nbs/94_papers.ipynb): cells checked against the values the
papers print, the index's sources, the loader's errors, and a torch-free scoreboard."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from rlexplain import papers

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "rlexplain" / "papers"


# ------------------------------------------------------------------ cells as the papers print them
def test_avery_table6_cells():
    "Avery et al. 2022, App. E.2, Table 6 (Breakout): a few cells of the printed table, and its shape (8 pipelines x 5 checkpoints)."
    t = papers.ir_table6().set_index(["algorithm", "frames"])
    assert len(t) == 40 and set(t.index.get_level_values("frames")) == {50_000, 3_000_000, 5_000_000, 8_000_000, 10_000_000}
    assert tuple(t.loc[("dqn", 50_000)]) == (1.000, 0.999, -0.001)
    assert tuple(t.loc[("vqn", 8_000_000)]) == (0.623, 0.806, 0.184)
    assert tuple(t.loc[("ppo", 10_000_000)]) == (0.497, 0.509, 0.012)
    assert t.loc[("a2c", 3_000_000), "normalized"] == -0.125


def test_korkmaz_tables_cells():
    "Korkmaz 2024, Tables 1-2: mean ± std cells; the base observations' row repeated in Table 2, as the paper does."
    t = papers.ranld_tables().set_index(["table", "game", "condition"])
    assert len(t) == 4 * 5 + 4 * 6
    assert tuple(t.loc[("1 adversarial", "Freeway", papers.RANLD_BASELINE)]) == (0.9917, 0.0023)
    assert tuple(t.loc[("1 adversarial", "BankHeist", "Elastic-Net")]) == (0.30917, 0.0521)
    assert tuple(t.loc[("2 natural", "RoadRunner", "Compression Artifacts")]) == (0.24358, 0.0204)
    assert tuple(t.loc[("2 natural", "Pong", "Brightness and Contrast")]) == (0.1678, 0.0427)
    assert tuple(t.loc[("2 natural", "Pong", papers.RANLD_BASELINE)]) == (0.4934, 0.0391)   # = Table 1's base column
    assert papers.RANLD_ADVERSARIAL == ("Carlini&Wagner", "Nesterov Momentum", "DeepFool", "Elastic-Net")
    assert len(papers.RANLD_NATURAL) == 5 and papers.RANLD_NATURAL[-1] == "Blurred Observations"


def test_huber_tables_cells():
    "Huber et al. 2022: Table 1 and 10 cells, the final parameters' seconds per map (Tables 3-9), App. B.1's calibration."
    h = papers.insertion_table()
    assert list(h.columns) == ["paper_game", "sub_metric", "method", "mean", "std"] and len(h) == 160
    h = h.set_index(["paper_game", "sub_metric", "method"])
    assert tuple(h.loc[("Frostbite", "Q-val black", "occlusion")]) == (5.65, 3.1)
    assert tuple(h.loc[("Space Invaders", "Adv rand", "random")]) == (0.89, 4.2)
    assert tuple(h.loc[("Pac-Man", "Q-val rand", "occlusion_gray")]) == (2.98, 3.5)   # Table 10
    rt = papers.runtimes()
    assert rt == {"occlusion": 2.80, "noise_sensitivity": 2.62, "sarfa": 3.00, "rise": 1.54,
                  "lime_felzenszwalb": 1.71, "lime_slic": 2.08, "lime_quickshift": 2.75}
    assert all(type(v) is float for v in rt.values())
    tt = papers.tuning_table()
    fin = tt[tt.final]
    assert len(fin) == tt.method.nunique() == 5 and all(rt[m] == s for m, s in zip(fin.method, fin.seconds_per_map))
    assert json.loads(papers.tuning_table("sarfa").params[1]) == {"perturbation": "black", "radius": 2}
    assert papers.tuning_table("nothing").empty
    c = papers.calibration()
    assert c.index.name == "distribution" and c.loc["gaussian", "ssim"] == 0.0374 and c.loc["uniform", "hog"] == 0.0096


def test_xiong_and_fujimoto():
    "XRL-Bench Tables 2-4 cells; Fujimoto et al.'s five findings."
    x = papers.xrlbench_results()
    assert len(x) == 3 * 7 + 2 * 5 and list(x.columns) == ["env", "method", "AIM", "AUM", "PGI", "PGU", "RIS"]
    x = x.set_index(["env", "method"])
    assert tuple(x.loc[("FlappyBird", "TabularLIME")]) == (0.559, 0.511, 3.017, 2.038, 14.691)
    assert tuple(x.loc[("Breakout", "IG")]) == (0.292, 0.652, 1.812, 0.364, 0.109)
    f = papers.timeseries_findings()
    assert list(f) == ["pre_identical", "eps_monotone", "negative_effect", "breakout_overlap", "pong_ppo_better"]
    assert f["pong_ppo_better"][0].startswith("Fig. 5 (Pong)") and all(isinstance(v, tuple) and len(v) == 2 for v in f.values())


# ------------------------------------------------------------------ the index and the loader
def test_every_file_is_indexed_with_its_source():
    "Each CSV of rlexplain/papers/ has one [table] entry naming its paper, table and transcript line, and vice versa."
    names = papers.table_names()
    assert sorted(papers.source(n)["file"] for n in names) == sorted(p.name for p in DATA.glob("*.csv"))
    for n in names:
        s = papers.source(n)
        assert s["paper"] and re.search(r"Table|App\.", s["where"]) and re.search(r"\.md:\d+", s["transcript"]), n
        assert not papers.paper_table(n).isna().any().any(), f"{n} has an empty cell"


def test_loader_errors_and_copies():
    with pytest.raises(KeyError, match="avery2022_table6"): papers.source("table6")
    with pytest.raises(KeyError): papers.paper_table("no_such_table")
    a = papers.ir_table6(); a.loc[0, "original"] = -1.0
    assert papers.ir_table6().loc[0, "original"] == 0.474   # a caller's change never reaches the cache


def test_numbers_parse_as_python_literals():
    "Every float cell of every table is bit for bit Python's float(text) of the CSV, as the literals it replaces were."
    for n in papers.table_names():
        raw, got = pd.read_csv(DATA / papers.source(n)["file"], dtype=str), papers.paper_table(n)
        for c in got.columns[got.dtypes == float]:
            assert [float(x) for x in raw[c]] == got[c].tolist(), (n, c)


def test_study_names_read_the_data():
    "The study modules' old names are thin readers of the same data (one source of truth)."
    from rlexplain import ranld_study, saliency_bench, saliency_study, scoreboard, timeseries_study, xrlbench
    pd.testing.assert_frame_equal(ranld_study.paper_tables(), papers.ranld_tables())
    pd.testing.assert_frame_equal(saliency_study.paper_insertion_table(), papers.insertion_table())
    pd.testing.assert_frame_equal(saliency_study.paper_tuning_table(), papers.tuning_table())
    pd.testing.assert_frame_equal(saliency_bench.PAPER_CALIBRATION, papers.calibration())
    pd.testing.assert_frame_equal(xrlbench.paper_results(), papers.xrlbench_results())
    pd.testing.assert_frame_equal(scoreboard.ir_paper_table(), papers.ir_table6())
    assert saliency_study.PAPER_RUNTIMES == papers.runtimes() and timeseries_study.PAPER_FINDINGS == papers.timeseries_findings()
    assert ranld_study.ADVERSARIAL_CONDITIONS == papers.RANLD_ADVERSARIAL and ranld_study.BASELINE == papers.RANLD_BASELINE


# ------------------------------------------------------------------ packaging and imports
def test_setup_ships_the_data():
    "setup.py declares the CSV and TOML files as package data (else an installed rlexplain has no paper numbers)."
    setup = (ROOT / "setup.py").read_text()
    assert "'papers/*.csv'" in setup and "'papers/*.toml'" in setup


def _fresh_modules(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, cwd=ROOT, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("module", ["rlexplain.papers", "rlexplain.scoreboard"])
def test_import_leaves_torch_out(module):
    "A fresh process that imports the papers' loader or the scoreboard has not imported torch (the check sees torch when imported)."
    assert "torch" in _fresh_modules("import torch")
    mods = _fresh_modules(f"import {module}")
    assert module in mods and "torch" not in mods, f"import {module} pulled in torch"
