"The reproduction scoreboard: the claims as data, and verdicts on a hand-made run whose answers are computed by hand."
import json
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from rlexplain import scoreboard as sb
from rlexplain.ranld import ADVERSARIAL_CONDITIONS, BASELINE, NATURAL_CONDITIONS


def _csv(run: Path, section: str, name: str, df: pd.DataFrame):
    (run / section).mkdir(parents=True, exist_ok=True)
    df.to_csv(run / section / f"{name}.csv", index=False)   # as rlexplain.cli.Section.table writes it


def _ranld_rows(game: str, base: float, adv: float, nat: float) -> list[dict]:
    rows = [dict(game=game, table="base", condition=BASELINE, at="observed", quotient_mean=base, quotient_std=0.01, n_runs=2)]
    rows += [dict(game=game, table="1 adversarial", condition=c, at="observed", quotient_mean=adv + 0.01 * k, quotient_std=0.01, n_runs=2)
             for k, c in enumerate(ADVERSARIAL_CONDITIONS)]
    rows += [dict(game=game, table="2 natural", condition=c, at="observed", quotient_mean=nat, quotient_std=0.01, n_runs=2)
             for c in NATURAL_CONDITIONS]
    # the rows with gradients at the environment's frames must be ignored: make them contradict every claim
    rows += [dict(r, at="env", quotient_mean=0.0 if r["condition"] == BASELINE else 0.9) for r in list(rows)]
    return rows


@pytest.fixture
def run(tmp_path) -> Path:
    "A demo-scale run written by hand in the demo's table format."
    r = tmp_path / "run"; r.mkdir()
    (r / "config.json").write_text(json.dumps({"scale": "demo"}))
    # IR (Table 6): dqn 5e4 R 0.98 (|0.98 - 1.000| = 0.02 <= 0.05: reproduced), qrdqn 5e4 R 0.80 (|0.80 - 0.991| > 0.05:
    # not reproduced), ppo 5e4 R 0.40 vs random_policy_R(5, 4) = 0.370 (0.03 <= 0.05: reproduced), no 1e7 checkpoint
    _csv(r, "ir", "ir_table", pd.DataFrame({"game": "toybox/Breakout", "pipeline": ["dqn", "qrdqn", "ppo", "dqn", "qrdqn", "ppo"],
                                            "frames": [50_000, 50_000, 50_000, 400_000, 400_000, 640_000],
                                            "original": [0.98, 0.80, 0.40, 0.97, 0.60, 0.45], "intervened": [0.97, 0.80, 0.41, 0.70, 0.55, 0.46],
                                            "normalized": [-0.01, 0.0, 0.01, -0.27, -0.05, 0.01]}))
    # R of the unintervened states of dqn at 5e4 over 4 states: mean 0.98, sd sqrt(0.0008 / 3) = 0.01633, so the 95% t interval
    # is 0.98 +- t(0.975, 3) 0.01633 / 2 = 0.98 +- 3.1824 * 0.008165 = 0.98 +- 0.0260
    _csv(r, "ir", "ir_cells", pd.DataFrame({"game": "toybox/Breakout", "pipeline": "dqn", "frames": 50_000, "intervention": "none",
                                            "state_step": range(4), "R": [0.96, 0.98, 1.0, 0.98], "R_normalized": 0.0}))
    # RA-NLD on the Toybox Breakout fallback (not a paper game): baseline 0.80 > max adversarial 0.53
    _csv(r, "ranld", "ranld_tables", pd.DataFrame(_ranld_rows("Breakout", 0.80, 0.50, 0.40)))
    _csv(r, "ranld", "ranld_vanilla_vs_adversarial", pd.DataFrame({"policy": ["DDQN", "SA-DDQN"], "n_states": [300, 300],
                                                                   "spectral_entropy": [5.0, 6.0], "top1pct_mass": [0.2, 0.1]}))
    # XRL-Bench: CartPole TabularSHAP 0.30 > DeepSHAP 0.20 (not lowest: not reproduced; value 0.30 vs 0.134: not reproduced);
    # LunarLander TabularSHAP lowest (reproduced)
    _csv(r, "xrlbench", "xrl_fidelity_stability", pd.DataFrame(
        {"method": ["TabularSHAP", "DeepSHAP", "SARFA", "PS", "TabularSHAP", "DeepSHAP"],
         "AIM": [0.30, 0.20, 0.50, 0.60, 0.10, 0.20], "AUM": [0.9, 0.8, 0.5, 0.5, 0.7, 0.6],
         "env": ["CartPole-v1"] * 4 + ["LunarLander-v3"] * 2}))
    # saliency benchmark, Table 1 analogue ("mean ± std" strings): Pac-Man Q-val black, occlusion 3.00 is best once the
    # random baseline (5.00) is left out; Adv black, sarfa 0.10 < occlusion 0.20 (not reproduced)
    _csv(r, "saliency_bench", "saliency_bench_insertion", pd.DataFrame(
        {"game": "ALE/MsPacman-v5", "sub_metric": ["Q-val black", "Adv black"], "occlusion": ["3.00 ± 1.00", "0.20 ± 0.10"],
         "sarfa": ["1.00 ± 0.50", "0.10 ± 0.10"], "random": ["5.00 ± 1.00", "0.00 ± 0.10"],
         "paper: occlusion": ["3.08 ± 3.20", "1.23 ± 1.60"]}))
    # time series, Breakout only: at the largest epsilon both intervals lie below 0; DiD non-increasing in epsilon
    _csv(r, "timeseries", "ts_breakout_impacts", pd.DataFrame(
        {"agent": ["a2c", "a2c", "ppo", "ppo"], "shift": ["fgsm eps=0.5/255", "fgsm eps=1/255"] * 2,
         "did": [-1.0, -3.0, -0.5, -2.0], "ci_low": [-2.0, -4.0, -1.5, -3.0], "ci_high": [0.5, -2.0, 0.5, -1.0],
         "pre_gap": 0.0, "placebo": 0.0, "n_seeds": 3}))
    # switching: one donor agent, DiD -0.5 with 0 inside [-2, 1]; one untrained agent, DiD -10 in [-12, -8]
    _csv(r, "switching", "switching_did", pd.DataFrame(
        {"label": ["1 from team 1", "1 untrained"], "did": [-0.5, -10.0], "ci_low": [-2.0, -12.0], "ci_high": [1.0, -8.0],
         "interval": "t", "pre_gap": 0.0, "placebo": 0.0, "control_post_mean": -60.0, "n_seeds": 8}))
    return r


