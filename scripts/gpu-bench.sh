#!/usr/bin/env bash
# Measures the engine on a GPU machine that has CUDA, cmake, ninja and g++ but no Node, no network
# and no model file: builds native/tools against the llama.cpp that scripts/device-pack.mjs packed
# into .device/, makes a synthetic model from the packed skeleton, then runs llama-bench (the
# reference) and the scorer bench in both KV layouts. From the repository root:
#
#   OUT=/some/folder scripts/gpu-bench.sh              # CUDA build for sm_90 (H100/H200)
#   GPU=0 QUICK=1 OUT=/tmp/out scripts/gpu-bench.sh    # the same pipeline on CPU, as a smoke test
#
# Environment (defaults in brackets): GPU [1]; CUDA_ARCH [90]; JOBS [all cores]; THREADS [all
# cores]; WORK [/tmp/arbitra-gpu-bench]: unpacked source, build and model, reused by a later run on
# the same machine; PACK [.device]; MODEL: a GGUF to bench instead of the synthetic one; SEED [1];
# QUICK [0]: small counts and one llama-bench repetition; BENCH_SECONDS [10]: per decisions point;
# SCORER_ARGS: more flags for arbitra-scorer-bench; BENCH_TIMEOUT [420]: seconds per bench run;
# STOP_AFTER=build: stop once the tools are built and the model is made (the CUDA build takes
# minutes: one call can build and the next, on the same warm machine, measure).
#
# $OUT gets at most 6 files (the device tool brings back 8): summary.txt, build.log (its tail),
# run.log (the programs' stderr), llama-bench.json, scorer-copied.jsonl, scorer-shared.jsonl.
# Exits non-zero, with the reason last in summary.txt, when a step fails.
set -uo pipefail

: "${OUT:?set OUT to the folder the results go to}"
GPU=${GPU:-1}
CUDA_ARCH=${CUDA_ARCH:-90}
JOBS=${JOBS:-$(nproc)}
THREADS=${THREADS:-$(nproc)}
WORK=${WORK:-/tmp/arbitra-gpu-bench}
PACK=${PACK:-.device}
SEED=${SEED:-1}
QUICK=${QUICK:-0}
SECONDS_PER_POINT=${BENCH_SECONDS:-10}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-420}

