#!/bin/sh
# spsim-validate end to end on the CPU transport.
#  1. Closed loop on the virtual clock (a synthetic machine whose links, FLOP rate and HBM
#     bandwidth are known): comm must recover the links in calibration.yaml, compute the
#     efficiencies, and layer — predicting with that calibration — must then match every
#     measured phase of Ulysses and BASP, while its outputs pass the reference check.
#  2. Wall clock: the sweep's measurements are all logged.
#  3. A user mistake is reported clearly, with exit status 2.
# usage: cli_test.sh SPSIM_VALIDATE_EXE  (SPSIM_DATA_DIR must point at the source tree)
set -u
exe=$1
out=$(mktemp -d "${TMPDIR:-/tmp}/spsim-validate-cli.XXXXXX")
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run() { # run NAME ARGS...: the command's output in $out/NAME.txt
	name=$1
	shift
	"$exe" "$@" >"$out/$name.txt" 2>&1 || { cat "$out/$name.txt"; fail "$name exited $?"; }
}
models=$(cd "$(dirname "$0")" && pwd)/testdata
clock=3us,150GB/s,10us,40GB/s,100TFLOPS,2TB/s
v="$out/virtual"

# ---- 1. closed loop
run comm comm --transport cpu --ranks 8 --ranks-per-node 4 --max-bytes 16MiB --factor 4 --iters 1 --warmup 0 \
	--no-zero --cpu-clock $clock --platform hgx-h200 --out "$v"
for want in 'latency: 3us' 'bandwidth: 150GB/s' 'latency: 10us' 'bandwidth: 40GB/s'; do
	grep -q "$want" "$v/calibration.yaml" || { cat "$v/calibration.yaml"; fail "comm: calibration lacks '$want'"; }
done
run compute compute --transport cpu --ranks 1 --model "$models/tiny-gqa.yaml" --seq 16 --sp 8 --micro-batch 2 --iters 1 \
	--warmup 0 --cpu-clock $clock --platform hgx-h200 --out "$v"
# 100 TFLOP/s of hgx-h200's 989: 0.1011...; 2 TB/s of its 4.8 TB/s: 0.4166...
grep -q 'gemm: 0.1011' "$v/calibration.yaml" || fail "compute: gemm efficiency"
grep -q 'attention: 0.1011' "$v/calibration.yaml" || fail "compute: attention efficiency"
grep -q 'memory: 0.4166' "$v/calibration.yaml" || fail "compute: memory efficiency"
grep -q 'latency: 3us' "$v/calibration.yaml" || fail "compute: merging dropped the links"
run layer layer --transport cpu --ranks 8 --ranks-per-node 4 --model "$models/tiny-gqa.yaml" --seq 16 --micro-batch 2 \
	--iters 1 --warmup 0 --cpu-clock $clock --platform hgx-h200 --calibration "$v/calibration.yaml" --out "$v"
[ "$(grep -c 'run: PASS' "$out/layer.txt")" -eq 2 ] || fail "layer: want PASS for ulysses and basp"
[ "$(grep -c '"kind": "layer_phase"' "$v/measurements.jsonl")" -eq 60 ] || fail "layer: want 2 x 30 phases"
awk '/"kind": "layer_phase"/ {
	match($0, /"time_s": [^,]*/); m = substr($0, RSTART + 10, RLENGTH - 10) + 0
	match($0, /"predicted_s": [^,}]*/); p = substr($0, RSTART + 15, RLENGTH - 15) + 0
	match($0, /"phase": "[^"]*"/); ph = substr($0, RSTART, RLENGTH)
	n++
	if (p < 0 || m <= 0) { print "no prediction or time for " ph; bad++; next }
	if ((p - m) / m > 1e-3 || (m - p) / m > 1e-3) { print ph ": measured " m " predicted " p; bad++ }
} END { if (n != 60 || bad) exit 1 }' "$v/measurements.jsonl" || fail "layer: measured and predicted differ on the model's own machine"

# ---- 2. wall clock
run wall comm --transport cpu --ranks 8 --ranks-per-node 4 --max-bytes 64KiB --factor 4 --iters 2 --warmup 1 \
	--out "$out/wall"
[ "$(grep -c '"kind": "comm",' "$out/wall/measurements.jsonl")" -eq 24 ] ||
	fail "comm: want 6 collective/group pairs x 4 sizes logged"

# ---- 3. a mistake: 5 query heads cannot split over 4 ranks
"$exe" layer --transport cpu --ranks 4 --dims 80,5,5,16 --seq 8 --out "$out/bad" >"$out/bad.txt" 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "bad layer: exit $rc, want 2"
grep -q 'query heads do not divide' "$out/bad.txt" || { cat "$out/bad.txt"; fail "bad layer: unclear message"; }
echo "PASS"
