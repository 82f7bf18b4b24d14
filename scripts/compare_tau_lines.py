#!/usr/bin/env python3
"""Compares two files of one tau per line (``NA`` where undefined), as
scE2G's Kendall step writes them: the same number of lines, ``NA`` on the
same lines, and every other line within 1e-12.

Usage: compare_tau_lines.py OURS.txt THEIRS.txt
"""

import sys


def lines(path):
    with open(path) as f:
        return [line.strip() for line in f]


def main(ours_path, theirs_path):
    ours, theirs = lines(ours_path), lines(theirs_path)
    if len(ours) != len(theirs):
        sys.exit(f"{len(ours)} lines in {ours_path}, {len(theirs)} in {theirs_path}")
    worst, na = 0.0, 0
    for k, (a, b) in enumerate(zip(ours, theirs), start=1):
        if (a == "NA") != (b == "NA"):
            sys.exit(f"line {k}: {a} against {b}")
        if a == "NA":
            na += 1
            continue
        worst = max(worst, abs(float(a) - float(b)))
    print(f"{len(ours)} lines, {na} NA on the same lines, max |tau diff| {worst:.3g}")
    if worst > 1e-12:
        sys.exit("differ by more than 1e-12")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