# All in one function: bash reads a script as it runs, and a function is read whole before it
# starts, so editing this file during a run cannot derail the run.
main() {
  mkdir -p "$OUT" "$WORK" || exit 1
  summary="$OUT/summary.txt"
  runlog="$OUT/run.log"
  : >"$summary"
  : >"$runlog"
  say() { echo "$*" | tee -a "$summary"; }
  fail() {
    say "FAILED: $*"
    exit 1
  }
  started=$(date +%s)
  # Seconds since the previous call into $took (not a $(...) call: its subshell would forget lap_at).
  lap_at=$started
  lap() {
    local now
    now=$(date +%s)
    took="$((now - lap_at)) s"
    lap_at=$now
  }

  [ -f native/tools/CMakeLists.txt ] || fail "run from the repository root (native/tools/CMakeLists.txt not found in $PWD)"
  [ -f "$PACK/llama.cpp.tar.gz" ] || fail "$PACK/llama.cpp.tar.gz missing: run node scripts/device-pack.mjs where Node is, and carry $PACK"
  [ -n "${MODEL:-}" ] || [ -f "$PACK/model.skel.gguf" ] || fail "$PACK/model.skel.gguf missing (or set MODEL)"
  for tool in cmake ninja c++ tar sha256sum timeout; do
    command -v "$tool" >/dev/null || fail "$tool not found"
  done

  say "== arbitra gpu-bench $(date -u +%FT%TZ) on $(hostname), $(nproc) cores, GPU=$GPU QUICK=$QUICK"
  if [ "$GPU" = 1 ]; then
    command -v nvcc >/dev/null || export PATH="$PATH:/usr/local/cuda/bin"
    command -v nvcc >/dev/null || fail "nvcc not found (GPU=1); GPU=0 builds for the CPU"
    say "$(nvidia-smi -L 2>&1)"
    say "$(nvcc --version | tail -n 2 | head -n 1)"
    variant=cuda
    cuda_flags=(-DARBITRA_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCH")
    ngl=99
  else
    variant=cpu
    cuda_flags=(-DARBITRA_CUDA=OFF)
    ngl=0
  fi
  say "$(cmake --version | head -n 1), ninja $(ninja --version), $(c++ --version | head -n 1)"

  # Unpacked again only when the tarball changed: fresh files would rebuild everything.
  src="$WORK/llama.cpp"
  stamp=$(sha256sum "$PACK/llama.cpp.tar.gz" | cut -c1-16)
  if [ "$(cat "$src/.arbitra-stamp" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$src" && mkdir -p "$src" && tar -xzf "$PACK/llama.cpp.tar.gz" -C "$src" || fail "could not unpack $PACK/llama.cpp.tar.gz"
    echo "$stamp" >"$src/.arbitra-stamp"
  fi
  lap
  say "unpacked llama.cpp ($stamp): $took"

  build="$WORK/build-$variant"
  bin="$build/bin"
  buildlog="$WORK/build.log"
  {
    cmake -S native/tools -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "-DLLAMA_DIR=$src" "${cuda_flags[@]}" &&
      cmake --build "$build" -j "$JOBS" --target arbitra-synth-gguf arbitra-scorer-bench arbitra-op-test llama-bench
  } >"$buildlog" 2>&1
  built=$?
  tail -n 150 "$buildlog" >"$OUT/build.log"
  [ $built = 0 ] || fail "build failed (tail in build.log; full log $buildlog)"
  lap
  say "built $variant tools in $build: $took"

  if [ -n "${MODEL:-}" ]; then
    model=$MODEL
    say "model: $model (given)"
  else
    model="$WORK/model-synth.gguf"
    want="$(sha256sum "$PACK/model.skel.gguf" | cut -c1-16)-$SEED"
    if [ "$(cat "$model.stamp" 2>/dev/null)" != "$want" ]; then
      rm -f "$model.stamp"
      "$bin/arbitra-synth-gguf" fill "$PACK/model.skel.gguf" "$model" --seed "$SEED" 2>>"$runlog" || fail "arbitra-synth-gguf fill failed (run.log)"
      echo "$want" >"$model.stamp"
    fi
    lap
    say "model: synthetic $(cat "$PACK/model.name" 2>/dev/null || echo model), seed $SEED, $(stat -c %s "$model") bytes: $took"
  fi

  if [ "${STOP_AFTER:-}" = build ]; then
    say "== built, stopping as STOP_AFTER=build asks ($(($(date +%s) - started)) s)"
    exit 0
  fi

  status=0
  # Single ops alone and beside others, bit for bit: required of the CPU's exact kernels, reported for the GPU's.
  say "-- arbitra-op-test --backend all"
  if timeout "$BENCH_TIMEOUT" "$bin/arbitra-op-test" --backend all >"$WORK/op-test.txt" 2>>"$runlog"; then ops=ok; else ops=failed; status=1; fi
  grep -v '^  FAIL' "$WORK/op-test.txt" | tee -a "$summary"
  lap
  say "op tests: $ops ($took)"

  reps=3
  [ "$QUICK" = 1 ] && reps=1
  say "-- llama-bench -ngl $ngl -p 512 -n 0 -r $reps"
  if timeout "$BENCH_TIMEOUT" "$bin/llama-bench" -m "$model" -ngl "$ngl" -t "$THREADS" -p 512 -n 0 -r "$reps" -o json >"$OUT/llama-bench.json" 2>>"$runlog"; then
    # One number to read off the tail without a JSON tool: "avg_ts" of the pp512 test.
    lap
    say "pp512 $(grep -o '"avg_ts": *[0-9.e+]*' "$OUT/llama-bench.json" | head -n 1): $took"
  else
    lap
    say "llama-bench failed (run.log): $took"
    status=1
  fi

  quick=()
  [ "$QUICK" = 1 ] && quick=(--quick)
  for layout in copied shared; do
    out="$OUT/scorer-$layout.jsonl"
    : >"$out"
    say "-- arbitra-scorer-bench --layout $layout"
    # shellcheck disable=SC2086 # SCORER_ARGS is a list of flags
    if ! timeout "$BENCH_TIMEOUT" "$bin/arbitra-scorer-bench" --model "$model" --layout "$layout" --gpu-layers "$ngl" --threads "$THREADS" \
      --seed "$SEED" --seconds "$SECONDS_PER_POINT" "${quick[@]}" --json "$out" ${SCORER_ARGS:-} >/dev/null 2>>"$runlog"; then
      status=1
      say "arbitra-scorer-bench --layout $layout failed (run.log)"
    fi
    cat "$out" | tee -a "$summary"
    lap
    say "($took)"
  done

  say "== done in $(($(date +%s) - started)) s, status $status"
  exit $status
}

main "$@"
