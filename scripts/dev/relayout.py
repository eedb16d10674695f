#!/usr/bin/env python3
"""Moves files to where issue 30 item 4 puts them and rewrites what names them. Re-playable.

- src/quant/ serves only linear: it becomes ops/linear/quant/.
- ops/peak/datasheet.* is the CUDA backend's: src/cuda/datasheet.*, its tests (PeakDatasheet.*,
  from tests/peak_test.cpp) in tests/cuda_datasheet_test.cpp.
- include/opmeter/ keeps what a library user or a plugin author needs; the internal headers
  (runner, config, pipeline_plan, telemetry, reporter_registry, graph_timing, interrupt) go to
  src/, next to their .cpp.
- The CUDA helpers that ops' impls include go to one public place, include/opmeter/cuda/.
- One include style everywhere: "opmeter/x.hpp" for include/, "engine/runner.hpp" (the path from
  src/) for src/, the path from the repository root for the rest ("ops/linear/linear.hpp",
  "tests/cli_helpers.hpp"); never "../" nor "src/...".

Each #include of the tree is resolved the way the compiler finds it (the including file's folder,
include/, the repository root, src/) and written in that style at the file's new place; each
mention of a moved path in text files (CMake, docs, scripts, comments) is rewritten too. Files
are moved with `git mv`. Running it twice changes nothing the second time, and it can be run
again on a tree where other branches added files: whatever the tree holds then is moved and
rewritten. Run from anywhere in the repository:

    scripts/dev/relayout.py            # apply
    scripts/dev/relayout.py --check    # exit 1 (and say what) if it would change anything
"""
import os
import re
import subprocess
import sys

