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
stamp=.venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)
if [ ! -f "$stamp" ]; then
  python -m pip install --quiet --upgrade pip
  # The CPU build of PyTorch first: an unpinned torch would pull a multi-GB CUDA build.
  python -m pip install --quiet "torch==${TORCH_VERSION:-2.13.0}"
  python -m pip install --quiet -e ".[dev]"
  rm -f .venv/.installed-*
  touch "$stamp"
fi
export HF_HUB_OFFLINE=1
