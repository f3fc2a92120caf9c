#!/usr/bin/env python3
"""The device call's verdict (scripts/gpu-bench.sh): are the exact kernels deterministic there?

Reads what the call wrote: the scorer bench's JSONL (every arbitra-scorer-bench run appends one
"setup" record, then one record per measurement) and the op test's text output. Prints one line on
stdout and exits with its status:

  deterministic                             0: every judged column is 0 and every required op test ok
  NOT deterministic: <column> <difference>  1: the first judged column that is not 0, with its layout
  NOT deterministic: op test <case>         1: the first required op test that reads "not ok"
  NO VERDICT: <why>                         2: no difference, but the evidence is incomplete

A difference decides even when other evidence is missing; NO VERDICT only when none was found.
Lines on stderr say what was read: every determinism column, judged or reported, and each op test
backend's required and reported cases.

What is judged (native/tools/scorer_bench.cc and native/tests/op_invariance_test.cc are the
sources):
- Scorer bench: a run's records follow its {"bench":"setup",...} record, whose "kernels" ("exact"
  or "fast"), "layout" ("shared" or "copied"), "kv_gather", "gpu_layers" and "gpus" say what ran.
  Its {"bench":"determinism","layout":...,"compare":<column>,"max_abs_diff":<n or null>,...}
  records are the columns (cold_vs_cached, alone_vs_batched, alone_vs_batched_cached,
  cold_vs_head_cached, copied_vs_shared); "max_abs_diff" is the largest log-prob difference in
  nats, null when it was not finite (a NaN), and an "error" key means the probe was not scored.
  Judged: every determinism run (one that wrote determinism records) with exact kernels, except a
  shared-pool run on a GPU (gpu_layers > 0 and a GPU named in "gpus") with its gather off: the
  exact kernels turn the gather on there by themselves, and the call runs it off only to show what
  the gather changes. Nor is a run whose setup says the context resolved another path than the
  promise covers ("flash_attn_resolved" false, or on a GPU "flash_attn_on_layer_device" false):
  its columns are reported, and it is a gap, so such a call reads NO VERDICT, never deterministic. An exact column must be 0, bit for bit. Fast kernels' columns (and that
  gather-off run) are reported, never judged. Both layouts need a judged run, and every judged run
  all five columns without an error. The setup record does not say which measurements a run was
  asked for, so a run that wrote nothing after it (killed at once) is reported, not counted
  missing: its step's failure is what makes the call's status non-zero.
- Op test: "# backend <name> (<type> device)" starts a backend's section (type CPU or GPU), with
  ", stock kernels: reported, not required" inside the brackets when none of it is required (the
  stock kernels, --stock); "ok <case> [<tag>]" / "not ok <case> [<tag>]" is a case's result, the tag
  the backends it is required of: "[every backend]", or "[CPU only]" (a property only the CPU's
  exact kernel has: an F16 product, which CUDA leaves to its stock kernels, attention over cells in
  any order); "  FAIL <case>: <what>" is one failed check under it; "<n> failure(s)" closes the
  output with the required cases' failed checks. Required: every case of a CPU section, the
  "[every backend]" cases of a GPU section (its "[CPU only]" cases are reported apart, never
  decisive). An older output's untagged case, or a section with no type, is held as required, an
  old "# backend <name> (reported, not required)" section as reported. The output must be complete
  (its closing line) and have a required section, and a GPU call (a scorer bench run with layers on
  a GPU) a GPU section with a required case.
"""

import argparse
import json
import re
import sys

COLUMNS = ("cold_vs_cached", "alone_vs_batched", "alone_vs_batched_cached", "cold_vs_head_cached", "copied_vs_shared")
LAYOUTS = ("shared", "copied")

BACKEND = re.compile(r"^# backend (\S+)(?: \((.*)\))?$")
RESULT = re.compile(r"^(not ok|ok) (.+?)(?: \[(every backend|CPU only)\])?$")
CLOSING = re.compile(r"^(\d+) failure\(s\)$")


def number(x):
    """A difference as the bench prints it (%.6g); null is the bench's word for not finite."""
    return "inf or NaN" if x is None else "%.6g" % x


