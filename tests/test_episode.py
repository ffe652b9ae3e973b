"""rlexplain.episode (lesson 32): an explained episode, its movie, and the saliency-vs-attack overlap, on tiny networks and
short episodes whose answers can be checked by hand."""
import dataclasses
import json

import numpy as np
import pytest
import torch
from torch import nn

from rlexplain.core import Policy
from rlexplain.runs import load_result
from rlexplain.envs import Rollout, collect_rollout, make_env
from rlexplain.episode import (EpisodeAttribution, color_scale, explain_episode, play_episode, top_k_mask, top_k_overlap,
                               vulnerability_overlap, write_movie)


class OnePixel(nn.Module):
    "Q = (I[3, 10, 21], 0.5): only one pixel matters (the hand-check network of lesson 30)."
    def forward(self, obs): return torch.stack([obs[:, 3, 10, 21], torch.full_like(obs[:, 0, 0, 0], 0.5)], -1)


class TinyConv(nn.Module):
    "A small conv net over (4, 84, 84) with 4 actions: cheap to explain, and every pixel matters a little."
    def __init__(self):
        super().__init__(); torch.manual_seed(0)
        self.net = nn.Sequential(nn.Conv2d(4, 4, 8, 8), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 10 * 10, 4))
    def forward(self, x): return self.net(x)


@pytest.fixture(scope="module")
def px():
    return Policy.from_module(OnePixel(), (4, 84, 84), device="cpu")


@pytest.fixture(scope="module")
def tiny():
    return Policy.from_module(TinyConv(), (4, 84, 84), n_actions=4, kind="logits", device="cpu")


def _rollout(T=7, value=0.9, episode=None):
    obs = np.zeros((T, 4, 84, 84), np.float32); obs[:, :, 10, 21] = value
    return Rollout(obs, np.zeros(T, np.int64), np.arange(T, dtype=np.float64), np.zeros(T, np.int64) if episode is None else episode, [], "one-pixel")


@pytest.fixture(scope="module")
def breakout_episode(tiny):
    "A 9-step ALE Breakout episode of the tiny net, every 2nd step explained by occlusion (patch 12: 49 occluded images a state)."
    return explain_episode(tiny, "ALE/Breakout-v5", "occlusion", every=2, max_steps=9, seed=1, patch=12)


def test_one_map_per_explained_step_with_its_step_reward_and_return(px):
    ep = explain_episode(px, _rollout(7), "occlusion", every=3, patch=1)
    assert ep.steps.tolist() == [0, 3, 6] and len(ep) == 3
    assert ep.values.shape == (3, 4, 84, 84) and ep.states.shape == (3, 4, 84, 84) and ep.outputs.shape == (3, 2)
    assert ep.rewards.tolist() == [0, 3, 6]
    assert ep.returns.tolist() == [0, 0 + 1 + 2, 0 + 1 + 2 + 3 + 4 + 5]          # the rewards before each step
    assert ep.episode_length == 7 and ep.episode_return == 21
    m = ep.pixels()                                                               # occlusion diff: 0.9 at the pixel, 0 elsewhere
    assert np.allclose(m[:, 10, 21], 0.9) and np.allclose(np.abs(m).sum((1, 2)), 0.9, atol=1e-5)


def test_colour_scale_is_shared_across_the_episode_and_per_frame_only_by_name(px):
    obs = np.zeros((4, 4, 84, 84), np.float32); obs[:, :, 10, 21] = np.array([0.2, 0.4, 0.6, 0.8])[:, None]   # maps of different strength
    ro = Rollout(obs, np.zeros(4, np.int64), np.zeros(4), np.zeros(4, np.int64), [], "one-pixel")
    shared = explain_episode(px, ro, "occlusion", patch=1, percentile=100)
    assert shared.scale == "episode" and np.allclose(shared.color_scale, 0.8)          # one scale: the episode's max |map|
    dm = shared.display_maps()[:, 10, 21]
    assert np.allclose(dm, [0.25, 0.5, 0.75, 1.0])                                     # weak frames stay weak
    per = explain_episode(px, ro, "occlusion", patch=1, percentile=100, scale="frame")
    assert np.allclose(per.color_scale, [0.2, 0.4, 0.6, 0.8]) and np.allclose(per.display_maps()[:, 10, 21], 1.0)
    with pytest.raises(ValueError, match="one colour scale"):
        dataclasses.replace(shared, color_scale=np.array([1, 2, 3, 4.0]))             # 'episode' with unequal scales


