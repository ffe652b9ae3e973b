"""The second tier (`rlexplain.agent_zoo.agent_tier`, issue 52): `plays_well` on hand-made cards whose answers can be
computed by hand from the published scores (`rlexplain/data/published_scores.csv`), a constant agent, a weak one and a
strong one; entries without a reference get None with a reason, never a silent False; the table refuses bad rows."""
import json

import pandas as pd
import pytest

from rlexplain.agent_zoo import PLAYS_WELL, TIER_COLUMNS, agent_tier, list_zoo, tier_legend
from rlexplain.scores import SCORES_CSV, human_normalised, published_scores, reference_scores

# Breakout in the table: random 1.7, human 31.8, Nature's DQN 401.2 (Mnih et al. 2015, Extended Data Table 2)
R, H, REF = 1.7, 31.8, 401.2


def card(env_id="ALE/Breakout-v5", algo="dqn", mean=5.37, plays=True, random_mean=0.87, seed=0, **gate):
    "A hand-made card: only what `list_zoo` and `agent_tier` read (no weights)."
    slug = env_id.lower().replace("/", "-")
    c = {"id": f"{slug}/{algo}/seed{seed}/1000", "algo": algo, "pipeline": algo, "env_id": env_id, "seed": seed,
         "env_steps": 250, "frames": 1000}
    if plays is not None: c["gate"] = {"mean": mean, "random_mean": random_mean, "plays": plays, "n": 30, **gate}
    return c


def test_the_threshold_is_half_the_reference():
    assert PLAYS_WELL["min_fraction"] == 0.5


def test_constant_agent_does_not_play_well_whatever_its_return():
    "A Freeway agent that presses UP in every state fails the gate (modal share 1) though it scores 0.70 of the reference."
    t = agent_tier(card("ALE/Freeway-v5", "ddqn", mean=22.26, plays=False, random_mean=0.0, modal_share=1.0))
    assert t["reference_fraction"] == pytest.approx(22.26 / 31.8)             # van Hasselt et al. 2016's Double DQN: 31.8
    assert t["human_normalised"] == pytest.approx(22.26 / 29.6)               # random 0, human 29.6
    assert t["plays_well"] is False and t["reason"] == "fails the quality gate"


def test_weak_agent_plays_but_not_well():
    t = agent_tier(card(mean=5.37))
    assert t["plays"] is True and t["plays_well"] is False
    assert t["human_normalised"] == pytest.approx((5.37 - R) / (H - R))      # 0.122
    assert t["reference_fraction"] == pytest.approx((5.37 - R) / (REF - R))  # 0.009
    assert t["random"] == R and t["random_src"] == t["human_src"] == t["reference_src"] == "mnih2015"   # not the gate's 0.87
    assert "0.01 of the reference's gain" in t["reason"] and "< 0.5" in t["reason"]


def test_strong_agent_plays_well():
    t = agent_tier(card(mean=250.0))
    assert t["plays_well"] is True
    assert t["reference_fraction"] == pytest.approx(248.3 / 399.5)           # 0.62
    assert t["human_normalised"] == pytest.approx(248.3 / 30.1)              # 8.25: far above the human, below Nature's DQN
    assert set(t["sources"]) == {"mnih2015"} and t["sources"]["mnih2015"].startswith("Mnih et al. 2015")
    assert agent_tier(card(mean=250.0), min_fraction=0.63)["plays_well"] is False   # the threshold decides


def test_the_fraction_is_the_ratio_of_human_normalised_scores():
    t = agent_tier(card(mean=100.0))
    assert t["reference_fraction"] == pytest.approx(t["human_normalised"] / human_normalised(REF, R, H))


def test_without_a_human_score_random_play_is_the_gates_and_the_threshold_is_inclusive():
    "CartPole: the RL Zoo's DQN returns 500; random play comes from the card's gate (20 here)."
    at = agent_tier(card("CartPole-v1", mean=260.0, random_mean=20.0))
    assert (at["random"], at["random_src"], at["human_normalised"]) == (20.0, "gate", None)
    assert at["reference_fraction"] == 0.5 and at["plays_well"] is True       # (260 - 20) / (500 - 20) = 0.5
    assert agent_tier(card("CartPole-v1", mean=259.0, random_mean=20.0))["plays_well"] is False
    lunar = agent_tier(card("LunarLander-v3", mean=100.0, random_mean=-180.0))   # negative returns: the gain, not half the return
    assert lunar["reference_fraction"] == pytest.approx(280 / (154.382 + 180)) and lunar["plays_well"] is True


@pytest.mark.parametrize("env_id,algo,why", [
    ("toybox/Breakout", "a2c", "IR paper shows its Toybox agents' returns only as curves"),
    ("mpe2/simple_spread_v3", "ppo", "no published team return"),
    ("FlappyBird-v0", "dqn", "no published return for FlappyBird-v0"),
    ("ALE/RoadRunner-v5", "sa-ddqn", "Korkmaz 2024 reports no returns"),
    ("ALE/MsPacman-v5", "ppo", "no published ppo return on ALE/MsPacman-v5"),
])
def test_no_reference_is_none_with_a_reason(env_id, algo, why):
    t = agent_tier(card(env_id, algo, mean=1e6))
    assert t["plays_well"] is None and t["reference_return"] is None and why in t["reason"]
    assert t["reason"].startswith("no reference")


