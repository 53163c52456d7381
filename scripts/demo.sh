#!/usr/bin/env bash
# The main job on the embedded local defaults: start the services as local processes,
# index the sample folder, ask a question and print the cited answer.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
. .venv/bin/activate
hindsight up
hindsight index samples
hindsight ask "${1:-What is my sourdough starter called and how often is it fed?}"
echo
echo "The stack is still running: ask more with 'hindsight ask \"...\"', stop it with 'hindsight down'."
