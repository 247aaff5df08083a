#!/usr/bin/env bash
# A trainer in no particular language: a mutransfer sweep runs it as each trial's command
# (sweeps/shell_trainer.yaml) with the trial's values as arguments, and reads back the result.json it writes.
# It stands in for any program: its "loss" is a bowl in log2(lr) with its minimum at log2(lr) = -6 at every
# width, a little seed noise, and divergence past log2(lr) = -2. Replace the awk line with your training run.
#
#   bash shell_trainer.sh --lr 0.01 --width 64 --seed 0 --out DIR
set -euo pipefail
lr="" width="" seed=0 out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --lr) lr="$2"; shift 2 ;;
    --width) width="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$lr" ] && [ -n "$width" ] && [ -n "$out" ] || { echo "usage: $0 --lr LR --width W --seed S --out DIR" >&2; exit 2; }
awk -v lr="$lr" -v width="$width" -v seed="$seed" 'BEGIN {
  x = log(lr) / log(2)
  srand(seed * 7919 + width)
  noise = 0.004 * (rand() - 0.5)
  if (x > -2) { printf "{\"val_loss\": null, \"diverged\": true}\n"; exit }
  final = 2.0 + 0.05 * (x + 6) ^ 2 + 0.3 * 64 / width + noise
  printf "{\"val_loss\": %.6f, \"steps\": 100, \"curve\": [[50, %.6f], [100, %.6f]]}\n", final, final + 0.4, final
}' > "$out/result.json.tmp"
mv "$out/result.json.tmp" "$out/result.json"
echo "lr $lr width $width seed $seed: $(cat "$out/result.json")"
