#!/usr/bin/env bash
# Measures the whole service on a GPU machine that has CUDA, cmake, ninja, g++ and python3 but no
# Node, no network and no model file, from what scripts/device-pack.mjs packed into .device/. In
# one tree it builds the addon (through cmake-js, as npm install does, with the packed Node's
# headers), native/tools and llama-server, so ggml's kernels compile once: first the verdict's
# tools (the op test, the scorer bench, the synthetic model's maker), then, in the background
# while the verdict's steps run, the benches' (the addon, llama-bench, llama-server). It makes a
# synthetic model from the packed skeleton; then it runs, each step under `timeout` within one
# deadline, in the order of what the verdict needs first:
#   1. arbitra-op-test --backend all --large --required (single ops bit for bit, products at K
#      4,096, N 2,048 and 1 to 512 rows; every case required of the CPU's exact kernels, the cases
#      tagged [every backend] of the GPU's too), its whole output in op-test.txt. Without
#      --required the GPU runs its [CPU only] cases too, reported: on the H200 the F16 product
#      stopped the program there (CUDA graphs: 'an illegal instruction', stock kernels too);
#   2. the scorer bench's determinism with exact kernels in both KV layouts (the verdict's probe);
#   3. the same with fast kernels in both layouts, and the shared pool's exact kernels with its
#      gather flipped (reported, never decisive): while the benches' build runs, else last;
#   4. bench:api through the packed Node: our server with exact and with fast kernels against
#      llama-server from the same source, on the same model, at API_CONCURRENCY, each engine's
#      load-time check and resolved path (GET /health) in its setup line;
#   5. llama-bench (the reference) and the scorer bench's prefill and decisions in both layouts;
#   6. the verdict: scripts/lib/device-verdict.py (python3 alone) reads op-test.txt and scorer.jsonl
#      and says `deterministic`, `NOT deterministic: <column> <difference> (<layout> layout, exact
#      kernels)` for the first exact-kernel determinism column that is not 0 in either layout,
#      `NOT deterministic: op test <case> (backend <name>)` for a required op test case that failed,
#      or `NO VERDICT: <why>` when neither was found but evidence is missing (a layout's exact
#      determinism run or the op test's required backend skipped, stopped or in error). Fast
#      kernels' columns and the GPU's [CPU only] op tests are reported below it, never decisive;
#      the program's docstring has the rules. Its line becomes summary.txt's first line.
# From the repository root (the device tool: command `bash scripts/gpu-bench.sh`, carry .device,
# timeout_s 540; with QUICK=1, timeout_s 330):
#
#   OUT=/some/folder bash scripts/gpu-bench.sh                  # CUDA for sm_90 (H100/H200)
#   GPU=0 QUICK=1 MODEL=models/x.gguf API_CONCURRENCY=1,2 DEADLINE=5400 OUT=/tmp/out bash scripts/gpu-bench.sh
#                                                               # the same pipeline on the CPU
#   VERDICT_ONLY=1 OUT=/copy/of/a/run bash scripts/gpu-bench.sh  # the verdict alone on a run's files
#
# Environment (defaults in brackets): GPU [1]; CUDA_ARCH [90]; JOBS [all cores]; THREADS [all
# cores]; WORK [/tmp/arbitra-gpu-bench]: unpacked runtime, source, app and build, reused by a later
# run on the same machine; PACK [.device]; MODEL: a GGUF to bench instead of the synthetic one;
# SEED [1]; QUICK [0]: the 5-minute call: a deadline of 290 s, the scorer bench's --quick, one
# llama-bench repetition and a shorter bench:api; BENCH_SECONDS [3]: per decisions point of the
# scorer bench; API_SECONDS [2] and API_ROUNDS [2]: bench:api's BENCH_SECONDS and BENCH_ROUNDS;
# API_CONCURRENCY [1,8,32; QUICK 1,8]; SCORER_ARGS: more flags for arbitra-scorer-bench; OP_ARGS
# [--large --required]: the op test's flags (empty: its suite size, every case on every backend);
# DEADLINE [480; QUICK 290]: seconds for the whole run, a step with less left than it needs is
# skipped and named in the summary, and none runs past it (60 s inside the device tool's timeout_s
# of 540, 40 s inside QUICK's 330);
# STOP_AFTER=build: stop once built and the model made; VERDICT_ONLY=1: build and run nothing,
# judge the op-test.txt and scorer.jsonl already in $OUT (summary.txt is rewritten with the verdict
# alone).
#
# $OUT gets at most 8 files (the device tool brings back 8): summary.txt (the verdict first, each
# step's time), op-test.txt (the op test's every line), build.log (the tail of each build phase),
# run.log (the programs' stderr, bench:api's log), llama-bench.json, scorer.jsonl (every scorer bench
# run, each starting with its setup line: layout and kernels), api.json and api.md (bench:api's raw
# result and its RESULTS.md section).
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
API_SECONDS=${API_SECONDS:-2}
API_ROUNDS=${API_ROUNDS:-2}
if [ "$QUICK" = 1 ]; then
  API_CONCURRENCY=${API_CONCURRENCY:-1,8}
  DEADLINE=${DEADLINE:-290}
