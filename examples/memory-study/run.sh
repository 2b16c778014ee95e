#!/usr/bin/env bash
# Long-context memory study: the longest sequence Llama-3.1-8B fits on DGX H100 nodes at 8, 32
# and 64 GPUs, per sequence-parallel strategy and memory technique set (spsim max-seq
# --techniques table; docs/model.md §6a). Writes table.txt, table.json and table.csv here.
#   examples/memory-study/run.sh        (spsim from ./build; set SPSIM to use another)
set -euo pipefail
cd "$(dirname "$0")/../.."
SPSIM=${SPSIM:-./build/src/spsim}
DIR=examples/memory-study
ARGS=(--model llama-3.1-8b --platform dgx-h100 --zero 3 --micro-batch 1
      --strategy ring,usp,ulysses --techniques table)
: > "$DIR/table.txt"
printf '[' > "$DIR/table.json"
rm -f "$DIR/table.csv"
sep=""
for nodes in 1 4 8; do
  "$SPSIM" max-seq "${ARGS[@]}" --nodes "$nodes" 2>/dev/null >> "$DIR/table.txt"
  echo >> "$DIR/table.txt"
  printf '%s' "$sep" >> "$DIR/table.json"
  "$SPSIM" max-seq "${ARGS[@]}" --nodes "$nodes" --format json 2>/dev/null >> "$DIR/table.json"
  sep=","
  if [ -f "$DIR/table.csv" ]; then
    "$SPSIM" max-seq "${ARGS[@]}" --nodes "$nodes" --format csv 2>/dev/null | tail -n +2 >> "$DIR/table.csv"
  else
    "$SPSIM" max-seq "${ARGS[@]}" --nodes "$nodes" --format csv 2>/dev/null > "$DIR/table.csv"
  fi
done
printf ']\n' >> "$DIR/table.json"
cat "$DIR/table.txt"
