#!/usr/bin/env python3
"""Layout.PublicHeadersStandAlone: a header of include/ includes only headers of include/.

A plugin or a program built outside the tree gets include/ on its include path and nothing
else: a public header that reaches into src/ or ops/ breaks it. Prints each such include and
exits 1; exits 0 when there is none. Checks itself first on a made-up tree.

Usage: public_headers.py [REPO_ROOT]   (default: the repository holding this script)
"""
import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def outside_includes(root):
    """[(header, included)] for every quoted include of include/ that include/ does not hold."""
    public = os.path.join(root, 'include')
    found = []
    for dirpath, _, files in os.walk(public):
        for name in sorted(files):
            path = os.path.join(dirpath, name)
            with open(path, errors='replace') as f:
                text = f.read()
            for included in INCLUDE.findall(text):
                here = os.path.normpath(os.path.join(dirpath, included))
                there = os.path.normpath(os.path.join(public, included))
                inside = lambda p: os.path.isfile(p) and os.path.commonpath([p, public]) == public
                if not inside(here) and not inside(there):
                    found.append((os.path.relpath(path, root), included))
    return found


def self_test():
    with tempfile.TemporaryDirectory() as root:
        for name, text in {'include/opmeter/a.hpp': '#include "opmeter/b.hpp"\n#include <vector>\n',
                           'include/opmeter/b.hpp': '#include "engine/runner.hpp"\n',
                           'src/engine/runner.hpp': ''}.items():
            os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
            with open(os.path.join(root, name), 'w') as f:
                f.write(text)
        if outside_includes(root) != [(os.path.join('include', 'opmeter', 'b.hpp'), 'engine/runner.hpp')]:
            return 'self-test: a public header including src/engine/runner.hpp was not found'
    return None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..'))
    error = self_test()
    if error:
        print(error)
        return 1
    found = outside_includes(root)
    for header, included in found:
        print(f'{header} includes "{included}", which is not a public header (include/): a plugin built '
              f'outside the tree cannot compile it; make the header public or the include internal')
    if not found:
        print('every header of include/ includes only headers of include/')
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main())