else
  API_CONCURRENCY=${API_CONCURRENCY:-1,8,32}
  DEADLINE=${DEADLINE:-480}
fi
OP_ARGS=${OP_ARGS---large --required}
VERDICT_ONLY=${VERDICT_ONLY:-0}
# The verdict program, beside this script (VERDICT_ONLY may run from anywhere).
VERDICT="$(dirname "${BASH_SOURCE[0]}")/lib/device-verdict.py"

# What the app folder takes from the checkout; the rest (node_modules, dist/) comes packed.
APP_FILES=(package.json CMakeLists.txt cmake native calibrations src/engine/rpc src/store/postgres/migrations)
# Built first, and required: what the verdict's steps run.
VERDICT_TARGETS=(arbitra-op-test arbitra-scorer-bench arbitra-synth-gguf)
# Built next, in the background while those steps run: what the benches run.
BENCH_TARGETS=(arbitra llama-bench llama-server)

# Seconds each step needs to start (with less left before the deadline it is skipped and named)
# and may take at most (its timeout, never past the deadline), on the H200 with the synthetic
# default model. Estimates until a GPU run measures them (summary.txt has each step's time): on
# 2 CPU cores the same steps take minutes, so with GPU=0 the caps are the deadline. The CUDA build
# of the verdict's tools is the call's largest cost (native/tools took 240-265 s on the H100's 16
# cores).
NEED_OP_TEST=30 CAP_OP_TEST=120       # the CPU's section at --large on 16 cores, the GPU's in seconds
NEED_DETERMINISM=30 CAP_DETERMINISM=150  # load, warm-up, the probe's decodes (81-105 s on 2 CPU cores)
NEED_LLAMA_BENCH=20 CAP_LLAMA_BENCH=90
NEED_SCORER=40 CAP_SCORER=150        # prefill, and BENCH_SECONDS per decisions point
# bench:api: three servers and one engine loading, then every cell of 2 workloads at each
# concurrency, each server API_SECONDS per cell with the rounds' tails.
API_LEVELS=$(($(tr -cd , <<<"$API_CONCURRENCY" | wc -c) + 1))
NEED_API=$((45 + 2 * API_LEVELS * 3 * (API_SECONDS + 2)))

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
  case "$API_SECONDS" in '' | *[!0-9]* | 0)
    echo "gpu-bench: API_SECONDS must be a whole number of seconds, not '$API_SECONDS'" >&2
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
    if [ -n "${bench_build:-}" ] && kill -0 "$bench_build" 2>/dev/null; then
      kill "$bench_build" 2>/dev/null # timeout passes it on to the build
      wait "$bench_build" 2>/dev/null
      say "stopped the build of ${BENCH_TARGETS[*]}, unfinished"
    fi
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
  # Seconds left before the deadline, at least 1 (`timeout 0` would mean no limit).
  left() {
    local n=$((DEADLINE - ($(date +%s) - started)))
    echo $((n < 1 ? 1 : n))
  }
  # A step's cap: $1 on the GPU; on the CPU, where every step takes minutes, the deadline.
  cap() { if [ "$GPU" = 1 ]; then echo "$1"; else echo "$DEADLINE"; fi; }
  # Waits once for the benches' tools (built in the background); 0 when they built. Their log's
  # tail joins build.log, and the summary says how long they took.
  bench_tools() {
    if [ -z "${bench_tools_status:-}" ]; then
      wait "$bench_build"
      bench_tools_status=$?
      bench_build=
      {
        echo "== ${BENCH_TARGETS[*]} (in the background)"
        tail -n 50 "$benchlog"
      } >>"$OUT/build.log"
      if [ "$bench_tools_status" = 0 ]; then
        # bench:api looks for llama-server where it builds one itself.
        mkdir -p "$build/bench-tools/bin" && ln -sfn "$bin/llama-server" "$build/bench-tools/bin/llama-server"
        say "built ${BENCH_TARGETS[*]} in $(($(date +%s) - bench_build_started)) s from its start, waited for until $(($(date +%s) - started)) s"
        say "addon: llama.cpp $(cd "$app" && node -p "require('./build/Release/arbitra.node').llamaBuild")"
      else
        step_failed=1
        say "FAILED: the build of ${BENCH_TARGETS[*]} (status $bench_tools_status; tail in build.log, full log $benchlog): bench:api, llama-bench and the scorer bench not run"
      fi
    fi
    return "$bench_tools_status"
  }
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
  benchlog="$WORK/build-bench.log"
  fits build 60 "$DEADLINE" || fail "no time left to build"
  {
    # cmake-js finds Node's headers in the packed runtime (npm_config_nodedir), so it downloads nothing.
    (cd "$app" && npm_config_nodedir="$node_dir" timeout "$limit" node node_modules/cmake-js/bin/cmake-js configure --out build \
      "${cuda_flags[@]}" --CDARBITRA_NATIVE=OFF --CDARBITRA_DEVICE_TOOLS=ON "--CDARBITRA_LLAMA_COMMIT=$llama_commit") &&
      timeout "$(left)" cmake --build "$build" -j "$JOBS" --target "${VERDICT_TARGETS[@]}"
  } >"$buildlog" 2>&1
  built=$?
  tail -n 100 "$buildlog" >"$OUT/build.log"
  [ $built = 0 ] || fail "the build of ${VERDICT_TARGETS[*]} failed or ran out of time (tail in build.log; full log $buildlog)"
  lap
  say "built the $([ "$GPU" = 1 ] && echo "CUDA (sm_$CUDA_ARCH)" || echo CPU) ${VERDICT_TARGETS[*]} in $build: $took"
  # The benches' tools, in the background (one ninja in the tree at a time: this one, from now);
  # finish() stops it if the run ends first.
  timeout "$(left)" cmake --build "$build" -j "$JOBS" --target "${BENCH_TARGETS[@]}" >"$benchlog" 2>&1 &
  bench_build=$!
  bench_build_started=$(date +%s)
  say "building ${BENCH_TARGETS[*]} in the background while the verdict's steps run"

  if [ -n "${MODEL:-}" ]; then
    model=$(realpath "$MODEL") || fail "MODEL not found: $MODEL"
    say "model: $model (given)"
  else
    model="$WORK/model-synth.gguf"
    want="$(sha256sum "$PACK/model.skel.gguf" | cut -c1-16)-$SEED"
    if [ "$(cat "$model.stamp" 2>/dev/null)" != "$want" ]; then
      rm -f "$model.stamp"
      timeout "$(left)" "$bin/arbitra-synth-gguf" fill "$PACK/model.skel.gguf" "$model" --seed "$SEED" 2>>"$runlog" || fail "arbitra-synth-gguf fill failed (run.log)"
      echo "$want" >"$model.stamp"
    fi
    lap
    say "model: synthetic $(cat "$PACK/model.name" 2>/dev/null || echo model), seed $SEED, $(stat -c %s "$model") bytes: $took"
  fi

  if [ "${STOP_AFTER:-}" = build ]; then
    bench_tools || fail "the build of ${BENCH_TARGETS[*]} failed or ran out of time (tail in build.log)"
    say "== built, stopping as STOP_AFTER=build asks"
    finish "NO VERDICT: STOP_AFTER=build asks for the build alone" 0
  fi

  # shellcheck disable=SC2086 # OP_ARGS is a list of flags
  if fits "arbitra-op-test --backend all $OP_ARGS" "$NEED_OP_TEST" "$(cap "$CAP_OP_TEST")"; then
    say "-- arbitra-op-test --backend all $OP_ARGS (every line in op-test.txt)"
    optest="$OUT/op-test.txt"
    if timeout "$limit" "$build/Release/arbitra-op-test" --backend all $OP_ARGS >"$optest" 2>>"$runlog"; then
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
    say "op tests: $ops ($took): $(grep -c '^not ok ' "$optest") not ok, $(grep -c '^  FAIL ' "$optest") FAIL lines, in every backend, required or not (the verdict tells them apart)"
  fi

  quick=()
  [ "$QUICK" = 1 ] && quick=(--quick)
  scorer="$OUT/scorer.jsonl"
  : >"$scorer"
  # $1: the step's name for the summary; the rest: the scorer bench's flags.
  scorer_bench() {
    local name=$1 need=$2 most=$3
    shift 3
    fits "$name" "$need" "$(cap "$most")" || return 0
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
  # The verdict's probe: exact kernels in both layouts.
  for layout in shared copied; do
    scorer_bench "determinism $layout exact" "$NEED_DETERMINISM" "$CAP_DETERMINISM" --only determinism --layout "$layout" --kernels exact
  done
  # Reported beside it, never decisive: fast kernels in both layouts, and the shared pool's gather
  # flipped: off on the GPU (where exact kernels turn it on), to show what it changes there; on on
  # the CPU, where it must give the CPU's own bits. Run now while the benches' tools still build
  # (the GPU is idle then), else after the benches.
  flip=$([ "$GPU" = 1 ] && echo off || echo on)
  reported=("determinism shared fast|--layout shared --kernels fast" "determinism copied fast|--layout copied --kernels fast"
    "determinism shared exact, --kv-gather $flip|--layout shared --kernels exact --kv-gather $flip")
  reported_run() {
    # shellcheck disable=SC2086 # the flags after the bar are a list
    scorer_bench "${1%%|*}" "$NEED_DETERMINISM" "$CAP_DETERMINISM" --only determinism ${1#*|}
  }
  later=()
  for run in "${reported[@]}"; do
    if kill -0 "$bench_build" 2>/dev/null; then reported_run "$run"; else later+=("$run"); fi
  done

  if bench_tools; then
    # bench:api from the app folder, where it writes bench/out/api.json and bench/RESULTS.md. Its
    # servers get --kill-after's 20 s to stop inside the deadline.
    if fits bench:api "$NEED_API" "$(($(left) - 20))"; then
      say "-- bench:api: ours (exact, fast) against llama-server at concurrency $API_CONCURRENCY, ${API_SECONDS} s per server and cell in $API_ROUNDS rounds"
      rm -rf "$app/bench/out" "$app/bench/RESULTS.md"
      # One llama-server, this tree's: bench:api's natively built one would be a CPU-only llama.cpp
      # (GGML_NATIVE changes host code alone), built and measured on the host beside a GPU.
      if (cd "$app" && ARBITRA_MODEL="$model" BENCH_CONCURRENCY="$API_CONCURRENCY" BENCH_SECONDS="$API_SECONDS" BENCH_ROUNDS="$API_ROUNDS" \
        BENCH_THREADS="$THREADS" BENCH_NATIVE_BASELINE=0 timeout --kill-after=20 "$limit" node dist/bench/api.js) >>"$runlog" 2>&1; then
        cp "$app/bench/out/api.json" "$OUT/api.json"
        sed -n '/^## API$/,$p' "$app/bench/RESULTS.md" >"$OUT/api.md"
        grep -E '^\| [ab] \||^- Load-time check' "$OUT/api.md" | tee -a "$summary" >/dev/null
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
    if fits llama-bench "$NEED_LLAMA_BENCH" "$(cap "$CAP_LLAMA_BENCH")"; then
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
      scorer_bench "scorer bench $layout" "$NEED_SCORER" "$CAP_SCORER" --only prefill,decisions --layout "$layout" --seconds "$SECONDS_PER_POINT"
    done
  fi
  for run in "${later[@]}"; do reported_run "$run"; done

  [ ${#skipped[@]} = 0 ] || say "skipped for the deadline: ${skipped[*]}"
  judge
}

main "$@"
