#!/usr/bin/env python3
"""Layout.NoIncludeCycles: no include cycle between the folders of src/.

A folder of src/ (engine, report, results, ...) depends on another when one of its files includes
one of the other's ("report/report.hpp" from src/, or a relative path). A cycle between folders
means neither can be understood, tested or moved alone. Prints each cycle with the include lines
that make it and exits 1; exits 0 when there is none.

Usage: include_cycles.py [REPO_ROOT]   (default: the repository holding this script)
Before checking the tree, it checks itself on a small made-up tree that has a cycle.
"""
import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
SOURCE_SUFFIXES = ('.cpp', '.hpp', '.h', '.cu', '.cuh', '.inc', '.c')

# Cycles that a change in flight removes, each with the change that removes it. An entry that no
# longer matches a cycle fails the test too, so that it is deleted once its cycle is gone.
ALLOWED = set()  # a cycle allowed for a while, with why: none today


def folder_edges(src):
    """{folder: {other folder: [(file, included path), ...]}} for includes between folders of src."""
    edges = {}
    for dirpath, _, files in os.walk(src):
        for name in files:
            if not name.endswith(SOURCE_SUFFIXES):
                continue
            path = os.path.join(dirpath, name)
            folder = os.path.relpath(path, src).split(os.sep)[0]
            if folder == name:
                continue  # a file directly in src/ belongs to no folder
            with open(path, errors='replace') as f:
                text = f.read()
            for included in INCLUDE.findall(text):
                for base in (dirpath, src):
                    target = os.path.normpath(os.path.join(base, included))
                    if os.path.isfile(target):
                        break
                else:
                    continue  # not in src/ (include/opmeter, ops/, a library)
                if os.path.commonpath([target, src]) != src:
                    continue
                other = os.path.relpath(target, src).split(os.sep)[0]
                if other != folder and os.path.isdir(os.path.join(src, other)):
                    edges.setdefault(folder, {}).setdefault(other, []).append(
                        (os.path.relpath(path, os.path.dirname(src)), included))
    return edges


def cycles(edges):
    """The strongly connected components of more than one folder (Tarjan), each sorted."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    nodes = sorted(set(edges) | {b for a in edges for b in edges[a]})

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(tuple(sorted(component)))

    for v in nodes:
        if v not in index:
            visit(v)
    return sorted(found)


def describe(component, edges):
    lines = ['include cycle between src/ folders: ' + ' <-> '.join(component)]
    for a in component:
        for b in component:
            for path, included in edges.get(a, {}).get(b, []):
                lines.append(f'  {a} -> {b}: {path} includes "{included}"')
    return '\n'.join(lines)


def self_test():
    """The check finds a made-up cycle a -> b -> c -> a and passes a tree without one."""
    with tempfile.TemporaryDirectory() as root:
        src = os.path.join(root, 'src')
        files = {'a/x.cpp': '#include "b/y.hpp"\n', 'b/y.hpp': '#include "../c/z.hpp"\n',
                 'c/z.hpp': '#include <vector>\n#include "a/w.hpp"\n', 'a/w.hpp': '',
                 'd/v.cpp': '#include "a/w.hpp"\n'}
        for name, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(src, name)), exist_ok=True)
            with open(os.path.join(src, name), 'w') as f:
                f.write(text)
        if cycles(folder_edges(src)) != [('a', 'b', 'c')]:
            return 'self-test: the made-up cycle a -> b -> c -> a was not found'
        os.remove(os.path.join(src, 'c/z.hpp'))
        if cycles(folder_edges(src)):
            return 'self-test: a cycle was found in a tree that has none'
    return None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..')
    src = os.path.abspath(os.path.join(root, 'src'))
    error = self_test()
    if error:
        print(error)
        return 1
    edges = folder_edges(src)
    found = cycles(edges)
    failed = False
    for component in found:
        pairs = {(a, b) for a in component for b in component if a < b}
        if len(component) == 2 and pairs <= ALLOWED:
            print('allowed for now (see ALLOWED): ' + describe(component, edges))
            continue
        print(describe(component, edges))
        failed = True
    for pair in sorted(ALLOWED):
        if tuple(sorted(pair)) not in found:
            print(f'ALLOWED lists {pair[0]} <-> {pair[1]}, which is no longer a cycle: delete the entry '
                  f'in {os.path.relpath(__file__)}')
            failed = True
    if not failed:
        print(f'no include cycle between the {len(next(os.walk(src))[1])} folders of src/ but those allowed above')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
