# Sourced by scripts/run and scripts/test: create .venv and install the project once (idempotent).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# shellcheck disable=SC1091
. .venv/bin/activate
# The stamp hashes both pyproject files: a change to either installs again.
stamp=.venv/.installed-$(cat pyproject.toml client/pyproject.toml | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ]; then
  python -m pip install --quiet --upgrade pip
  # The CPU build of PyTorch first: an unpinned torch would pull a multi-GB CUDA build.
  python -m pip install --quiet "torch==${TORCH_VERSION:-2.13.0}"
  python -m pip install --quiet -e ".[dev]"
  # The Python client for pipelines (client/: Django-free, its own package), which tests/integration uses.
  python -m pip install --quiet -e client
  rm -f .venv/.installed-*
  touch "$stamp"
fi
export HF_HUB_OFFLINE=1
