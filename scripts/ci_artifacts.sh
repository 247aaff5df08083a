#!/usr/bin/env bash
# Runs the smoke sweep, transfers its winner to width 4096, compares the sweep with the committed baseline
# (tests/baselines/smoke) and collects what a reviewer wants to see (plots, CSVs, summary, transferred config,
# compare.md / compare.png) in artifacts/. Used by .ci/run and the GitHub workflow.
#
#   bash scripts/ci_artifacts.sh                    # CI: sweep, compare with the baseline, artifacts/
#   bash scripts/ci_artifacts.sh --update-baseline  # after a deliberate model change: the sweep becomes the baseline
#
# The smoke sweep runs with 2 torch threads wherever it runs, so a CPU run reproduces the baseline's numbers
# exactly for the same torch build and CPU instruction set (docs/compare.md, "In CI").
set -euo pipefail
cd "$(dirname "$0")/.."
update=false
case "${1:-}" in
  "") ;;
  --update-baseline) update=true ;;
  *) echo "error: unknown option '$1'; use --update-baseline or nothing" >&2; exit 2 ;;
esac
run=runs/ci-smoke
baseline=tests/baselines/smoke
rm -rf "$run" artifacts
mutransfer sweep smoke --out "$run" --threads 2
if $update; then
  mkdir -p "$baseline"
  cp "$run"/config.yaml "$run"/trials.csv "$run"/curves.csv "$run"/summary.json "$baseline"/
  echo "updated $baseline from $run"
  exit 0
fi
mutransfer transfer --width 4096 --from "$run"
mutransfer plot "$run"
mutransfer compare "$baseline" "$run"
mkdir -p artifacts
cp "$run"/*.png "$run"/trials.csv "$run"/curves.csv "$run"/summary.json "$run"/transfer_w4096.yaml \
   "$run"/compare.md "$run"/compare.json artifacts/
ls -l artifacts
