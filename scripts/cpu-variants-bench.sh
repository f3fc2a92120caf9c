#!/usr/bin/env bash
# Measures issue 53's CPU variants on a processor this machine does not have: the device tool's
# host (no Node, no network; cmake, ninja, g++ and python3), from what scripts/device-pack.mjs
# packed into .device/ (llama.cpp's patched source, the default model's skeleton). It builds
# native/tools as a variants build (every CPU variant of cmake/llama-settings.cmake, each a module
# with the engine's own products compiled for its instructions) and, beside it, llama-bench as a
# llama.cpp user builds it (GGML_NATIVE; run with ARBITRA_INT8_KERNELS=off, llama.cpp's own
# kernels: hook.cc hands every weight back to them). On a synthetic model of the
# default's shapes and weight types, then, for every variant this processor runs:
#   1. arbitra-op-test --cpu-variant V: single ops bit for bit at every batch width, and every
#      quantized product of ours against the plain layout's;
#   2. the scorer bench's determinism probe with exact kernels in both KV layouts (--quick);
#   3. the scorer bench's cold prefill (512-token prefixes) with our products and with llama.cpp's
#      (ARBITRA_INT8_KERNELS=off), between two rounds of native llama-bench pp512.
# From the repository root (the device tool: command `bash scripts/cpu-variants-bench.sh`, carry
# .device, timeout_s 480):
#
#   OUT=/some/folder bash scripts/cpu-variants-bench.sh
#   MODEL=models/x.gguf THREADS=2 OUT=/tmp/out bash scripts/cpu-variants-bench.sh   # here, a real model
#
# Environment (defaults in brackets): WORK [/tmp/arbitra-cpu-bench]: unpacked source and builds,
# reused by a later run; PACK [.device]; MODEL: a GGUF instead of the synthetic one; SEED [1];
# JOBS [all cores]; THREADS [all cores]; DEADLINE [420]: seconds for the whole run, none runs past it.
#
# $OUT gets summary.txt (per variant: the op test's result, every determinism column, prefill
# tok/s and its ratio to native llama-bench), op-test.txt, scorer.jsonl, llama-bench.jsonl,
# build.log (the builds' tails) and run.log (the programs' stderr). Exit status: 0 when every
# variant this processor runs passed its op test and read 0 in every exact determinism column,
# 1 when one did not, 3 when the run stopped early (a build failed, the deadline).
set -uo pipefail

: "${OUT:?set OUT to the folder the results go to}"
WORK=${WORK:-/tmp/arbitra-cpu-bench}
PACK=${PACK:-.device}
SEED=${SEED:-1}
JOBS=${JOBS:-$(nproc)}
THREADS=${THREADS:-$(nproc)}
DEADLINE=${DEADLINE:-420}

