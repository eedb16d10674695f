#!/usr/bin/env python3
"""Docs that are tested (docs/guide/tested-docs.md says what, and how to fix a failure).

Every `opmeter ...` command line in README.md and docs/**/*.md is run the cheap way: `run` and
`check` with --dry-run, `list`, `info`, `report` and `compare` for real on a tiny results
fixture, the rest (`calibrate`, `predict`) with the hidden --parse-only. A command fails when it
exits with an error, or when a file it reads is neither in the repository, nor the user's own file
the docs name (a fixture below), nor written by an earlier command of the same page. Every YAML
block is loaded as a config (`run FILE --dry-run`). Every file the outputs page lists as written
by a run is written by a real (tiny) run, or, where only some runs write it, named in the source.
Every relative link points at a file that exists.

Usage: docs_commands_test.py OPMETER SOURCE_DIR EXAMPLE_PLUGIN
"""
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

OPMETER, SOURCE, PLUGIN = (os.path.abspath(a) for a in sys.argv[1:4])
SUBCOMMANDS = {"run", "check", "calibrate", "report", "compare", "predict", "list", "info"}
CONFIG_LANGS = {"yaml", "yml"}
CODE_LANGS = {"python", "py", "c", "cpp", "c++", "json", "cmake", "cuda"}
PIPES = {"|", "||", "&&", ";", ">", ">>", "2>&1", "&", "2>/dev/null"}

# The user's own files that the docs name (and the raw results docs/BENCHMARKS.md's commands read):
# each gets a fixture of its kind in the sandbox.
USER_CONFIGS = {"my.yaml", "sweep.yaml"}
USER_RESULTS = {"res", "base", "new", "run1", "run2", "gemm", "gemm-cpu", "resnet50"}
USER_MODELS = {"model.json"}  # read only by `predict`, which is parse-checked
USER_CALIBRATIONS = {"cal.json", "calibration.json", "opmeter-calibration.json"}

failures = []


def fail(where, what):
    failures.append(f"{where}: {what}")


def doc_files():
    files = [os.path.join(SOURCE, "README.md")]
    files += sorted(f for f in glob.glob(os.path.join(SOURCE, "docs", "**", "*.md"), recursive=True)
                    if not os.path.relpath(f, os.path.join(SOURCE, "docs")).startswith("results" + os.sep))
    return files


def command_tokens(text):
    """The tokens of an opmeter command line, or None when the line is not one."""
    text = text.strip()
    if text.startswith("$ "):
        text = text[2:]
    try:
        tokens = shlex.split(text, comments=True)
    except ValueError:
        return None
    while tokens and re.match(r"^[A-Z_][A-Z0-9_]*=", tokens[0]):  # VAR=value before the command
        tokens = tokens[1:]
    if len(tokens) < 2 or not (tokens[0] == "opmeter" or tokens[0].endswith("/opmeter")):
        return None
    if tokens[1] not in SUBCOMMANDS and not tokens[1].startswith("-"):
        return None  # output such as "opmeter check: 9 cases"
    for i, t in enumerate(tokens):
        if t in PIPES:
            return tokens[:i]
    return tokens


def is_synopsis(tokens):
    """An inline `opmeter report RESULTS... [-o FILE]` describes a command; it is not one to run."""
    return any(re.fullmatch(r"[A-Z][A-Z0-9_]*(\.\.\.)?", t) or t.startswith("[") or "<" in t or "..." in t or t.endswith("]")
               for t in tokens[1:])


