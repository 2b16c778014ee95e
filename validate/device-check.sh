#!/bin/sh
# validate/device-check.sh [OUTDIR]: the GPU checks of validate mode on one GPU, all under
# ONE global deadline of 8 minutes (DEADLINE seconds; every step's limit is cut to what is
# left of it, so the script ends in time even when a step hangs):
#   1. build (CUDA for this GPU's architecture only, to build fast; cuDNN when found)
#   2. the kernels against their CPU references (cuDNN and WMMA attention forward and
#      backward up to 8K tokens with GQA, layout permutes, cuBLAS GEMMs)
#   3. compute: llama-3.1-8b's GEMMs, attention forward/backward and layout copies at 8K
#      and 32K tokens, each measured (median of 20 calls, p10/p90, clocks) beside spsim's
#      uncalibrated prediction -> calibration.yaml
#   4. one llama-3.1-8b layer (K = 1) at 8K and 32K, checked, measured vs the uncalibrated
#      prediction, then at 8K again predicted with the calibration of step 3
#   5. the validate orchestration on the GPU (NCCL transport) against its unpartitioned
#      reference (last: the deadline cuts it before the measurements)
# Results go to OUTDIR (default validate/results/<date>-<gpu>/): calibration.yaml,
# report.md (every table), measurements.jsonl, table.md (measured vs predicted, one row
# per kernel and per layer), commands.txt (the exact command lines), nvidia-smi.txt, one
# log per step and summary.txt. Every step runs even when an earlier one failed (except
# after a failed build); the exit status is the number of failed steps. Environment:
# SPSIM_PLATFORM (default hgx-h200): the platform whose peaks and efficiencies give the
# predicted side; BUILD_DIR (default <source>/build-device); DEADLINE (default 480).
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
t0=$(date +%s)
deadline=$((t0 + ${DEADLINE:-480}))
build=${BUILD_DIR:-$src/build-device}
platform=${SPSIM_PLATFORM:-hgx-h200}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr -c 'A-Za-z0-9.\n-' '-' | tr -s '-')
out=${1:-$src/validate/results/$(date -u +%Y-%m-%d)-${gpu:-unknown-gpu}}
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
failed=0
: >"$out/summary.txt"
: >"$out/commands.txt"

say() { echo "[device-check +$(($(date +%s) - t0))s] $*" | tee -a "$out/summary.txt"; }

# step NAME SECONDS CMD...: runs CMD with a limit of SECONDS, cut to what is left of the
# global deadline (less 10 s for the table), its output in OUTDIR/NAME.log.
step() {
	name=$1 limit=$2
	shift 2
	left=$((deadline - $(date +%s) - 10))
	[ "$limit" -gt "$left" ] && limit=$left
	if [ "$limit" -le 5 ]; then
		say "$name: SKIPPED, the 8-minute deadline is spent"
		failed=$((failed + 1))
		return 1
	fi
	say "$name (limit ${limit}s): $*"
	echo "$*" >>"$out/commands.txt"
	s=$(date +%s)
	timeout --signal=TERM --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
	rc=$?
	tail -n 25 "$out/$name.log"
	if [ "$rc" -eq 0 ]; then
		say "$name: ok ($(($(date +%s) - s)) s)"
	else
		[ "$rc" -eq 124 ] && say "$name: TIMED OUT after $limit s"
		say "$name: FAILED (exit $rc, $(($(date +%s) - s)) s; see $out/$name.log)"
		failed=$((failed + 1))
	fi
	return "$rc"
}

# ---- prerequisites
missing=""
for tool in meson ninja nvcc pkg-config timeout; do
	command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/local/cuda/bin/$tool" ] || missing="$missing $tool"
done
for pc in yaml-0.1 jansson; do
	pkg-config --exists "$pc" 2>/dev/null || missing="$missing $pc(pkg-config)"
done
if [ -n "$missing" ]; then
	say "missing:$missing (Debian: apt-get install meson ninja-build pkg-config libyaml-dev libjansson-dev check;"
	say "CUDA toolkit with nvcc, cuBLAS, NCCL and cuDNN 9 under /usr/local/cuda)"
	exit 1
fi
if command -v nvidia-smi >/dev/null 2>&1; then
	nvidia-smi >"$out/nvidia-smi.txt" 2>&1
	say "GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader 2>/dev/null | head -1)"
fi

# Build only this GPU's architecture (compute capability, e.g. 9.0 -> 90).
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
case "$arch" in
'' | *[!0-9]*) arch=90 ;;
esac
export PATH="/usr/local/cuda/bin:$PATH"
export SPSIM_DATA_DIR="$src"
jobs=$(nproc 2>/dev/null || echo 4)

# ---- 1. build
if [ -f "$build/build.ninja" ]; then
	setup="meson setup --reconfigure"
else
	setup="meson setup"
