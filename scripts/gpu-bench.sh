#!/usr/bin/env bash
# Measures the whole service on a GPU machine that has CUDA, cmake, ninja, g++ and python3 but no
# Node, no network and no model file, from what scripts/device-pack.mjs packed into .device/. In
# one tree it builds the addon (through cmake-js, as npm install does, with the packed Node's
# headers), native/tools and llama-server, so ggml's kernels compile once; it makes a synthetic
# model from the packed skeleton; then it runs, each step under `timeout` within one deadline:
#   1. arbitra-op-test --backend all (single ops bit for bit: required of the CPU's exact kernels,
#      reported for the GPU's), its whole output kept in op-test.txt;
#   2. the scorer bench's determinism in both KV layouts with both kernel sets, and the shared
#      pool's exact kernels once more with its gather flipped;
#   3. bench:api through the packed Node: our server with exact and with fast kernels against
#      llama-server from the same source, on the same model, at API_CONCURRENCY;
#   4. llama-bench (the reference) and the scorer bench's prefill and decisions in both layouts
#      (last: they are the quickest, and the least new, to lose to the deadline);
#   5. the verdict: scripts/lib/device-verdict.py (python3 alone) reads op-test.txt and scorer.jsonl
#      and says `deterministic`, `NOT deterministic: <column> <difference> (<layout> layout, exact
#      kernels)` for the first exact-kernel determinism column that is not 0 in either layout,
#      `NOT deterministic: op test <case> (backend <name>)` for a required op test case that failed,
#      or `NO VERDICT: <why>` when neither was found but evidence is missing (a layout's exact
#      determinism run or the op test's required backend skipped, stopped or in error). Fast
#      kernels' columns and the GPU's op test results are reported below it, never decisive; the
#      program's docstring has the rules. Its line becomes summary.txt's first line.
# From the repository root (the device tool: command `bash scripts/gpu-bench.sh`, carry .device):
#
#   OUT=/some/folder bash scripts/gpu-bench.sh                  # CUDA for sm_90 (H100/H200)
#   GPU=0 QUICK=1 MODEL=models/x.gguf API_CONCURRENCY=1,2 DEADLINE=5400 OUT=/tmp/out bash scripts/gpu-bench.sh
#                                                               # the same pipeline on the CPU
#   VERDICT_ONLY=1 OUT=/copy/of/a/run bash scripts/gpu-bench.sh  # the verdict alone on a run's files
#
# Environment (defaults in brackets): GPU [1]; CUDA_ARCH [90]; JOBS [all cores]; THREADS [all
# cores]; WORK [/tmp/arbitra-gpu-bench]: unpacked runtime, source, app and build, reused by a later
# run on the same machine; PACK [.device]; MODEL: a GGUF to bench instead of the synthetic one;
# SEED [1]; QUICK [0]: the scorer bench's --quick and one llama-bench repetition; BENCH_SECONDS [3]:
# per decisions point of the scorer bench; API_SECONDS [4] and API_ROUNDS [2]: bench:api's
# BENCH_SECONDS and BENCH_ROUNDS; API_CONCURRENCY [1,8,32]; SCORER_ARGS: more flags for
# arbitra-scorer-bench; DEADLINE [510]: seconds for the whole run, a step with less left than it
# needs is skipped and named in the summary; STOP_AFTER=build: stop once built and the model made;
# VERDICT_ONLY=1: build and run nothing, judge the op-test.txt and scorer.jsonl already in $OUT
# (summary.txt is rewritten with the verdict alone).
#
# $OUT gets at most 8 files (the device tool brings back 8): summary.txt (the verdict first), op-
# test.txt (the op test's every line), build.log (its tail), run.log (the programs' stderr),
# llama-bench.json, scorer.jsonl (every scorer bench run, each starting with its setup line: layout
# and kernels), api.json and api.md (bench:api's raw result and its RESULTS.md section).
#
# Exit status, the verdict's and the steps' combined (a difference outranks a failed step, which
# outranks missing evidence): 0 deterministic, every step ran and passed; 1 NOT deterministic,
# whatever else happened; 2 NO VERDICT, with no step failed (a step skipped for the deadline, say),
# or bad GPU or DEADLINE values (then on stderr, no summary); 3 a step failed or ran out of time,
# or the run stopped before its steps (a missing pack, a failed build: `FAILED:` in the summary,
# `NO VERDICT: the run stopped: …` first), and no difference was found: the first line says
# `deterministic` or `NO VERDICT`, the summary which step. OUT unset: 1, on stderr. STOP_AFTER=build
# asks for no verdict: 0 once built (the first line says so).
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
SECONDS_PER_POINT=${BENCH_SECONDS:-3}
API_SECONDS=${API_SECONDS:-4}
API_ROUNDS=${API_ROUNDS:-2}
API_CONCURRENCY=${API_CONCURRENCY:-1,8,32}
DEADLINE=${DEADLINE:-510}
VERDICT_ONLY=${VERDICT_ONLY:-0}
# The verdict program, beside this script (VERDICT_ONLY may run from anywhere).
VERDICT="$(dirname "${BASH_SOURCE[0]}")/lib/device-verdict.py"

