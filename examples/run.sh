#!/usr/bin/env bash
# Runs every example sweep and refreshes the figures shown in examples/README.md.
#   examples/run.sh                      (spsim from ./build; set SPSIM to use another)
# The rows go to a temporary directory (OUT to keep them); figures to examples/figures/
# (and the strategies study's rows, examples/figures/strategies/points.csv).
set -euo pipefail
cd "$(dirname "$0")/.."
SPSIM=${SPSIM:-./build/src/spsim}
OUT=${OUT:-$(mktemp -d)}
for name in microbatch seqlen models whatif strategies cp-kernels; do
  "$SPSIM" sweep "examples/$name.yaml" -o "$OUT/$name" --force --quiet --plot "$OUT/$name/figures"
  mkdir -p "examples/figures/$name"
  rm -f "examples/figures/$name"/*.png
  cp "$OUT/$name"/figures/*.png "examples/figures/$name/"
  if [ "$name" = strategies ]; then # the study's numbers, quoted in examples/README.md
    cp "$OUT/$name/points.csv" "examples/figures/$name/points.csv"
  fi
  echo "$name: $(($(wc -l < "$OUT/$name/points.csv") - 1)) points, figures in examples/figures/$name"
done
echo "rows in $OUT"