def extract(path):
    """(line, tokens) of each command and (line, text) of each YAML block of a markdown file."""
    commands, configs = [], []
    lang, block, start, pending, pending_line = None, [], 0, "", 0
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        fence = re.match(r"^\s*```(\S*)", line)
        if fence:
            if lang is None:
                lang, block, start = fence.group(1).lower(), [], n
            else:
                if lang in CONFIG_LANGS:
                    configs.append((start, "\n".join(block) + "\n"))
                lang = None
            continue
        if lang is not None:
            block.append(line)
            if lang in CONFIG_LANGS or lang in CODE_LANGS:
                continue
            if line.rstrip().endswith("\\"):  # a command continued on the next line
                pending, pending_line = pending + line.rstrip()[:-1] + " ", pending_line or n
                continue
            text, at = pending + line, pending_line or n
            pending, pending_line = "", 0
            tokens = command_tokens(text)
            if tokens:
                commands.append((at, tokens))
            continue
        for span in re.findall(r"`(opmeter [^`]+)`", line):  # inline, in prose and tables
            tokens = command_tokens(span)
            if tokens and not is_synopsis(tokens) and not is_mention(tokens):
                commands.append((n, tokens))
    return commands, configs


def check_links(path):
    """Every relative link of a page points at a file or folder that exists. Returns how many."""
    checked = 0
    text = re.sub(r"```.*?```", "", open(path, encoding="utf-8").read(), flags=re.S)  # not in code blocks
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:|^#", target):
            continue
        checked += 1
        if not os.path.exists(os.path.join(os.path.dirname(path), target.split("#")[0])):
            fail(os.path.relpath(path, SOURCE), f"links to '{target}', which does not exist")
    return checked


def sh(args, cwd, timeout=60):
    try:
        p = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                           env=dict(os.environ, OMP_WAIT_POLICY="passive"))
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout} s"
    return p.returncode, (p.stdout + p.stderr)[-1500:]