main() {
  local started
  started=$(date +%s)
  left() { echo $((DEADLINE - ($(date +%s) - started))); }
  mkdir -p "$OUT" "$WORK" || exit 3
  summary="$OUT/summary.txt"
  runlog="$OUT/run.log"
  : >"$summary"
  : >"$runlog"
  : >"$OUT/op-test.txt"
  : >"$OUT/scorer.jsonl"
  : >"$OUT/llama-bench.jsonl"
  say() { echo "$*" | tee -a "$summary"; }
  fail() {
    say "STOPPED: $*"
    exit 3
  }
  say "cpu-variants-bench on $(hostname): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, threads $THREADS"
  say "of its flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512vl|avx512_vnni|avx_vnni|avx512_bf16|amx_int8)$' | tr '\n' ' ')"

  # The patched llama.cpp, once per pack.
  src="$WORK/llama.cpp"
  local want
  want=$(sha256sum "$PACK/llama.cpp.tar.xz" | cut -c1-16) || fail "no $PACK/llama.cpp.tar.xz"
  if [ "$(cat "$src.stamp" 2>/dev/null)" != "$want" ]; then
    rm -rf "$src" && mkdir -p "$src" && tar -xJf "$PACK/llama.cpp.tar.xz" -C "$src" || fail "could not unpack llama.cpp"
    echo "$want" >"$src.stamp"
  fi

  # The variants build of native/tools and llama.cpp's own native llama-bench, side by side.
  local tools="$WORK/tools" native="$WORK/native" t0
  t0=$(date +%s)
  {
    cmake -S native/tools -B "$tools" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_DIR="$src" -DARBITRA_CPU_VARIANTS=ON >/dev/null &&
      timeout "$(left)" cmake --build "$tools" -j "$JOBS" --target arbitra-op-test arbitra-scorer-bench arbitra-synth-gguf
  } >"$WORK/build-tools.log" 2>&1 &
  local tools_pid=$!
  {
    cmake -S native/tools -B "$native" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_DIR="$src" -DARBITRA_NATIVE=ON >/dev/null &&
      timeout "$(left)" cmake --build "$native" -j "$JOBS" --target llama-bench
  } >"$WORK/build-native.log" 2>&1 &
  local native_pid=$! tools_rc native_rc
  wait "$tools_pid"
  tools_rc=$?
  wait "$native_pid"
  native_rc=$?
  { tail -n 40 "$WORK/build-tools.log"; echo "---- native llama-bench"; tail -n 20 "$WORK/build-native.log"; } >"$OUT/build.log"
  [ "$tools_rc" = 0 ] || fail "the variants build of native/tools failed (build.log)"
  say "built native/tools (variants: $(cd "$tools/bin" && ls libggml-cpu-*.so | sed 's/libggml-cpu-//; s/\.so//' | tr '\n' ' ')) and native llama-bench (status $native_rc) in $(($(date +%s) - t0)) s"
  local bin="$tools/bin" lb="$native/bin/llama-bench"

  local model
  if [ -n "${MODEL:-}" ]; then
    model=$(realpath "$MODEL") || fail "MODEL not found: $MODEL"
  else
    model="$WORK/model-synth.gguf"
    want="$(sha256sum "$PACK/model.skel.gguf" | cut -c1-16)-$SEED"
    if [ "$(cat "$model.stamp" 2>/dev/null)" != "$want" ]; then
      "$bin/arbitra-synth-gguf" fill "$PACK/model.skel.gguf" "$model" --seed "$SEED" 2>>"$runlog" || fail "arbitra-synth-gguf fill failed (run.log)"
      echo "$want" >"$model.stamp"
    fi
  fi
  say "model: $model ($(stat -c %s "$model") bytes)"

  reference() {
    [ -x "$lb" ] || return 0
    [ "$(left)" -gt 40 ] || return 0
    ARBITRA_INT8_KERNELS=off timeout "$(left)" "$lb" -m "$model" -p 512 -n 0 -t "$THREADS" -r 2 -o jsonl >>"$OUT/llama-bench.jsonl" 2>>"$runlog" ||
      say "native llama-bench failed or ran out of time (run.log)"
  }
  reference

  local status=0 v
  for v in $(cd "$bin" && ls libggml-cpu-*.so | sed 's/libggml-cpu-//; s/\.so//'); do
    [ "$(left)" -gt 30 ] || fail "deadline before variant $v"
    echo "## cpu variant $v" >>"$OUT/op-test.txt"
    timeout "$(left)" "$bin/arbitra-op-test" --cpu-variant "$v" >>"$OUT/op-test.txt" 2>>"$OUT/op-test.txt"
    case $? in
      0) say "$v: op test ok" ;;
      2)
        say "$v: not on this processor"
        continue
        ;;
      *)
        say "$v: op test FAILED (op-test.txt)"
        status=1
        ;;
    esac
    local layout products
    for layout in shared copied; do
      [ "$(left)" -gt 30 ] || fail "deadline before $v's determinism ($layout)"
      timeout "$(left)" "$bin/arbitra-scorer-bench" --model "$model" --cpu-variant "$v" --threads "$THREADS" --layout "$layout" \
        --only determinism --quick --json "$OUT/scorer.jsonl" >/dev/null 2>>"$runlog" || say "$v: determinism ($layout) did not finish (run.log)"
    done
    for products in on off; do
      [ "$(left)" -gt 30 ] || fail "deadline before $v's prefill"
      ARBITRA_INT8_KERNELS=$products timeout "$(left)" "$bin/arbitra-scorer-bench" --model "$model" --cpu-variant "$v" --threads "$THREADS" \
        --only prefill --json "$OUT/scorer.jsonl" >/dev/null 2>>"$runlog" || say "$v: prefill (int8 kernels $products) did not finish (run.log)"
    done
  done
  reference

  python3 - "$OUT/scorer.jsonl" "$OUT/llama-bench.jsonl" <<'PY' | tee -a "$summary"
import json, sys
runs, bench = [], []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("bench") == "setup":
        runs.append({"setup": r, "det": [], "prefill": None})
    elif runs and r.get("bench") == "determinism":
        runs[-1]["det"].append(r)
    elif runs and r.get("bench") == "prefill":
        runs[-1]["prefill"] = r
for line in open(sys.argv[2]):
    line = line.strip()
    if line:
        bench.append(json.loads(line))
pp = [b["avg_ts"] for b in bench if b.get("n_prompt") == 512]
best = max(pp) if pp else None
print("native llama-bench pp512 (llama.cpp's kernels, GGML_NATIVE): %s tok/s; the faster: %s" % (
    " and ".join("%.1f" % x for x in pp) or "none", "%.1f" % best if best else "none"))
bad = 0
for run in runs:
    s = run["setup"]
    who = "%s, %s products" % (s.get("cpu_variant"), s.get("cpu_products"))
    if run["det"]:
        cols = ", ".join("%s %s" % (d.get("compare"), d.get("max_abs_diff")) for d in run["det"])
        if s.get("kernels") == "exact" and any(d.get("max_abs_diff") != 0 for d in run["det"]):
            bad += 1
        print("determinism, %s, %s layout, %s kernels: %s" % (who, s.get("layout"), s.get("kernels"), cols))
    if run["prefill"]:
        tok = run["prefill"].get("prefix_tok_s")
        ratio = " (%.2fx native llama-bench)" % (tok / best) if best and tok else ""
        print("prefill, %s: %.1f tok/s%s" % (who, tok or 0, ratio))
print("exact determinism columns not 0: %d run(s)" % bad)
sys.exit(1 if bad else 0)
PY
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  say "done in $(($(date +%s) - started)) s, status $status"
  exit "$status"
}

main "$@"