fi
if ! step build 240 sh -c "$setup '$build' '$src' -Dcuda=enabled -Dgpu_archs=$arch -Dbuildtype=release \
	-Dsimgrid=disabled -Dtests=disabled && ninja -C '$build' -j $jobs kernels/test_kernels_gpu \
	validate/spsim-validate validate/test_validate_gpu"; then
	say "build failed: nothing else can run"
	exit 1
fi
grep -i 'cuDNN fused attention' "$out/build.log" | tail -1 | sed 's/^ */build: /' | tee -a "$out/summary.txt"
exe="$build/validate/spsim-validate"

# ---- 2. kernels against the CPU references (the 8K reference dominates: about a minute)
step kernels 120 "$build/kernels/test_kernels_gpu"

# ---- 3. compute: llama-3.1-8b, one GPU, 8K and 32K tokens, measured vs predicted
step compute 90 "$exe" compute --model llama-3.1-8b --seq 8192,32768 --micro-batch 1 --sp 1 \
	--platform "$platform" --warmup 3 --iters 20 --timeout 60 --out "$out"

# ---- 4. one layer at 8K and 32K vs the uncalibrated prediction, then 8K calibrated
for s in 8192 32768; do
	step "layer-$s" 60 "$exe" layer --model llama-3.1-8b --seq "$s" --micro-batch 1 --strategy basp \
		--platform "$platform" --warmup 2 --iters 5 --timeout 60 --out "$out"
done
if [ -f "$out/calibration.yaml" ]; then
	step layer-8192-calibrated 40 "$exe" layer --model llama-3.1-8b --seq 8192 --micro-batch 1 --strategy basp \
		--platform "$platform" --calibration "$out/calibration.yaml" --warmup 2 --iters 5 --timeout 60 --out "$out"
fi

# ---- 5. the orchestration on the GPU (NCCL transport, one GPU: K = 1 groups); last, so
# the deadline cuts it before the measurements
step orchestration 60 "$build/validate/test_validate_gpu"

# ---- the measured-vs-predicted table, from measurements.jsonl
if [ -f "$out/measurements.jsonl" ]; then
	awk -v platform="$platform" '
	function num(k,   m) { if (match($0, "\"" k "\": [-0-9.e+]+")) { m = substr($0, RSTART, RLENGTH); sub(/.*: /, "", m); return m + 0 } return -1 }
	function str(k,   m) { if (match($0, "\"" k "\": \"[^\"]*\"")) { m = substr($0, RSTART, RLENGTH); sub(/^[^:]*: "/, "", m); sub(/"$/, "", m); return m } return "" }
	function row(what, impl, m, p) {
		ps = (p > 0) ? sprintf("%.4f", p * 1e3) : "-"
		es = (p > 0 && m > 0) ? sprintf("%+.0f%%", 100 * (p - m) / m) : "-"
		printf "| %-38s | %-13s | %11.4f | %12s | %8s |\n", what, impl, m * 1e3, ps, es
	}
	BEGIN {
		print "Measured on one GPU vs spsim'"'"'s prediction (" platform "; uncalibrated unless the row says so)."
		print "Error = (predicted - measured) / measured.\n"
		print "| kernel / phase                         | implementation | measured ms | predicted ms |    error |"
		print "|----------------------------------------|---------------|-------------|--------------|----------|"
	}
	/"kind": "compute"/ { row(str("name") " S=" num("seq"), str("kernel"), num("time_s"), num("predicted_s")) }
	/"kind": "layer_phase"/ {
		# one run per 30 phases, starting at qkv_proj; a repeated S is the calibrated rerun
		if (str("phase") == "qkv_proj") {
			runs++; S = num("S")
			label[runs] = "layer S=" S (seen[S]++ ? " calibrated" : "")
		}
		pr = num("predicted_s"); if (pr < 0) pr = 0  # -1: no prediction
		kind = ""
		if (match($0, /"kind": "(gemm|attention|memory|comm)"/)) { kind = substr($0, RSTART + 9, RLENGTH - 10) }
		k = runs "|" kind; m[k] += num("time_s"); p[k] += pr
		tm[runs] += num("time_s"); tp[runs] += pr
	}
	END {
		for (r = 1; r <= runs; r++) {
			for (c = 1; c <= 4; c++) {
				kind = c == 1 ? "gemm" : c == 2 ? "attention" : c == 3 ? "memory" : "comm"
				k = r "|" kind
				if (k in m && m[k] > 0) row(label[r] " " kind, "", m[k], p[k])
			}
			row(label[r] " total (fwd+bwd)", "", tm[r], tp[r])
		}
	}' "$out/measurements.jsonl" >"$out/table.md" 2>/dev/null && say "table: $out/table.md"
fi

say "done in $(($(date +%s) - t0)) s, $failed step(s) failed; results in $out"
exit "$failed"
