#!/bin/sh
# validate/device-check.sh [OUTDIR]: the GPU checks of validate mode on one GPU, in under
# 8 minutes on an H200:
#   1. build (CUDA for this GPU's architecture only, to build fast)
#   2. the CUDA kernels against their CPU references (attention forward/backward with GQA,
#      layout permutes, cuBLAS GEMMs)
#   3. the validate orchestration on the GPU (NCCL transport) against its unpartitioned
#      reference
#   4. compute calibration for llama-3.1-8b at 8K and 32K tokens
#   5. the single-GPU layer (K = 1), checked, measured vs predicted
# Results go to OUTDIR (default: $OUT, else ./device-check-out): calibration.yaml,
# report.md, measurements.jsonl, one log per step, and summary.txt. Every step runs even
# when an earlier one failed (except after a failed build); the exit status is the number
# of failed steps. Environment: SPSIM_PLATFORM (default hgx-h200) names the platform the
# predictions use and whose peak FLOP/s and HBM bandwidth the efficiencies divide by;
# BUILD_DIR (default <source>/build-device).
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-${OUT:-$PWD/device-check-out}}
build=${BUILD_DIR:-$src/build-device}
platform=${SPSIM_PLATFORM:-hgx-h200}
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
t0=$(date +%s)
failed=0
: >"$out/summary.txt"

say() { echo "[device-check +$(( $(date +%s) - t0 ))s] $*" | tee -a "$out/summary.txt"; }

# step NAME SECONDS CMD...: runs CMD with a time limit, its output in OUTDIR/NAME.log.
step() {
	name=$1 limit=$2
	shift 2
	say "$name: $*"
	s=$(date +%s)
	timeout --signal=TERM --kill-after=20 "$limit" "$@" >"$out/$name.log" 2>&1
	rc=$?
	tail -n 25 "$out/$name.log"
	if [ "$rc" -eq 0 ]; then
		say "$name: ok ($(( $(date +%s) - s )) s)"
	else
		[ "$rc" -eq 124 ] && say "$name: TIMED OUT after $limit s"
		say "$name: FAILED (exit $rc, $(( $(date +%s) - s )) s; see $out/$name.log)"
		failed=$((failed + 1))
	fi
	return "$rc"
}

# ---- prerequisites
missing=""
for tool in meson ninja nvcc pkg-config timeout; do
	command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
for pc in yaml-0.1 jansson; do
	pkg-config --exists "$pc" 2>/dev/null || missing="$missing $pc(pkg-config)"
done
if [ -n "$missing" ]; then
	say "missing:$missing (Debian: apt-get install meson ninja-build pkg-config libyaml-dev libjansson-dev check;"
	say "CUDA toolkit with nvcc, cuBLAS and NCCL under /usr/local/cuda)"
	exit 1
fi
if command -v nvidia-smi >/dev/null 2>&1; then
	nvidia-smi >"$out/nvidia-smi.txt" 2>&1
	say "GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)"
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
if ! step build 300 sh -c "$setup '$build' '$src' -Dcuda=enabled -Dgpu_archs=$arch -Dbuildtype=release \
	-Dsimgrid=disabled && ninja -C '$build' -j $jobs kernels/test_kernels_gpu validate/spsim-validate \
	validate/test_validate_gpu"; then
	say "build failed: nothing else can run"
	exit 1
fi
exe="$build/validate/spsim-validate"

# ---- 2. kernels against the CPU references
step kernels 120 "$build/kernels/test_kernels_gpu"

# ---- 3. the orchestration on the GPU (NCCL transport, one GPU: K = 1 groups)
step orchestration 180 "$build/validate/test_validate_gpu"

# ---- 4. compute calibration: llama-3.1-8b, one GPU, 8K and 32K tokens
step compute 240 "$exe" compute --model llama-3.1-8b --seq 8192,32768 --micro-batch 1 --sp 1 \
	--platform "$platform" --warmup 1 --iters 3 --timeout 120 --out "$out"

# ---- 5. the single-GPU layer (K = 1), predicted with the calibration just measured
cal=""
[ -f "$out/calibration.yaml" ] && cal="--calibration $out/calibration.yaml"
# shellcheck disable=SC2086
step layer 180 "$exe" layer --model llama-3.1-8b --seq 8192 --micro-batch 1 --strategy basp \
	--platform "$platform" $cal --warmup 2 --iters 5 --timeout 120 --out "$out"

say "done in $(( $(date +%s) - t0 )) s, $failed step(s) failed; results in $out"
exit "$failed"