def off_path(setup, on_gpu):
    """Why exact kernels ran off the path their promise covers, by what the context resolved; None
    when on it (or when the setup record, from an older bench, does not say)."""
    if setup.get("flash_attn_resolved") is False:
        return "flash attention resolved off"
    if on_gpu and setup.get("flash_attn_on_layer_device") is False:
        return "flash attention runs on another device than its layers"
    return None


class Run:
    """One scorer bench run: its setup record and the determinism columns that followed it."""

    def __init__(self, setup, line):
        self.setup = setup
        self.line = line
        self.layout = setup.get("layout", "?")
        self.kernels = setup.get("kernels", "?")
        self.columns = []  # (compare, record) in file order
        self.others = 0  # records of other measurements (prefill, decisions, memory)
        self.on_gpu = (setup.get("gpu_layers") or 0) > 0 and bool(setup.get("gpus"))
        self.gpu_without_gather = self.layout == "shared" and self.on_gpu and setup.get("kv_gather") is False
        self.off_path = self.kernels == "exact" and off_path(setup, self.on_gpu)
        self.exact = self.kernels == "exact" and not self.gpu_without_gather and not self.off_path

    @property
    def judged(self):
        """Exact kernels on the path they promise, and a determinism run: it wrote such records."""
        return self.exact and bool(self.columns)

    def name(self):
        gather = "" if self.layout != "shared" else ", gather on" if self.setup.get("kv_gather") else ", gather off"
        return "%s layout, %s kernels%s (setup on line %d)" % (self.layout, self.kernels, gather, self.line)