def test_claims_cover_the_five_papers():
    c = sb.CLAIMS
    assert len(c) >= 25 and c.id.is_unique
    assert {"id", "paper", "where", "claim", "paper_value", "measure", "scale_note"} <= set(c.columns)
    counts = c.paper.value_counts()
    assert len(counts) == 5 and counts.min() >= 5, counts
    assert c[["claim", "paper_value", "measure", "scale_note"]].map(lambda s: isinstance(s, str) and len(s) > 0).all().all()


def test_claims_reuse_the_packages_paper_values():
    c = sb.CLAIMS.set_index("id")
    assert c.loc["xrl-cartpole-aim-tabularshap", "paper_value"].startswith("TabularSHAP 0.134")   # xrlbench.paper_results()
    assert "0.7652" in c.loc["ranld-roadrunner-base", "paper_value"]                             # ranld.paper_tables()
    assert c.loc["sal-pacman-advblack-sarfa", "paper_value"] == "sarfa 1.70"                     # saliency_bench Table 1
    t6 = sb.ir_paper_table()
    assert len(t6) == 40 and t6.set_index(["algorithm", "frames"]).loc[("dqn", 10_000_000), "original"] == 0.626


def test_random_policy_R_by_hand():
    assert sb.random_policy_R(2, 2) == pytest.approx(0.5)        # agree w.p. 1/2 (R 1), else 1 bit (R 0)
    assert sb.random_policy_R(2, 3) == pytest.approx(1 / 3)      # agree w.p. 1/3
    assert sb.random_policy_R(4, 1) == pytest.approx(1.0)
    assert sb.random_policy_R(10, 4) == pytest.approx(0.4722, abs=1e-4)   # the paper's untrained A2C/PPO: 0.474, 0.480
    with pytest.raises(ValueError, match="n >= 2"): sb.random_policy_R(1, 4)
    with pytest.raises(ValueError, match="n_actions"): sb.random_policy_R(3, 0)


def test_verdicts_on_a_hand_made_run(run):
    b = sb.score_run(run)
    assert list(b.columns) == sb.BOARD_COLUMNS and len(b) == len(sb.CLAIMS) and set(b.verdict) <= set(sb.VERDICTS)
    v = b.set_index("id").verdict
    want = {
        "ir-untrained-dqn": "reproduced", "ir-untrained-distributional": "not reproduced", "ir-untrained-ppo-random": "reproduced",
        "ir-trained-dqn-drops": "not reproduced",          # 0.98 -> 0.97: a drop of 0.01 < 0.05
        "ir-trained-dqn-1e7": "not comparable",           # no 1e7-frame checkpoint (training length)
        "ir-interventions-small-mean": "not reproduced",  # |-0.27| >= 0.2
        "ranld-base-highest": "reproduced",               # 0.80 > 0.53 (the 'env' rows, which say otherwise, are ignored)
        "ranld-roadrunner-base": "not comparable",        # game: the run has Breakout only
        "ranld-natural-below-base": "not comparable",     # none of the paper's games
        "ranld-spectrum-spread": "reproduced",            # 6.0 > 5.0
        "ranld-adv-concentrated": "not reproduced",       # 0.1 < 0.2
        "ranld-gradnorm-jumpier": "not run",              # the column is absent
        "xrl-cartpole-aim-tabularshap": "not reproduced", "xrl-lunarlander-aim-tabularshap": "reproduced",
        "xrl-cartpole-tabularshap-aim-value": "not reproduced",   # |0.30 - 0.134| > 0.05
        "xrl-cartpole-perturbation-worse": "reproduced",  # min(0.50, 0.60) > max(0.30, 0.20)
        "xrl-flappybird-aim-tabularshap": "not run",      # no FlappyBird rows
        "xrl-breakout-aim-deepshap": "not run",           # no image table
        "sal-pacman-qvalblack-occlusion": "reproduced", "sal-pacman-advblack-sarfa": "not reproduced",
        "sal-breakout-lime-slic": "not comparable",       # game: no Breakout in the benchmark
        "sal-noise-output-layer": "not run",              # no sanity summary
        "ts-breakout-fgsm-lowers-return": "reproduced", "ts-pong-fgsm-lowers-return": "not run", "ts-eps-monotone": "reproduced",
        "ts-pre-identical": "reproduced",
        "sw-one-donor-little": "reproduced", "sw-untrained-large": "reproduced", "sw-three-dramatic": "not comparable",
    }
    got = {k: v[k] for k in want}
    assert got == want
    row = b.set_index("id").loc["ir-untrained-dqn"]
    assert row.ours == "0.980" and row.n == "4 states"
    lo, hi = (float(x) for x in row.interval.split("]")[0].strip("[").split(","))
    assert lo == pytest.approx(0.954, abs=1e-3) and hi == pytest.approx(1.006, abs=1e-3)
    assert "training length" in b.set_index("id").loc["ir-trained-dqn-1e7", "why"]
    assert b.set_index("id").loc["ts-breakout-fgsm-lowers-return", "n"] == "3 seeds"
    sw = b.set_index("id").loc["sw-untrained-large"]
    assert sw.interval == "[-12.00, -8.00] (t)" and sw.n == "8 seeds" and sw.ours == "DiD -10.00 vs donor -0.50"