ROOT = subprocess.run(['git', 'rev-parse', '--show-toplevel'], capture_output=True, text=True,
                      check=True, cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()

# Folders moved whole (every file they hold when the script runs).
FOLDER_MOVES = [
    ('src/quant/', 'ops/linear/quant/'),
]
# Single files.
FILE_MOVES = [
    # The launch's communicator serves the engine (energy summed over ranks) and the collectives;
    # in src/scale it closed an engine -> scale -> results -> engine cycle.
    ('src/scale/launch_comm.hpp', 'src/engine/launch_comm.hpp'),
    ('src/scale/launch_comm.cpp', 'src/engine/launch_comm.cpp'),
    ('ops/peak/datasheet.hpp', 'src/cuda/datasheet.hpp'),
    ('ops/peak/datasheet.cpp', 'src/cuda/datasheet.cpp'),
    # Internal headers, next to their .cpp.
    ('include/opmeter/runner.hpp', 'src/engine/runner.hpp'),
    ('include/opmeter/graph_timing.hpp', 'src/engine/graph_timing.hpp'),
    ('include/opmeter/config.hpp', 'src/config/config.hpp'),
    ('include/opmeter/pipeline_plan.hpp', 'src/pipeline/pipeline_plan.hpp'),
    ('include/opmeter/telemetry.hpp', 'src/sensors/telemetry.hpp'),
    ('include/opmeter/reporter_registry.hpp', 'src/report/reporter_registry.hpp'),
    ('include/opmeter/interrupt.hpp', 'src/util/interrupt.hpp'),
    # What an op's CUDA impl includes: public, in one place.
    ('src/cuda/cuda_plugin.hpp', 'include/opmeter/cuda/cuda_plugin.hpp'),
    ('src/cuda/kernel_gate.hpp', 'include/opmeter/cuda/kernel_gate.hpp'),
    ('src/cuda/plugin/device.hpp', 'include/opmeter/cuda/device.hpp'),
    ('src/cuda/plugin/device_impl.hpp', 'include/opmeter/cuda/device_impl.hpp'),
    ('src/cuda/plugin/sm_info.hpp', 'include/opmeter/cuda/sm_info.hpp'),
    ('src/cuda/plugin/float_convert.cuh', 'include/opmeter/cuda/float_convert.cuh'),
    ('src/cuda/plugin/reduce.cuh', 'include/opmeter/cuda/reduce.cuh'),
    ('src/cuda/plugin/vector_io.cuh', 'include/opmeter/cuda/vector_io.cuh'),
    ('src/cuda/cudnn/graph.hpp', 'include/opmeter/cuda/cudnn_graph.hpp'),
    ('src/cuda/cudnn/engine_choice.hpp', 'include/opmeter/cuda/cudnn_engine_choice.hpp'),
    ('src/cuda/factory.hpp', 'include/opmeter/cuda/factory.hpp'),
    ('src/cuda/cuda_impl.hpp', 'include/opmeter/cuda/cuda_impl.hpp'),
    # The calibration profile is read by the runner: engine's, so that results -> engine stays one way.
    ('src/results/calibration_profile.hpp', 'src/engine/calibration_profile.hpp'),
    ('src/results/calibration_profile.cpp', 'src/engine/calibration_profile.cpp'),
]
# Tests that follow a moved file: from, to, the TEST suites that move, what the new file includes,
# and words of the old file's opening comment that no longer hold.
TEST_MOVES = [
    ('tests/peak_test.cpp', 'tests/cuda_datasheet_test.cpp', ['PeakDatasheet'],
     ['cuda/datasheet.hpp', 'opmeter/case.hpp', 'opmeter/dtype.hpp', 'opmeter/result.hpp'],
     [(' the datasheet table,', '')]),
]
# The CUDA targets compiled without src/ on their include path get it (internal headers are
# named from src/ everywhere).
CMAKE_INCLUDE_FIXES = [
    ('target_include_directories(opmeter_cuda_sm90a PRIVATE include ${CMAKE_CURRENT_SOURCE_DIR})',
     'target_include_directories(opmeter_cuda_sm90a PRIVATE include ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/src)'),
    ('target_include_directories(opmeter_cuda_sm80 PRIVATE include ${CMAKE_CURRENT_SOURCE_DIR})',
     'target_include_directories(opmeter_cuda_sm80 PRIVATE include ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/src)'),
]

CODE_SUFFIXES = ('.cpp', '.hpp', '.h', '.c', '.cu', '.cuh', '.inc', '.cpp.in')
TEXT_SUFFIXES = CODE_SUFFIXES + ('.md', '.txt', '.cmake', '.py', '.sh', '.yml', '.yaml', '.json.in')
# Never rewritten: recorded results, third-party files, this script.
SKIP_PREFIXES = ('docs/results/', 'web/node_modules/', 'scripts/dev/relayout.py')
INCLUDE = re.compile(r'^(\s*#\s*include\s*)"([^"]+)"', re.M)


def tracked():
    out = subprocess.run(['git', 'ls-files', '-z'], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    return [p for p in out.split('\0') if p and os.path.isfile(os.path.join(ROOT, p))]


def moves_of(files):
    """{old path: new path} for the files of the tree now (folder moves expanded)."""
    moves = {}
    for old, new in FOLDER_MOVES:
        for p in files:
            if p.startswith(old):
                moves[p] = new + p[len(old):]
    for old, new in FILE_MOVES:
        if old in files:
            moves[old] = new
    return moves


def resolve(including, spelled, files):
    """The tracked file an #include "spelled" in `including` names, as the compiler finds it."""
    for base in (os.path.dirname(including), 'include', '', 'src'):
        p = os.path.normpath(os.path.join(base, spelled))
        if p in files:
            return p
    return None


def spelling(target):
    """How a file is named in an #include, in the one style."""
    for prefix in ('include/', 'src/'):
        if target.startswith(prefix):
            return target[len(prefix):]
    return target


def old_spellings():
    """{spelling: new spelling} of every moved header's old place, from the tables: a file merged
    in after the moves may still name the old place, which no longer exists."""
    names = {}
    for old, new in FILE_MOVES:
        for spelled in {spelling(old), old}:
            names[spelled] = spelling(new)
    return names


def rewrite_includes(path, text, files, moves):
    renamed = old_spellings()

    def fix(m):
        spelled = m.group(2)
        target = resolve(path, spelled, files)
        if target is None:
            for old, new in FOLDER_MOVES:  # "quant/recipe.hpp" after the folder moved
                for prefix in (old, spelling(old)):
                    if spelled.startswith(prefix):
                        return f'{m.group(1)}"{spelling(new + spelled[len(prefix):])}"'
            if spelled in renamed:
                return f'{m.group(1)}"{renamed[spelled]}"'
            return m.group(0)  # a system or generated header
        return f'{m.group(1)}"{spelling(moves.get(target, target))}"'
    return INCLUDE.sub(fix, text)


def path_pattern(old):
    # A path as a word of its own: not the tail of a longer path (xsrc/quant/...).
    return re.compile(r'(?<![\w./-])' + re.escape(old) + r'(?![\w-])')


def rewrite_mentions(text, moves):
    moves = {**dict(FILE_MOVES), **moves}  # the tables too: a doc merged in after the moves
    for old, new in sorted(moves.items(), key=lambda kv: -len(kv[0])):
        text = path_pattern(old).sub(new, text)
        # How it was included, quoted in prose ("cuda/cuda_plugin.hpp", `opmeter/runner.hpp`).
        text = re.sub(r'(?<=["`])' + re.escape(spelling(old)) + r'(?=["`])', spelling(new), text)
    for old, new in FOLDER_MOVES:
        text = path_pattern(old).sub(new, text)
        text = path_pattern(old.rstrip('/')).sub(new.rstrip('/'), text)
    text = path_pattern('ops/peak/datasheet.*').sub('src/cuda/datasheet.*', text)
    return text


def split_tests(text, suites):
    """(text without the TESTs of `suites`, those TESTs' text)."""
    block = re.compile(r'^TEST(?:_F)?\((' + '|'.join(map(re.escape, suites)) + r'),.*?^}\n\n?', re.M | re.S)
    moved = block.findall(text) and [m.group(0) for m in block.finditer(text)]
    return block.sub('', text), moved or []


def main():
    check = '--check' in sys.argv[1:]
    files = tracked()
    file_set = set(files)
    moves = {old: new for old, new in moves_of(files).items()}
    for old, new in moves.items():
        if new in file_set:
            sys.exit(f'relayout: both {old} and {new} exist: merge them by hand first')

    # New contents, computed on the tree as it is (includes resolve against the old places).
    changed = {}  # new path -> text
    for p in files:
        if not p.endswith(TEXT_SUFFIXES) or p.startswith(SKIP_PREFIXES):
            continue
        with open(os.path.join(ROOT, p), encoding='utf-8', errors='surrogateescape') as f:
            text = f.read()
        new_text = rewrite_includes(p, text, file_set, moves) if p.endswith(CODE_SUFFIXES) else text
        new_text = rewrite_mentions(new_text, moves)
        if p == 'CMakeLists.txt':
            for old, new in CMAKE_INCLUDE_FIXES:
                new_text = new_text.replace(old, new)
        if new_text != text or p in moves:
            changed[moves.get(p, p)] = new_text

    # Tests that follow their file.
    new_tests = {}
    for source, target, suites, headers, stale_words in TEST_MOVES:
        text = changed.get(source)
        if text is None and source in file_set:
            with open(os.path.join(ROOT, source), encoding='utf-8') as f:
                text = f.read()
        if text is None:
            continue
        rest, moved = split_tests(text, suites)
        if not moved:
            continue
        if target in file_set:
            sys.exit(f'relayout: {target} exists and {source} still has {", ".join(suites)} tests: merge by hand')
        for old, new in stale_words:
            rest = rest.replace(old, new, 1)
        changed[source] = rest
        includes = ''.join(f'#include "{h}"\n' for h in headers)
        new_tests[target] = (f'// {", ".join(suites)}: moved from {source} with the file they test.\n'
                             f'#include <gtest/gtest.h>\n\n{includes}\nusing namespace opmeter;\n\n'
                             + ''.join(moved).rstrip('\n') + '\n')

    if check:
        todo = [f'move {o} -> {n}' for o, n in moves.items()] + [f'rewrite {p}' for p in changed if p not in moves.values()]
        todo += [f'create {p}' for p in new_tests]
        print('\n'.join(todo) if todo else 'relayout: nothing to do')
        return 1 if todo else 0

    for old, new in sorted(moves.items()):
        os.makedirs(os.path.join(ROOT, os.path.dirname(new)), exist_ok=True)
        subprocess.run(['git', 'mv', old, new], check=True, cwd=ROOT)
    for p, text in {**changed, **new_tests}.items():
        with open(os.path.join(ROOT, p), 'w', encoding='utf-8', errors='surrogateescape') as f:
            f.write(text)
    if new_tests:
        subprocess.run(['git', 'add', *new_tests], check=True, cwd=ROOT)
    for folder, _ in FOLDER_MOVES:  # git mv leaves no file, but an emptied folder may stay
        try:
            os.removedirs(os.path.join(ROOT, folder))
        except OSError:
            pass
    print(f'relayout: moved {len(moves)} files, rewrote {len(changed)}, created {len(new_tests)}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