def read_scorer(path, notes):
    """The runs in a scorer bench JSONL file, or None when the file cannot be read."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        notes.append("cannot read %s: %s" % (path, e.strerror))
        return None
    runs = []
    for n, text in enumerate(lines, 1):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except ValueError:
            notes.append("%s line %d is not JSON: %s" % (path, n, text[:80]))
            continue
        if not isinstance(record, dict):
            continue
        if record.get("bench") == "setup":
            runs.append(Run(record, n))
        elif record.get("bench") == "determinism":
            if not runs:
                notes.append("%s line %d: a determinism record before any setup record" % (path, n))
                continue
            runs[-1].columns.append((record.get("compare", "?"), record))
        elif runs:
            runs[-1].others += 1
    return runs


def judge_scorer(runs, differences, gaps, report):
    for run in runs:
        if run.kernels == "exact" and run.gpu_without_gather:
            why = " (reported: the exact kernels' GPU path gathers the shared pool)"
        elif run.off_path:
            why = " (reported: off the covered path, %s)" % run.off_path
            gaps.append("exact kernels ran off their covered path: %s (%s layout)" % (run.off_path, run.layout))
        else:
            why = "" if run.judged else " (reported)"
        shown = []
        for compare, record in run.columns:
            diff = record.get("max_abs_diff")
            error = record.get("error")
            shown.append("%s %s" % (compare, "error: %s" % error if error else number(diff) if isinstance(diff, (int, float, type(None))) else repr(diff)))
            if not run.judged:
                continue
            if error:
                gaps.append("%s %s: %s" % (run.layout, compare, error))
            elif "max_abs_diff" not in record or isinstance(diff, bool) or not isinstance(diff, (int, float, type(None))):
                gaps.append("%s %s: no max_abs_diff" % (run.layout, compare))
            elif diff is None or diff != 0:
                differences.append("%s %s (%s layout, exact kernels)" % (compare, number(diff), run.layout))
        if run.columns:
            report.append("%s%s: %s" % (run.name(), why, ", ".join(shown)))
        elif not run.others:
            # A determinism run killed before its records, or another measurement's: the setup
            # record does not say which. The step's time-out makes the call's status non-zero.
            report.append("%s: nothing after its setup record (stopped?)" % run.name())
        if run.judged:
            present = {c for c, _ in run.columns}
            missing = [c for c in COLUMNS if c not in present]
            if missing:
                gaps.append("%s: no %s" % (run.name(), ", ".join(missing)))
    for layout in LAYOUTS:
        if not any(r.judged and r.layout == layout for r in runs):
            gaps.append("no exact-kernel determinism run in the %s layout" % layout)


class Section:
    """One backend's section of the op test's output."""

    def __init__(self, name, notes):
        self.name = name
        notes = notes or ""
        self.reported = "reported, not required" in notes
        m = re.match(r"(CPU|GPU) device", notes)
        self.device = m.group(1) if m else None
        self.results = []  # (case, ok, tag) in output order

    def required(self, tag):
        """Whether a case with this tag decides on this backend."""
        return not self.reported and (tag != "CPU only" or self.device != "GPU")

    def describe(self):
        kind = "%s device" % self.device if self.device else "no device type"
        if self.reported:
            return "%s, every case reported" % kind
        return kind

    def summary(self):
        parts = []
        for label, decides in (("required", True), ("reported", False)):
            cases = [(c, ok, tag) for c, ok, tag in self.results if self.required(tag) == decides]
            if not cases and not decides:
                continue
            bad = ["\n  not ok %s%s" % (c, " [%s]" % tag if tag else "") for c, ok, tag in cases if not ok]
            parts.append("%s: %d ok, %d not ok%s" % (label, len(cases) - len(bad), len(bad), "".join(bad)))
        return "op test, backend %s (%s): %s" % (self.name, self.describe(), "; ".join(parts))


def judge_op_test(path, failures, gaps, report, on_gpu):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        gaps.append("no op test output (%s): it did not run" % path)
        return
    sections = []
    closing = None
    for text in lines:
        m = BACKEND.match(text)
        if m:
            sections.append(Section(m.group(1), m.group(2)))
            continue
        m = RESULT.match(text)
        if m:
            if not sections:  # results before any backend line: held as required
                sections.append(Section("(no backend line)", None))
            sections[-1].results.append((m.group(2), m.group(1) == "ok", m.group(3)))
            continue
        m = CLOSING.match(text)
        if m:
            closing = int(m.group(1))
    for s in sections:
        report.append(s.summary())
        failures.extend("op test %s (backend %s)" % (c, s.name) for c, ok, tag in s.results if not ok and s.required(tag))
    if closing is None:
        gaps.append("the op test did not finish (no closing 'N failure(s)' line in %s)" % path)
    elif closing > 0 and not failures:
        failures.append("op test: %d required failure(s), no case named" % closing)
    if not any(s.required(tag) for s in sections for _, _, tag in s.results):
        gaps.append("the op test ran no required backend")
    if on_gpu and not any(s.device == "GPU" and s.required(tag) for s in sections for _, _, tag in s.results):
        gaps.append("the op test ran no GPU backend's required cases, on a GPU call")


def verdict(scorer, op_test):
    """The verdict line, its exit status, and the lines that say what was read."""
    differences, failures, gaps, report = [], [], [], []
    runs = read_scorer(scorer, report)
    if runs is None:
        gaps.append("no scorer bench records (%s)" % scorer)
    else:
        judge_scorer(runs, differences, gaps, report)
    on_gpu = bool(runs) and any(r.on_gpu for r in runs)
    judge_op_test(op_test, failures, gaps, report, on_gpu)
    offending = differences + failures
    if offending:
        more = ", first of %d" % len(offending) if len(offending) > 1 else ""
        return "NOT deterministic: %s%s" % (offending[0], more), 1, report + ["differs: " + o for o in offending] + ["incomplete: " + g for g in gaps]
    if gaps:
        more = ", first of %d" % len(gaps) if len(gaps) > 1 else ""
        return "NO VERDICT: %s%s" % (gaps[0], more), 2, report + ["incomplete: " + g for g in gaps]
    return "deterministic", 0, report


def main():
    p = argparse.ArgumentParser(description="The device call's verdict from the scorer bench's JSONL and the op test's output.")
    p.add_argument("--scorer", required=True, help="the scorer bench's JSONL ($OUT/scorer.jsonl)")
    p.add_argument("--op-test", required=True, help="arbitra-op-test's output ($OUT/op-test.txt)")
    args = p.parse_args()
    line, status, report = verdict(args.scorer, args.op_test)
    for r in report:
        print(r, file=sys.stderr)
    print(line)
    return status


if __name__ == "__main__":
    sys.exit(main())
