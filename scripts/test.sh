#!/usr/bin/env bash
# Install what the tests need, then run the whole suite (extra arguments go to pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
. .venv/bin/activate
python -m pytest "$@"