class Sandbox:
    """A directory that looks like the repository's root (its top-level entries linked), with the
    user's own files of the docs made as fixtures on demand."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="opmeter-docs-")
        for entry in os.listdir(SOURCE):
            if entry not in (".git", "build") and not entry.startswith("build"):
                os.symlink(os.path.join(SOURCE, entry), os.path.join(self.dir, entry))
        os.mkdir(os.path.join(self.dir, ".out"))
        self.results = os.path.join(self.dir, ".fixture-results")
        code, out = sh([OPMETER, "run", "--case", "relu/reference/fp32/batch=1,seq=4,hidden=64/threads=1",
                        "--samples", "3", "--warmup", "1", "--out", self.results], self.dir, timeout=120)
        if code != 0:
            sys.exit(f"the fixture run failed ({code}):\n{out}")
        shutil.copy(PLUGIN, os.path.join(self.dir, "libmine.so"))
        shutil.copy(os.path.join(SOURCE, "examples", "kernels", "my_kernels.py"), self.dir)

    def path(self, p):
        return os.path.normpath(os.path.join(self.dir, p))

    def make(self, p, kind):
        """Makes p a fixture of kind: results, check, config, calibration, model."""
        full = self.path(p)
        if os.path.lexists(full):
            return
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if kind == "results" and p.rstrip("/").endswith(".json"):
            shutil.copy(os.path.join(self.results, "results.json"), full)
        elif kind == "results":
            shutil.copytree(self.results, full)
            os.remove(os.path.join(full, ".opmeter.lock"))
        elif kind == "check":  # a check.json, as `opmeter check -o DIR` writes it
            code, out = sh([OPMETER, "check", "--op", "relu", "--impl", "reference", "--quick", "-o", full], self.dir)
            if code != 0:
                sys.exit(f"the check fixture failed ({code}):\n{out}")
        elif kind == "config":
            open(full, "w").write("ops: [relu, layernorm]\nimpls: [opmeter]\ndtypes: [fp32]\n"
                                  "batch: [1]\nseq: [4]\nhidden: [64]\nthreads: 1\n")
        elif kind == "calibration":
            json.dump({"schema": "opmeter-calibration/1", "threads": 2, "peak_gflops": {"fp32": 100.0},
                       "bandwidth": {"memory_gbps": 10.0}}, open(full, "w"))
        else:
            open(full, "w").write("{}\n")


_value_options = {}


def value_options(sub):
    """The options of a subcommand that take a value, from its --help (so this list cannot drift)."""
    if sub not in _value_options:
        names = set()
        for cmd in ([sub], ["predict", "fit"], ["predict", "plan"]) if sub == "predict" else ([sub],):
            text = subprocess.run([OPMETER] + cmd + ["--help"], capture_output=True, text=True).stdout
            for m in re.finditer(r"^  ((?:-\w,)?--[\w-]+)[ \t]+[A-Z]", text, re.M):
                names.update(m.group(1).split(","))
        _value_options[sub] = names
    return _value_options[sub]


def is_mention(tokens):
    """`opmeter compare` or `opmeter run --case` in a sentence names a command; it is not one to run."""
    sub = tokens[1]
    rest = tokens[2:]
    if sub == "predict" and rest[:1] in (["fit"], ["plan"]):
        rest = rest[1:]
    return not rest or rest[-1] in value_options(sub)


def inputs_and_outputs(tokens):
    """The paths a command reads, each with its kind, and the paths it writes (--out, -o)."""
    sub = tokens[1] if tokens[1] in SUBCOMMANDS else "run"
    args = tokens[2:] if tokens[1] in SUBCOMMANDS else tokens[1:]
    reads, writes = [], []
    takes_value = value_options(sub)
    positional = []
    i = 0
    while i < len(args):
        a, value = args[i], None
        if "=" in a and a.startswith("--"):
            a, value = a.split("=", 1)
        elif a in takes_value and i + 1 < len(args):
            value = args[i + 1]
            i += 1
        elif not a.startswith("-"):
            positional.append(a)
        if value is not None:
            if a in ("--out", "-o", "--md") or (a == "--results" and sub == "calibrate"):
                writes.append((value, "calibration" if sub == "calibrate" and a == "--out" else
                               "model" if sub == "predict" else "check" if sub == "check" else "results"))
            elif a in ("--resume", "--measured"):
                reads.append((value, "check" if sub == "check" else "results"))
            elif a == "--calibration":
                reads.append((value, "calibration"))
            elif a == "--kernel":
                reads.append((value.split(":")[0], "file"))
            elif a in ("--plugin", "--fusion"):
                reads.append((value, "file" if a == "--plugin" else "config"))
        i += 1
    if sub == "run":
        reads += [(p, "config") for p in positional]
    elif sub in ("report", "compare"):
        reads += [(p, "results") for p in positional]
    elif sub == "predict" and positional[:1] == ["fit"]:
        reads += [(p, "results") for p in positional[1:]]
    elif sub == "predict" and positional[:1] == ["plan"]:
        reads += [(p, k) for p, k in zip(positional[1:3], ("model", "config"))]
    elif sub == "predict" and positional:
        reads.append((positional[0], "model"))
        for p in positional[1:]:  # case strings and pipelines (resnet50:batch=1) are not files
            if "=" not in p and ("/" in p or p.endswith((".yaml", ".yml", ".json", ".jsonl"))):
                reads.append((p, "config" if p.endswith((".yaml", ".yml")) else "results"))
    return sub, reads, writes


def user_kind(p):
    name = os.path.basename(p.rstrip("/"))
    if name in USER_CONFIGS:
        return "config"
    if name in USER_RESULTS or p.rstrip("/").split("/")[0] in USER_RESULTS:
        return "results"
    if name in USER_MODELS:
        return "model"
    if name in USER_CALIBRATIONS:
        return "calibration"
    return None


def resumed_run_of(sandbox, results, tokens):
    """`run my.yaml --resume res/` continues a run of my.yaml (opmeter refuses another plan's): the
    results fixture says so in its run.json."""
    configs = [t for t in tokens[2:] if t.endswith((".yaml", ".yml")) and not t.startswith("-")]
    if not configs:
        return
    run_json = os.path.join(sandbox.path(results), "run.json")
    j = json.load(open(run_json))
    for key in ("case", "suite", "pipelines"):
        j["run"].pop(key, None) if "run" in j else j.pop(key, None)
    (j["run"] if "run" in j else j)["config"] = sandbox.path(configs[0])
    json.dump(j, open(run_json, "w"))


def check_command(sandbox, where, tokens, written):
    sub, reads, writes = inputs_and_outputs(tokens)
    for p, kind in reads:
        if os.path.lexists(sandbox.path(p)):
            continue
        made_by = written.get(os.path.normpath(p))
        if made_by or user_kind(p):
            sandbox.make(p, made_by or user_kind(p))
            if sub == "run" and "--resume" in tokens and kind == "results":
                resumed_run_of(sandbox, p, tokens)
        else:
            fail(where, f"names a missing file '{p}': {' '.join(tokens)}")
            return
    for p, kind in writes:
        written[os.path.normpath(p)] = kind
    args = [OPMETER] + tokens[1:]
    if sub in ("run", "check"):
        if "--dry-run" not in args and "--sanitize" not in args:
            args.append("--dry-run")
    elif sub in ("calibrate", "predict"):
        args.insert(1, "--parse-only")
    for i, a in enumerate(args):  # outputs go into the sandbox, never into the checkout
        if i > 0 and args[i - 1] in ("--out", "-o", "--md") and sub not in ("calibrate", "predict"):
            args[i] = os.path.join(sandbox.dir, ".out", a)
    code, out = sh(args, sandbox.dir)
    allowed = (0, 1) if sub == "compare" else (0,)
    if code == 2 and "No module named 'torch'" in out:  # the machine's Python lacks PyTorch, not the docs
        print(f"note: {where}: not checked, this Python has no PyTorch: {' '.join(tokens)}")
    elif code not in allowed:
        fail(where, f"exit code {code}: {' '.join(tokens)}\n{out}")


def check_config(sandbox, where, text, n):
    path = os.path.join(sandbox.dir, f".doc-config-{n}.yaml")
    open(path, "w").write(text)
    code, out = sh([OPMETER, "run", path, "--dry-run"], sandbox.dir)
    if code != 0:
        fail(where, f"the config does not load (exit code {code}):\n{text}\n{out}")


def check_outputs(sandbox):
    """Every file the outputs page's table lists: written by a run, or named in the source. Returns
    how many it checked."""
    checked = 0
    page = os.path.join(SOURCE, "docs", "guide", "outputs.md")
    sources = "".join(open(f, encoding="utf-8", errors="replace").read()
                      for f in glob.glob(os.path.join(SOURCE, "src", "**", "*.[ch]pp"), recursive=True))
    in_table = False  # the table of a run's files: its header is `| file | what |`
    for n, line in enumerate(open(page, encoding="utf-8"), 1):
        in_table = line.strip() == "| file | what |" or (in_table and line.startswith("|"))
        m = re.match(r"^\| `([^`]+)` \| (.*)\|$", line.strip())
        if not in_table or not m or "." not in m.group(1):
            continue
        name, what = m.group(1), m.group(2)
        where = f"docs/guide/outputs.md:{n}"
        checked += 1
        if " only" in what or what.startswith("runs with"):
            if f'"{name}"' not in sources:
                fail(where, f"lists '{name}', which no source file names")
        elif not os.path.exists(os.path.join(sandbox.results, name)):
            fail(where, f"lists '{name}', which a run does not write (it wrote {sorted(os.listdir(sandbox.results))})")
    if checked < 5:
        fail("docs/guide/outputs.md", f"its table of files lists {checked}: the check no longer finds it")
    return checked


def main():
    sandbox = Sandbox()
    count_commands = count_configs = count_outputs = count_links = 0
    try:
        for path in doc_files():
            rel = os.path.relpath(path, SOURCE)
            commands, configs = extract(path)
            written = {}
            for line, tokens in commands:
                check_command(sandbox, f"{rel}:{line}", tokens, written)
            for line, text in configs:
                check_config(sandbox, f"{rel}:{line}", text, count_configs)
                count_configs += 1
            count_commands += len(commands)
            count_links += check_links(path)
        count_outputs = check_outputs(sandbox)
    finally:
        shutil.rmtree(sandbox.dir, ignore_errors=True)
    for f in failures:
        print("FAIL", f, "\n")
    print(f"{count_commands} command lines, {count_configs} configs, {count_outputs} output files and {count_links} links "
          "in the docs checked; "
          f"{len(failures)} failed")
    if count_commands < 20:
        print("too few command lines found: the extraction is broken")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
