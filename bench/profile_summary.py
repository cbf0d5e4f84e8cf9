"""Summarise a py-spy ``--format raw`` profile (collapsed stacks): where the samples went.

    python -m bench.profile_summary bench/profiles/executor-2000.txt [--top 25] [--match worker]

Prints the share of samples per thread, and the functions with the largest inclusive share
(the function or anything it called), optionally only those whose frame text contains
``--match``.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path


def load(path: Path) -> list[tuple[list[str], int]]:
    stacks = []
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks.append((stack.split(";"), int(count)))
    return stacks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("profile", type=Path)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--match", default="")
    args = parser.parse_args()
    stacks = load(args.profile)
    total = sum(count for _, count in stacks) or 1
    threads: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    for frames, count in stacks:
        threads[frames[0]] += count
        for frame in set(frames[1:]):
            inclusive[frame] += count
        own[frames[-1]] += count
    print(f"{total} samples")
    for thread, count in threads.most_common(10):
        print(f"{100 * count / total:5.1f}%  {thread}")
    print("-- inclusive")
    shown = 0
    for frame, count in inclusive.most_common():
        if args.match in frame:
            print(f"{100 * count / total:5.1f}%  {frame}")
            shown += 1
            if shown >= args.top:
                break
    print("-- self")
    for frame, count in own.most_common(args.top):
        print(f"{100 * count / total:5.1f}%  {frame}")


if __name__ == "__main__":
    main()
