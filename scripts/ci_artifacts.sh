#!/usr/bin/env bash
# Runs the smoke sweep, transfers its winner to width 4096 and collects what a reviewer wants to see
# (plots, CSVs, summary, transferred config) in artifacts/. Used by .ci/run and the GitHub workflow.
set -euo pipefail
cd "$(dirname "$0")/.."
run=runs/ci-smoke
rm -rf "$run" artifacts
mutransfer sweep smoke --out "$run"
mutransfer transfer --width 4096 --from "$run"
mutransfer plot "$run"
mkdir -p artifacts
cp "$run"/*.png "$run"/trials.csv "$run"/curves.csv "$run"/summary.json "$run"/transfer_w4096.yaml artifacts/
ls -l artifacts