# What the app folder takes from the checkout; the rest (node_modules, dist/) comes packed.
APP_FILES=(package.json CMakeLists.txt cmake native calibrations src/engine/rpc src/store/postgres/migrations)
TARGETS=(arbitra arbitra-op-test arbitra-scorer-bench arbitra-synth-gguf llama-bench llama-server)

# All in one function: bash reads a script as it runs, and a function is read whole before it
# starts, so editing this file during a run cannot derail the run.
main() {
  case "$GPU" in 0 | 1) ;; *)
    echo "gpu-bench: GPU must be 0 or 1, not '$GPU'" >&2
    exit 2
    ;;
  esac
  case "$DEADLINE" in '' | *[!0-9]*)
    echo "gpu-bench: DEADLINE must be a number of seconds, not '$DEADLINE'" >&2
    exit 2
    ;;
  esac
  mkdir -p "$OUT" "$WORK" || exit 3
  OUT=$(cd "$OUT" && pwd)
  summary="$OUT/summary.txt"
  runlog="$OUT/run.log"
  : >"$summary"
  say() { echo "$*" | tee -a "$summary"; }
  started=$(date +%s)
  # Ends the run with exit status $2 and summary.txt rewritten with the verdict line $1 first.
  finish() {
    local body
    say "== done in $(($(date +%s) - started)) s, status $2"
    body=$(cat "$summary")
    printf '%s\n%s\n' "$1" "$body" >"$summary"
    exit "$2"
  }
  fail() {
    say "FAILED: $*"
    finish "NO VERDICT: the run stopped: $*" 3
  }
  step_failed=0
  # The verdict over op-test.txt and scorer.jsonl in $OUT: what it read into the summary, then
  # the end of the run with its line first and the status the header describes.
  judge() {
    local line code read
    say "-- verdict: $VERDICT"
    read=$(mktemp)
    line=$(python3 "$VERDICT" --scorer "$OUT/scorer.jsonl" --op-test "$OUT/op-test.txt" 2>"$read")
    code=$?
    sed 's/^/  /' "$read" | tee -a "$summary"
    rm -f "$read"
    case "$code:$line" in
      0:deterministic | "1:NOT deterministic: "* | "2:NO VERDICT: "*) ;;
      *)
        line="NO VERDICT: $VERDICT failed (status $code; its stderr above)"
        code=2
        ;;
    esac
    say "$line"
    [ "$step_failed" = 1 ] && [ "$code" != 1 ] && code=3
    finish "$line" "$code"
  }
  if [ "$VERDICT_ONLY" = 1 ]; then
    say "== arbitra gpu-bench $(date -u +%FT%TZ): the verdict alone, on the files in $OUT"
    judge
  fi
  : >"$runlog"
  rm -f "$OUT/op-test.txt"
  # Seconds since the previous call into $took (not a $(...) call: its subshell would forget lap_at).
  lap_at=$started
  lap() {
    local now
    now=$(date +%s)
    took="$((now - lap_at)) s"
    lap_at=$now
  }
  skipped=()
  # Whether a step that needs $2 seconds (at most $3) fits before the deadline; sets $limit to the
  # seconds it may take, or names it among the skipped.
  fits() {
    local left=$((DEADLINE - ($(date +%s) - started)))
    limit=$((left < $3 ? left : $3))
    if [ "$left" -lt "$2" ]; then
      skipped+=("$1")
      say "-- $1: skipped, ${left} s left of the ${DEADLINE} s deadline and it needs ${2} s"
      return 1
    fi
  }
  # Unpacks tarball $1 into folder $2 unless the same tarball is there already.
  unpack() {
    local stamp
    stamp=$(sha256sum "$1" | cut -c1-16)
    [ "$(cat "$2/.arbitra-stamp" 2>/dev/null)" = "$stamp" ] && return 0
    rm -rf "$2" && mkdir -p "$2" || return 1
    if command -v xz >/dev/null; then
      tar -xJf "$1" -C "$2" || return 1
    else
      python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$1" "$2" || return 1
    fi
    echo "$stamp" >"$2/.arbitra-stamp"
  }

  [ -f native/tools/CMakeLists.txt ] || fail "run from the repository root (native/tools/CMakeLists.txt not found in $PWD)"
  for f in llama.cpp.tar.xz node.tar.xz service.tar.xz pack.json; do
    [ -f "$PACK/$f" ] || fail "$PACK/$f missing: run node scripts/device-pack.mjs where Node is, and carry $PACK"
  done
  [ -n "${MODEL:-}" ] || [ -f "$PACK/model.skel.gguf" ] || fail "$PACK/model.skel.gguf missing (or set MODEL)"
  for tool in cmake ninja c++ tar sha256sum timeout python3; do
    command -v "$tool" >/dev/null || fail "$tool not found"
  done

  say "== arbitra gpu-bench $(date -u +%FT%TZ) on $(hostname), $(nproc) cores, GPU=$GPU QUICK=$QUICK, deadline ${DEADLINE} s"
  if [ "$GPU" = 1 ]; then
    command -v nvcc >/dev/null || export PATH="$PATH:/usr/local/cuda/bin"
    command -v nvcc >/dev/null || fail "nvcc not found (GPU=1); GPU=0 builds for the CPU"
    say "$(nvidia-smi -L 2>&1)"
    say "$(nvcc --version | tail -n 2 | head -n 1)"
    cuda_flags=(--CDARBITRA_CUDA=ON "--CDCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCH")
    ngl=99
  else
    cuda_flags=(--CDARBITRA_CUDA=OFF)
    ngl=0
  fi
  say "$(cmake --version | head -n 1), ninja $(ninja --version), $(c++ --version | head -n 1)"

  # The app folder: the checkout's build inputs and runtime files beside the packed node_modules and
  # dist/, so the checkout's own (a CPU run here) stay untouched. Copies keep their times, so an
  # unchanged source does not rebuild.
  node_dir="$WORK/node"
  src="$WORK/llama.cpp"
  app="$WORK/app"
  unpack "$PACK/llama.cpp.tar.xz" "$src" || fail "could not unpack $PACK/llama.cpp.tar.xz"
  unpack "$PACK/node.tar.xz" "$node_dir" || fail "could not unpack $PACK/node.tar.xz"
  unpack "$PACK/service.tar.xz" "$WORK/service" || fail "could not unpack $PACK/service.tar.xz"
  mkdir -p "$app/deps" "$app/bench" || fail "cannot make $app"
  for p in "${APP_FILES[@]}" node_modules dist; do rm -rf "${app:?}/$p"; done
  cp -a --parents "${APP_FILES[@]}" "$app/" || fail "could not copy the checkout's files into $app"
  cp -a "$WORK/service/node_modules" "$WORK/service/dist" "$app/" || fail "could not copy the service into $app"
  ln -sfn "$src" "$app/deps/llama.cpp"
  export PATH="$node_dir/bin:$PATH"
  node_version=$(node --version) || fail "the packed node does not run"
  lap
  say "unpacked llama.cpp, Node $node_version and the service into $WORK: $took"

  # the unpacked tree has no git history: the addon names the commit the pack was made from
  llama_commit=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["llamaCpp"])' "$PACK/pack.json") ||
    fail "no llama.cpp commit in $PACK/pack.json"
  build="$app/build"
  bin="$build/bin"
  buildlog="$WORK/build.log"
  fits build 60 900 || fail "no time left to build"
  {
    # cmake-js finds Node's headers in the packed runtime (npm_config_nodedir), so it downloads nothing.
    (cd "$app" && npm_config_nodedir="$node_dir" timeout "$limit" node node_modules/cmake-js/bin/cmake-js configure --out build \
      "${cuda_flags[@]}" --CDARBITRA_NATIVE=OFF --CDARBITRA_DEVICE_TOOLS=ON "--CDARBITRA_LLAMA_COMMIT=$llama_commit") &&
      timeout "$((DEADLINE - ($(date +%s) - started)))" cmake --build "$build" -j "$JOBS" --target "${TARGETS[@]}"
  } >"$buildlog" 2>&1
  built=$?
  tail -n 150 "$buildlog" >"$OUT/build.log"
  [ $built = 0 ] || fail "build failed or ran out of time (tail in build.log; full log $buildlog)"
  # bench:api looks for llama-server where it builds one itself.
  mkdir -p "$build/bench-tools/bin" && ln -sfn "$bin/llama-server" "$build/bench-tools/bin/llama-server"
  lap
  say "built the $([ "$GPU" = 1 ] && echo "CUDA (sm_$CUDA_ARCH)" || echo CPU) addon, tools and llama-server in $build: $took"
  say "addon: llama.cpp $(cd "$app" && node -p "require('./build/Release/arbitra.node').llamaBuild")"

  if [ -n "${MODEL:-}" ]; then
    model=$(realpath "$MODEL") || fail "MODEL not found: $MODEL"
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
    say "== built, stopping as STOP_AFTER=build asks"
    finish "NO VERDICT: STOP_AFTER=build asks for the build alone" 0
  fi

  if fits "arbitra-op-test" 10 90; then
    say "-- arbitra-op-test --backend all (every line in op-test.txt)"
    optest="$OUT/op-test.txt"
    if timeout "$limit" "$build/Release/arbitra-op-test" --backend all >"$optest" 2>>"$runlog"; then
      ops=ok
    else
      ops="failed (status $?)"
      step_failed=1
    fi
    # Each test's first FAIL line and how many followed it.
    awk '/^  FAIL /{ if (n++ == 0) print; next }
      { if (n > 1) printf "  (%d more FAIL lines like it in op-test.txt)\n", n - 1; n = 0; print }
      END { if (n > 1) printf "  (%d more FAIL lines like it in op-test.txt)\n", n - 1 }' "$optest" | tee -a "$summary"
    lap
    say "op tests: $ops ($took): $(grep -c '^not ok ' "$optest") not ok, $(grep -c '^  FAIL ' "$optest") FAIL lines, in every backend"
  fi

  quick=()
  [ "$QUICK" = 1 ] && quick=(--quick)
  scorer="$OUT/scorer.jsonl"
  : >"$scorer"
  # $1: the step's name for the summary; the rest: the scorer bench's flags.
  scorer_bench() {
    local name=$1
    shift
    fits "$name" 20 150 || return 0
    say "-- arbitra-scorer-bench $*"
    local before
    before=$(wc -l <"$scorer")
    # shellcheck disable=SC2086 # SCORER_ARGS is a list of flags
    if timeout "$limit" "$bin/arbitra-scorer-bench" --model "$model" --gpu-layers "$ngl" --threads "$THREADS" --seed "$SEED" \
      "${quick[@]}" --json "$scorer" "$@" ${SCORER_ARGS:-} >/dev/null 2>>"$runlog"; then
      ok="$name: ok"
    else
      step_failed=1
      ok="$name failed or timed out (run.log)"
    fi
    tail -n +"$((before + 1))" "$scorer" | tee -a "$summary"
    lap
    say "$ok: $took"
  }
  for layout in shared copied; do
    for kernels in exact fast; do
      scorer_bench "determinism $layout $kernels" --only determinism --layout "$layout" --kernels "$kernels"
    done
  done
  # The shared pool's gather flipped: off on the GPU (where exact kernels turn it on), to show what
  # it changes there; on on the CPU, where it must give the CPU's own bits.
  flip=$([ "$GPU" = 1 ] && echo off || echo on)
  scorer_bench "determinism shared exact, --kv-gather $flip" --only determinism --layout shared --kernels exact --kv-gather "$flip"

  # bench:api from the app folder, where it writes bench/out/api.json and bench/RESULTS.md.
  if fits bench:api 90 "$DEADLINE"; then
    say "-- bench:api: ours (exact, fast) against llama-server at concurrency $API_CONCURRENCY, ${API_SECONDS} s per server and cell"
    rm -rf "$app/bench/out" "$app/bench/RESULTS.md"
    if (cd "$app" && ARBITRA_MODEL="$model" BENCH_CONCURRENCY="$API_CONCURRENCY" BENCH_SECONDS="$API_SECONDS" BENCH_ROUNDS="$API_ROUNDS" \
      BENCH_THREADS="$THREADS" timeout --kill-after=30 "$limit" node dist/bench/api.js) >>"$runlog" 2>&1; then
      cp "$app/bench/out/api.json" "$OUT/api.json"
      sed -n '/^## API$/,$p' "$app/bench/RESULTS.md" >"$OUT/api.md"
      grep -E '^\| [ab] \|' "$OUT/api.md" | tee -a "$summary" >/dev/null
      lap
      say "bench:api: done, table in api.md ($took)"
    else
      lap
      step_failed=1
      say "bench:api failed or timed out (run.log): $took"
    fi
  fi

  reps=3
  [ "$QUICK" = 1 ] && reps=1
  if fits llama-bench 10 90; then
    say "-- llama-bench -ngl $ngl -p 512 -n 0 -r $reps"
    if timeout "$limit" "$bin/llama-bench" -m "$model" -ngl "$ngl" -t "$THREADS" -p 512 -n 0 -r "$reps" -o json >"$OUT/llama-bench.json" 2>>"$runlog"; then
      # One number to read off the tail without a JSON tool: "avg_ts" of the pp512 test.
      lap
      say "pp512 $(grep -o '"avg_ts": *[0-9.e+]*' "$OUT/llama-bench.json" | head -n 1): $took"
    else
      lap
      say "llama-bench failed (run.log): $took"
      step_failed=1
    fi
  fi
  for layout in shared copied; do
    scorer_bench "scorer bench $layout" --only prefill,decisions --layout "$layout" --seconds "$SECONDS_PER_POINT"
  done

  [ ${#skipped[@]} = 0 ] || say "skipped for the deadline: ${skipped[*]}"
  judge
}

main "$@"
