#!/usr/bin/env bash
# The README's two quick-start commands:
#   bash run.sh demo   install everything into .venv, run every method at demo scale, write runs/demo/report.html and runs/demo/docs/
#   bash run.sh test   install everything into .venv, run nbdev_test on every notebook and pytest on tests/, each on
#                      $WORKERS processes (both always run; the exit code is non-zero if either failed). nbdev_test skips
#                      the cells marked `#| slow` (the lessons' demo-scale experiments; tests/ runs the same code at small
#                      sizes): SLOW=1 bash run.sh test runs them too (nbdev_test --flags slow, tens of minutes on 2 cores)
# and the lessons in JupyterLab:
#   bash run.sh lab    install, then start JupyterLab on nbs/ without opening a browser (works headless); it prints the URL
# Environment: PYTHON (default python3.11), RLEXPLAIN_SCALE (demo|paper), WORKERS (default 2), OUT (default runs/demo),
#   LAB_IP / LAB_PORT (default 127.0.0.1 / 8888), SKIP_INSTALL=1 (use .venv as it is), SLOW=1 (test: the #| slow cells too).
set -euo pipefail
cd "$(dirname "$0")"
export MPLBACKEND=Agg PYTHONHASHSEED=0
PY=${PYTHON:-$(command -v python3.11 || command -v python3)}
WORKERS=${WORKERS:-2}

install() {
  if [ "${SKIP_INSTALL:-0}" = 1 ] && [ -x .venv/bin/python ]; then return 0; fi
  "$PY" -c 'import sys; sys.exit(0 if sys.version_info[:2] >= (3, 11) else "rlexplain needs Python >= 3.11; set PYTHON=/path/to/python3.11")'
  [ -x .venv/bin/python ] || "$PY" -m venv .venv
  local stamp=.venv/.rlexplain-installed
  if [ ! -f "$stamp" ] || [ settings.ini -nt "$stamp" ] || [ setup.py -nt "$stamp" ]; then
    echo "[run.sh] installing into .venv (torch 2.13.0 CPU first, then rlexplain with its dev tools) ..."
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q torch==2.13.0
    .venv/bin/python -m pip install -q -e ".[dev]"
    .venv/bin/python -m pip check
    touch "$stamp"
  fi
}

case "${1:-}" in
  demo)
    install
    .venv/bin/rlexplain demo --out "${OUT:-runs/demo}" --docs --workers "$WORKERS"
    ;;
  test)
    install
    # both suites run even when the first fails; the command fails if either did (pytest's exit 5, no tests collected, too).
    # pytest runs on $WORKERS pytest-xdist processes (worksteal: an idle worker takes queued tests from a busy one); each
    # runs one thread (tests/conftest.py), so 2 workers use the 2 cores without oversubscribing them.
    xdist=(); if .venv/bin/python -c 'import xdist' 2>/dev/null; then xdist=(-n "$WORKERS" --dist worksteal)
    else echo "[run.sh] pytest-xdist is not installed (dev extras): pytest runs in one process" >&2; fi
    slow=(); case "${SLOW:-0}" in 1) slow=(--flags slow) ;; 0) ;;
      *) echo "[run.sh] SLOW must be 1 (run the lessons' #| slow cells too) or 0; got '$SLOW'" >&2; exit 2 ;; esac
    nb=0; .venv/bin/nbdev_test --n_workers "$WORKERS" --timing "${slow[@]}" || nb=$?
    py=0; .venv/bin/python -m pytest -q "${xdist[@]}" tests || py=$?
    if [ "$nb" != 0 ] || [ "$py" != 0 ]; then
      echo "[run.sh] FAILED: nbdev_test exit $nb, pytest exit $py (5 = no tests collected)" >&2
      exit 1
    fi
    echo "[run.sh] passed: nbdev_test and pytest"
    ;;
  lab)
    install
    root=(); [ "$(id -u)" = 0 ] && root=(--allow-root)
    echo "[run.sh] JupyterLab on nbs/: open the http://... URL printed below (Ctrl-C stops it)"
    exec .venv/bin/jupyter lab --no-browser --notebook-dir=nbs --ip="${LAB_IP:-127.0.0.1}" --port="${LAB_PORT:-8888}" "${root[@]}"
    ;;
  *)
    echo "usage: bash run.sh demo|test|lab" >&2; exit 2
    ;;
esac
