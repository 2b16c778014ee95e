#!/bin/sh
# spsim-validate end to end on the CPU transport.
#  1. Closed loop on the virtual clock (a synthetic machine whose links, FLOP rate and HBM
#     bandwidth are known): comm must recover the links in calibration.yaml, compute the
#     efficiencies, and layer — predicting with that calibration — must then match every
#     measured phase of Ulysses and BASP, while its outputs pass the reference check.
#  2. Wall clock: the sweep's measurements are all logged.
#  3. A user mistake is reported clearly, with exit status 2.
#  4. Never hang (where mpirun and an MPI build exist): under `mpirun -np 2`, a process told
#     to fail (SPSIM_VALIDATE_INJECT=1:error:N) or to hang (1:hang:N) inside the measurement
#     loop makes the whole job exit non-zero well within the outer limit, the others
#     naming the process that failed, the watchdog naming the rank and the stuck step.
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

# One vocabulary: the short spellings shared with spsim collective (-b/-e/-f, nccl-tests'
# own) and -o sweep the same sizes into the same place as --min-bytes/--max-bytes/--factor
# and --out/--output. 1 KiB to 16 KiB by 4: 1024, 4096, 16384.
sizes() { grep -o '"bytes": [0-9]*' "$1/measurements.jsonl" | sort -u | tr '\n' ' '; }
run short comm --transport cpu --ranks 4 --ranks-per-node 2 -b 1KiB -e 16KiB -f 4 --iters 1 --warmup 0 -o "$out/short"
run long comm --transport cpu --ranks 4 --ranks-per-node 2 --min-bytes 1KiB --max-bytes 16KiB --factor 4 --iters 1 \
	--warmup 0 --output "$out/long"
run out comm --transport cpu --ranks 4 --ranks-per-node 2 --min-bytes 1KiB --max-bytes 1KiB --iters 1 --warmup 0 \
	--out "$out/outdir"
want='"bytes": 1024 "bytes": 16384 "bytes": 4096 '
[ "$(sizes "$out/short")" = "$want" ] || fail "-b/-e/-f/-o: sizes $(sizes "$out/short"), want $want"
[ "$(sizes "$out/long")" = "$want" ] || fail "--min-bytes/--max-bytes/--factor/--output: sizes $(sizes "$out/long")"
[ "$(sizes "$out/outdir")" = '"bytes": 1024 ' ] || fail "--out: sizes $(sizes "$out/outdir")"

# ---- 3. a mistake: 5 query heads cannot split over 4 ranks
"$exe" layer --transport cpu --ranks 4 --dims 80,5,5,16 --seq 8 --out "$out/bad" >"$out/bad.txt" 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "bad layer: exit $rc, want 2"
grep -q 'query heads do not divide' "$out/bad.txt" || { cat "$out/bad.txt"; fail "bad layer: unclear message"; }
for bad in "--timeout 0" "--timeout x" "--run-timeout -1" "--iters 0"; do
	# shellcheck disable=SC2086
	"$exe" compute --transport cpu $bad >"$out/flag.txt" 2>&1
	rc=$?
	[ "$rc" -eq 2 ] || fail "compute $bad: exit $rc, want 2"
	grep -q "spsim-validate: --" "$out/flag.txt" || { cat "$out/flag.txt"; fail "compute $bad: no sentence naming the flag"; }
done
SPSIM_VALIDATE_INJECT=one:crash "$exe" compute --transport cpu >"$out/inj.txt" 2>&1
rc=$?
[ "$rc" -eq 2 ] && grep -q 'want PROC:error or PROC:hang' "$out/inj.txt" || fail "malformed SPSIM_VALIDATE_INJECT: exit $rc"

# ---- 4. never hang
# One process, no MPI: told to hang at its 2nd agreed step, the whole-run watchdog ends it.
start=$(date +%s)
SPSIM_VALIDATE_INJECT=0:hang:2 timeout 60 "$exe" compute --transport cpu --ranks 1 --model "$models/tiny-gqa.yaml" \
	--seq 16 --sp 8 --micro-batch 2 --iters 1 --warmup 0 --timeout 100 --run-timeout 1 --out "$out/dog" >"$out/dog.txt" 2>&1
rc=$?
[ "$rc" -eq 2 ] || { cat "$out/dog.txt"; fail "watchdog: exit $rc, want 2"; }
[ $(($(date +%s) - start)) -le 20 ] || fail "watchdog: took $(($(date +%s) - start)) s for a 1 s --run-timeout"
grep -q "\[rank 0 on .*\] watchdog: '.*' still running after .*--run-timeout, whole run" "$out/dog.txt" ||
	{ cat "$out/dog.txt"; fail "watchdog: no message naming the rank and step"; }
if command -v mpirun >/dev/null 2>&1 && "$exe" --help | grep -q '(mpi is in this build)'; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
	for mode in error:4 hang:4 hang:1; do
		start=$(date +%s)
		# OpenMPI's own allocations outlive an aborted job: no leak report under the sanitizers.
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" SPSIM_VALIDATE_INJECT=1:$mode \
			timeout 90 mpirun -x SPSIM_VALIDATE_INJECT -x ASAN_OPTIONS -np 2 "$exe" compute --transport cpu \
			--launch mpi --ranks 1 --model "$models/tiny-gqa.yaml" --seq 16 --sp 8 --micro-batch 2 --iters 2 \
			--warmup 0 --timeout 2 --out "$out/inject" >"$out/inject.txt" 2>&1
		rc=$?
		took=$(($(date +%s) - start))
		[ "$rc" -ne 0 ] || { cat "$out/inject.txt"; fail "inject $mode: mpirun exited 0"; }
		[ "$rc" -ne 124 ] || { cat "$out/inject.txt"; fail "inject $mode: still running after 90 s (hung)"; }
		# 2 s per step + the watchdog's grace (10% + 2 s) + start-up: far below the limit
		[ "$took" -le 45 ] || fail "inject $mode: took $took s"
		case $mode in
		error:*) want='process 1 failed there' ;;
		hang:*) want='\[rank [01] on .*\] watchdog: .* still running after' ;;
		esac
		grep -q "$want" "$out/inject.txt" || { cat "$out/inject.txt"; fail "inject $mode: no message naming the rank and step"; }
	done
else
	echo "never-hang check skipped: no mpirun or no MPI in this build"
fi
echo "PASS"
