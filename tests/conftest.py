"""Shared fixtures and the test session's machine-independent settings.

- The test data in ../shared (skipped when absent) and a quiet matplotlib backend.
- One thread per process (torch, OpenMP, BLAS): `run.sh test` runs pytest on one pytest-xdist worker per core, and a test's
  outcome must not depend on how many cores the machine has (issue 28.3-4).
- Fixed compute settings (contiguous layout, batch 256, one worker thread) instead of a calibration timed on this
  machine: which batch and layout a test ran with no longer depends on the machine's load at the time, no test pays for
  a calibration (2-3 CPU seconds per network and load condition), and tests never write `~/.cache/rlexplain`. The tests of
  the calibration itself remove these variables (`monkeypatch.delenv`) and use their own cache folder.
  Any of these variables set before pytest starts is kept (to run the suite at other settings, say `RLEXPLAIN_BATCH=64`).
- Slow tests first (`pytest_collection_modifyitems`), so that with `-n 2` neither worker is left alone with a long test at
  the end.
"""
import atexit
import os
import shutil
import tempfile
from pathlib import Path

_FIXED = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
          "RLEXPLAIN_LAYOUT": "contiguous", "RLEXPLAIN_BATCH": "256", "RLEXPLAIN_WORKERS": "1"}
for _k, _v in _FIXED.items(): os.environ.setdefault(_k, _v)   # before torch is imported (it reads OMP_NUM_THREADS once)
if "RLEXPLAIN_CACHE" not in os.environ:
    os.environ["RLEXPLAIN_CACHE"] = _cache = tempfile.mkdtemp(prefix="rlexplain-test-cache-")
    atexit.register(shutil.rmtree, _cache, ignore_errors=True)
os.environ.setdefault("RLEXPLAIN_SCALE", "demo")

import matplotlib
import pytest

matplotlib.use("Agg")

# Property tests draw the same examples on every run (CI included): a failure is reproducible, never a coin flip.
# Explore new examples locally with HYPOTHESIS_PROFILE=explore; pin what they find as a regression test.
from hypothesis import settings as _hyp_settings
_hyp_settings.register_profile("ci", derandomize=True, database=None)
_hyp_settings.register_profile("explore", derandomize=False)
_hyp_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

SHARED = Path(__file__).resolve().parents[1].parent / "shared"

# Tests that each take >= 5 CPU seconds (measured with `--durations` and per-test CPU, issue 28.3), in falling order.
# Only the order changes: every test still runs. A name that no longer exists is ignored.
SLOW_FIRST = (
    "test_cli.py::test_help_explains_every_option",                                       # ~39 s: one CLI process per command
    "test_xrlbench.py::test_image_benchmark_on_the_zoo_agent",                            # ~27 + 22 s
    "test_ddqn.py::test_ddqn_and_sa_ddqn_zoo_round_trip",                                 # ~15 s: trains two agents
    "test_core.py::test_a_killed_run_resumes_to_the_uninterrupted_results_bit_for_bit",   # ~13 s: three processes
    "test_switching.py::test_study_on_the_zoo_teams",                                     # ~13 s
    "test_ranld.py::test_ranld_tables_and_comparison_on_zoo_ddqn",                        # ~10 s
    "test_cli.py::test_timeseries_report_assembly_lives_in_the_study_module",             # ~9 s
    "test_core.py::test_run_jobs_on_dask_local_cluster",                                  # ~8 s
    "test_timeseries.py::test_zoo_actor_critic_agents_repeat_on_ale",                     # ~5 s each
)


def _slow_rank(item) -> int:
    nodeid = item.nodeid.split("/")[-1]
    for i, prefix in enumerate(SLOW_FIRST):
        if nodeid == prefix or nodeid.startswith(prefix + "["): return i
    return len(SLOW_FIRST)


def pytest_collection_modifyitems(session, config, items):
    "Slow tests first, then the rest in their usual order (a stable sort: the same order on every xdist worker)."
    items.sort(key=_slow_rank)


@pytest.fixture(scope="session")
def shared_agents() -> Path:
    "The folder of agents trained by others (RL-Zoo, XRL-Bench); skip the test when it is absent."
    p = SHARED / "agents"
    if not p.exists():
        pytest.skip("../shared/agents is absent (test data, not a dependency)")
    return p