def test_color_scale_by_hand():
    m = np.zeros((2, 3, 3)); m[0, 0, 0] = -2.0; m[1, 1, 1] = 8.0
    assert color_scale(m, "episode", 100).tolist() == [8.0, 8.0]
    assert color_scale(m, "frame", 100).tolist() == [2.0, 8.0]
    assert color_scale(np.zeros((2, 3, 3))).tolist() == [1.0, 1.0]


def test_play_episode_takes_collect_rollouts_actions_and_keeps_the_screen(tiny):
    ro, frames = play_episode(tiny, "ALE/Breakout-v5", seed=4, max_steps=8)
    ref = collect_rollout(make_env("ALE/Breakout-v5"), tiny, seed=4, max_steps=8)
    assert np.array_equal(ro.actions, ref.actions) and np.array_equal(ro.obs, ref.obs)
    assert frames.shape == (8, 210, 160, 3) and frames.dtype == np.uint8


def test_movie_has_one_frame_per_explained_step(breakout_episode, tmp_path):
    import imageio
    ep = breakout_episode
    assert ep.steps.tolist() == [0, 2, 4, 6, 8] and ep.frames.shape == (5, 210, 160, 3)
    files = write_movie(ep, tmp_path / "m.mp4", tmp_path / "m.gif", tmp_path / "m.html", fps=5)
    assert imageio.get_reader(files["mp4"], format="FFMPEG").count_frames() == len(ep)
    assert len(imageio.v3.imread(files["gif"], index=None)) == len(ep)
    html = files["html"].read_text()
    assert html.count("data:image/jpeg;base64,") == len(ep) and "<script src" not in html   # offline: frames embedded, no CDN
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.gif", "m.html", "m.mp4"]      # no temporary files left


def test_save_load_round_trip_keeps_every_field(breakout_episode, tmp_path):
    ep = breakout_episode
    back = load_result(ep.save(tmp_path / "ep"))
    assert type(back) is EpisodeAttribution
    for f in dataclasses.fields(ep):
        a, b = getattr(ep, f.name), getattr(back, f.name)
        assert (np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b), f.name
    assert back.action_names == ("NOOP", "FIRE", "RIGHT", "LEFT") and back.output_kind == "logits"
    assert np.allclose(back.pixels(), ep.pixels(), atol=1e-6)


def test_slicing_keeps_every_time_field_aligned(breakout_episode):
    sub = breakout_episode[1:3]
    assert sub.steps.tolist() == [2, 4] and sub.frames.shape[0] == sub.outputs.shape[0] == len(sub.color_scale) == 2
    assert np.array_equal(sub.pixels(), breakout_episode.pixels()[1:3])


@pytest.mark.parametrize("kw, err, match", [
    (dict(method="no_such_method"), LookupError, "unknown explainer"),
    (dict(every=0), ValueError, "every must be >= 1"),
    (dict(max_steps=0), ValueError, "max_steps must be >= 1"),
    (dict(scale="global"), ValueError, "scale|mode must be one of"),
    (dict(percentile=0), ValueError, "percentile"),
    (dict(episode=3), ValueError, "no episode 3"),
])
def test_bad_input_raises_a_clear_error(px, kw, err, match):
    kw = {"method": "occlusion", **kw}
    with pytest.raises(err, match=match): explain_episode(px, _rollout(3), kw.pop("method"), **kw)


def test_tabular_policies_and_non_policies_are_refused():
    tab = Policy.from_module(nn.Linear(4, 2), (4,), device="cpu")
    with pytest.raises(ValueError, match="image"): explain_episode(tab, _rollout(2), "occlusion")
    with pytest.raises(TypeError, match="Policy"): explain_episode(nn.Linear(4, 2), _rollout(2), "occlusion")