def test_summary_line_and_plot(run):
    b = sb.score_run(run); c = b.verdict.value_counts()
    line = sb.summary_line(b)
    assert line == (f"demo scale: {c['reproduced']} of {len(b)} claims reproduced, {c['not reproduced']} not reproduced, "
                    f"{c['not comparable']} not comparable at demo scale, {c['not run']} not run")
    ax = sb.plot(b)
    assert isinstance(ax, plt.Axes) and len(ax.patches) == 4 * b.paper.nunique()
    plt.close(ax.figure)
    with pytest.raises(KeyError, match="verdict"): sb.summary_line(b.drop(columns="verdict"))


def test_empty_and_broken_runs_never_crash(tmp_path):
    b = sb.score_run(tmp_path)
    assert (b.verdict == "not run").all() and b.attrs["scale"] == "unknown"
    (tmp_path / "ir").mkdir(); (tmp_path / "ir" / "ir_table.csv").write_text("game,pipeline\nBreakout,dqn\n")
    _csv(tmp_path, "xrlbench", "xrl_fidelity_stability", pd.DataFrame({"method": ["TabularSHAP"], "env": ["CartPole-v1"], "AIM": ["n/a"]}))
    b = sb.score_run(tmp_path).set_index("id")
    assert b.loc["ir-untrained-dqn", "verdict"] == "not run" and "lacks the columns" in b.loc["ir-untrained-dqn", "why"]
    assert b.loc["xrl-cartpole-aim-tabularshap", "verdict"] == "not run"
    with pytest.raises(FileNotFoundError, match="does not exist"): sb.score_run(tmp_path / "nowhere")


def test_paper_scale_from_the_report(tmp_path):
    (tmp_path / "report.html").write_text("<html><body><h1>x</h1><p>Scale: paper. Tables are also saved</p></body></html>")
    rows = _ranld_rows("RoadRunner", 0.75, 0.30, 0.45)   # baseline 0.75 vs 0.7652 +- 0.05: reproduced
    _csv(tmp_path, "ranld", "ranld_tables", pd.DataFrame(rows))
    b = sb.score_run(tmp_path)
    assert b.attrs["scale"] == "paper"
    v = b.set_index("id").verdict
    assert v["ranld-roadrunner-base"] == "reproduced"
    assert v["ranld-roadrunner-adv-vs-natural"] == "not reproduced"   # adversarial mean 0.315 < natural 0.45
    assert v["ranld-roadrunner-cw-lowest"] == "reproduced"            # Carlini&Wagner is the first condition: 0.30
    assert v["ranld-freeway-base"] == "not comparable"


def test_run_scale_from_the_sections_configs(tmp_path):
    "The report is written after the scoreboard is scored: the scale comes from the sections' config.json while report.html does not exist yet."
    import json
    from rlexplain.scoreboard import run_scale
    for k in ("ir", "xrlbench"):
        (tmp_path / k).mkdir(); (tmp_path / k / "config.json").write_text(json.dumps({"job": k, "scale": "demo"}))
    assert run_scale(tmp_path) == "demo"
    (tmp_path / "ranld").mkdir(); (tmp_path / "ranld" / "config.json").write_text(json.dumps({"job": "ranld", "scale": "paper"}))
    assert run_scale(tmp_path) is None      # sections disagree: no scale claimed
    (tmp_path / "report.html").write_text("<p>Scale: paper</p>")
    assert run_scale(tmp_path) is None      # ... not even the report's, which names only the last run's scale
