#!/usr/bin/env python3
"""The guide's ops and impls page is the output of `opmeter list --format md`: fail when they differ.

Usage: ops_page_test.py OPMETER SOURCE_DIR
"""
import difflib
import subprocess
import sys

opmeter, source = sys.argv[1], sys.argv[2]
page = f"{source}/docs/guide/ops-and-impls.md"
generated = subprocess.run([opmeter, "list", "--format", "md"], capture_output=True, text=True, check=True).stdout
committed = open(page, encoding="utf-8").read()
if generated != committed:
    sys.stdout.writelines(difflib.unified_diff(committed.splitlines(True), generated.splitlines(True), page, "opmeter list --format md"))
    print(f"\n{page} differs from the registry; regenerate it: build/opmeter list --format md > docs/guide/ops-and-impls.md")
    sys.exit(1)
print(f"{page} equals `opmeter list --format md`")