def test_top_k_overlap_by_hand():
    a = np.zeros((1, 8, 8)); a[0, :2, :2] = 1
    b = np.zeros((1, 8, 8)); b[0, -2:, -2:] = 1
    c = np.zeros((1, 8, 8)); c[0, 0, :2] = 2; c[0, -1, :2] = 1
    assert top_k_overlap(a, a, 4).tolist() == [1.0]          # identical maps
    assert top_k_overlap(a, b, 4).tolist() == [0.0]          # disjoint top-k sets
    assert top_k_overlap(a, c, 4).tolist() == [0.5]          # two of four shared
    assert top_k_overlap(-a, a, 4).tolist() == [1.0]         # ranked by |value|
    r = np.random.default_rng(0).random((3000, 8, 8))
    assert abs(top_k_overlap(r, a[0], 4).mean() - 4 / 64) < 0.01   # chance: k / P
    assert top_k_mask(np.zeros((2, 8, 8)), 5).sum(1).tolist() == [5, 5]
    with pytest.raises(ValueError, match="k must be in"): top_k_overlap(a, a, 65)


@pytest.mark.filterwarnings("ignore:RA-NLD")   # the one-pixel agent takes one action everywhere (RA-NLD says so, rightly)
def test_vulnerability_overlap_on_the_one_pixel_agent(px, tmp_path):
    "Every reference acts on pixel (10, 21) only, and so does a 1-pixel occlusion: overlap exactly 1 at k = 1."
    obs = _rollout(3).obs
    st = vulnerability_overlap(px, obs, methods={"occlusion": dict(patch=1)}, k=1)
    sm = st.summary()
    assert sm.reference.tolist() == ["FGSM", "PGD", "RA-NLD"] and sm.overlap.tolist() == [1.0] * 3 and sm.n.tolist() == [3] * 3
    assert (sm.random < 0.5).all() and (sm.diff_low <= sm["diff"]).all() and (sm["diff"] <= sm.diff_high).all()
    back = load_result(st.save(tmp_path / "st"))
    assert back.summary().equals(sm)
    with pytest.raises(ValueError, match="at least 2 states"): vulnerability_overlap(px, obs[:1])
    with pytest.raises(LookupError, match="unknown explainer"): vulnerability_overlap(px, obs, methods=("nope",))