def test_not_gated_is_none_with_a_reason():
    t = agent_tier(card(plays=None))
    assert t["plays"] is None and t["plays_well"] is None and t["reason"].startswith("not gated")


def test_bad_min_fraction_is_refused():
    for bad in (0, -0.1, 1.5):
        with pytest.raises(ValueError, match="min_fraction must be in"): agent_tier(card(), min_fraction=bad)


def test_human_normalised_by_hand_and_its_errors():
    assert human_normalised(31.8, R, H) == pytest.approx(1.0) and human_normalised(R, R, H) == 0.0
    with pytest.raises(ValueError, match="human > random"): human_normalised(1.0, 2.0, 2.0)
    with pytest.raises(ValueError, match="finite"): human_normalised(float("inf"), 0.0, 1.0)


def test_the_table_has_each_game_of_the_issue_with_sources():
    s = published_scores()
    assert (s.source != "").all() and s.key.ne("").all()
    for game in ("Breakout", "Pong", "MsPacman", "SpaceInvaders", "Frostbite", "Freeway", "RoadRunner", "BankHeist"):
        r = reference_scores(f"ALE/{game}-v5", "dqn")
        assert r["random"] is not None and r["human"] > r["random"] and r["reference"] > r["random"], game
        assert r["random_src"] == r["human_src"] == r["reference_src"] == "mnih2015", game
    none = s[s.kind == "none"]
    assert {"toybox/Breakout", "FlappyBird-v0", "mpe2/simple_spread_v3"} <= set(none.env_id) and none.note.str.startswith("no reference").all()


def _table(tmp_path, df):
    p = tmp_path / "scores.csv"; df.to_csv(p, index=False); return p


@pytest.mark.parametrize("edit,match", [
    (lambda d: d.drop(columns="source"), "lacks the columns"),
    (lambda d: d.assign(kind=d.kind.where(d.index > 0, "expert")), "unknown kinds"),
    (lambda d: d.assign(value=d.value.where(d.index > 0, "lots")), "no numbers"),
    (lambda d: d.assign(source=d.source.where(d.index > 0, "")), "without a source"),
    (lambda d: d.assign(primary="True"), "two primary rows"),
])
def test_a_broken_table_is_refused(tmp_path, edit, match):
    d = pd.read_csv(SCORES_CSV, keep_default_na=False, dtype=str)
    with pytest.raises(ValueError, match=match): published_scores(_table(tmp_path, edit(d)))


def test_a_reference_below_random_is_no_usable_reference(tmp_path):
    d = pd.read_csv(SCORES_CSV, keep_default_na=False, dtype=str)
    d.loc[(d.env_id == "ALE/Breakout-v5") & (d.algo == "a2c"), "value"] = "1.0"   # below random play's 1.7
    t = agent_tier(card(algo="a2c", mean=5.0), path=_table(tmp_path, d))
    assert t["plays_well"] is None and t["reason"].startswith("no usable reference")


def _zoo(tmp_path, cards):
    for c in cards:
        slug, algo, seed, frames = c["id"].split("/")
        d = tmp_path / "zoo" / slug / algo / seed / f"{int(frames):010d}"; d.mkdir(parents=True)
        (d / "card.json").write_text(json.dumps(c))
    return tmp_path / "zoo"


def test_list_zoo_and_the_cli_show_the_tier_with_its_sources(tmp_path, capsys):
    from rlexplain.cli import main
    root = _zoo(tmp_path, [card(mean=1.0, plays=False, seed=0), card(mean=5.37, seed=1), card(mean=250.0, seed=2),
                           card("toybox/Breakout", "a2c", mean=10.0, seed=3)])
    z = list_zoo(root).set_index("seed")
    assert z.plays_well.tolist() == [False, False, True, None]
    assert z.reference_return.tolist()[:3] == [REF] * 3 and pd.isna(z.reference_return[3])
    assert z.tier_reason[3].startswith("no reference") and set(TIER_COLUMNS) <= set(z.columns)
    assert z.human_normalised[2] == pytest.approx(248.3 / 30.1)
    legend = tier_legend(z).splitlines()[2:]   # only the sources the table uses: Nature's, and the Toybox card's gate random play
    assert [l.split(":")[0] for l in legend] == ["  mnih2015", "  gate"] and legend[0].startswith("  mnih2015: Mnih et al. 2015")
    assert main(["zoo", "list", "--root", str(root)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[-5:] == list(TIER_COLUMNS) and out[3].split()[-5:] == ["401.2", "mnih2015", "8.25", "mnih2015", "True"]
    assert any(l.startswith("plays_well: plays, and reference_fraction") for l in out)


def test_agent_tier_takes_a_folder(tmp_path):
    root = _zoo(tmp_path, [card(mean=250.0)])
    folder = next(root.rglob("card.json")).parent
    assert agent_tier(folder)["plays_well"] is True and agent_tier(str(folder))["id"] == "ale-breakout-v5/dqn/seed0/1000"