def test_cli_explain_episode_errors_are_one_line(capsys, tmp_path):
    from rlexplain.cli import main
    for argv, match in ((["--method", "nope"], "unknown explainer"), (["--steps", "0"], "--steps"),
                        (["--env", "ALE/Seaquest-v5"], "ALE/Seaquest-v5")):
        assert main(["explain-episode", "--out", str(tmp_path / "o"), *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and match in err, err
    assert not (tmp_path / "o").exists()


def test_cli_explain_episode_writes_movie_player_and_result(tmp_path, capsys):
    from rlexplain.cli import main
    out = tmp_path / "ep"
    assert main(["explain-episode", "--env", "ALE/Breakout-v5", "--method", "occlusion", "--steps", "3", "--out", str(out)]) == 0
    assert {p.name for p in out.iterdir()} == {"episode.mp4", "episode.gif", "episode.html", "result", "config.json"}
    ep = EpisodeAttribution.load(out / "result")
    assert len(ep) == 3 and ep.env_id == "ALE/Breakout-v5" and json.loads((out / "result" / "result.json").read_text())["type"] == "EpisodeAttribution"
    cfg = json.loads((out / "config.json").read_text()); assert (cfg["method"], cfg["steps"], cfg["seed"]) == ("occlusion", 3, 0)
    # issue 54.2: another configuration into the same folder is refused, naming the field, and leaves the episode as it was
    before = (out / "result" / "result.json").read_bytes()
    assert main(["explain-episode", "--env", "ALE/Breakout-v5", "--method", "occlusion", "--steps", "3", "--seed", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "another configuration" in err and "seed: 0 -> 1" in err and "--force" in err, err
    assert (out / "result" / "result.json").read_bytes() == before
    assert main(["explain-episode", "--env", "ALE/Breakout-v5", "--method", "occlusion", "--steps", "3", "--out", str(out)]) == 0   # the same: rewritten
    assert main(["explain-episode", "--env", "ALE/Breakout-v5", "--method", "occlusion", "--steps", "2", "--seed", "1", "--out", str(out), "--force"]) == 0
    assert len(EpisodeAttribution.load(out / "result")) == 2 and json.loads((out / "config.json").read_text())["seed"] == 1


def test_cli_explain_episode_with_objects_outlines_them_and_writes_their_shares(tmp_path, capsys):
    """`--objects` replays nothing: the episode is played through `ObjectMasks`, so the masks belong to the explained
    observations; each frame's share of |S| on each object (and its chance level) goes to objects.csv, one row per step
    and object, the movie keeps one frame per step; a game without masks is refused before anything is played."""
    import imageio
    import pandas as pd
    from rlexplain.cli import main
    from rlexplain.objects import OBJECT_READERS
    out = tmp_path / "ep"
    assert main(["explain-episode", "--env", "ALE/Breakout-v5", "--method", "occlusion", "--steps", "6", "--objects", "--out", str(out)]) == 0
    t = pd.read_csv(out / "objects.csv")
    objs = set(OBJECT_READERS["ALE/Breakout-v5"](np.zeros(128, np.uint8), np.zeros((210, 160, 3), np.uint8)))
    assert list(t.columns) == ["step", "object", "share", "chance", "present"] and set(t.object) == objs and len(t) == 6 * len(objs)
    p = t[t.present]
    assert p.share.between(0, 1).all() and p.chance.between(0, 1).all() and t[~t.present].share.isna().all()
    assert (p.groupby("step").share.sum() <= 1.05).all()   # shares of one map over objects that barely overlap: at most the whole
    assert imageio.get_reader(out / "episode.mp4", format="FFMPEG").count_frames() == 6
    assert json.loads((out / "config.json").read_text())["objects"] is True
    assert main(["explain-episode", "--env", "ALE/Breakout-v5", "--method", "occlusion", "--steps", "6", "--out", str(out)]) == 2   # other config
    assert "objects" in capsys.readouterr().err and (out / "objects.csv").exists()                # refused, nothing touched
    assert main(["explain-episode", "--env", "ALE/Breakout-v5", "--method", "occlusion", "--steps", "6", "--out", str(out), "--force"]) == 0
    assert not (out / "objects.csv").exists()                                                     # no table left from the run before
    assert main(["explain-episode", "--env", "toybox/Breakout", "--objects", "--out", str(tmp_path / "tb")]) == 2
    err = capsys.readouterr().err
    assert "no object masks for 'toybox/Breakout'" in err and "ALE/Breakout-v5" in err and not (tmp_path / "tb").exists()


def test_movie_frames_with_objects_draw_outlines_and_refuse_other_lengths(tiny):
    "An outline changes the frame where the object is and nowhere else; masks or shares of another length are refused."
    from rlexplain.episode import MovieFrames
    ep = explain_episode(tiny, "ALE/Breakout-v5", "occlusion", max_steps=3, seed=0, patch=12)
    box = np.zeros((3, *ep.frames.shape[1:3]), bool); box[:, 100:110, 60:80] = True
    plain, drawn = MovieFrames(ep)[1], MovieFrames(ep, objects={"thing": box}, shares={"thing": np.array([0.1, 0.2, 0.3])})[1]
    assert plain.shape == drawn.shape
    with pytest.raises(ValueError, match="expected 3 frames per object"): MovieFrames(ep, objects={"thing": box[:2]})
    with pytest.raises(ValueError, match="expected 3 frames per object"): MovieFrames(ep, shares={"thing": np.zeros(4)})
    assert (MovieFrames(ep, objects={"thing": box})[1] != plain).any()
