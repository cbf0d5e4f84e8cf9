"""Markdown tables for BENCHMARKS.md from the JSON figures a benchmark wrote.

python -m bench.tables bench/results/firing.json [more.json …]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.common import table


def firing_tables(result: dict[str, Any]) -> str:
    rows = []
    ratios = []
    for run in result["runs"]:
        offered = f"{run['rate']:,.0f}/s x {run['count']:,}"
        for who in ("ours", "apscheduler"):
            if who not in run:
                continue
            figures = run[who]
            lateness = figures["lateness_ms"]
            cpu = next(iter(figures["cpu_us_per_fire"].values()))
            rss = figures["rss_mb"]
            rows.append(
                [
                    offered,
                    "**ours**" if who == "ours" else "APScheduler 3",
                    figures["sustained_per_second"],
                    lateness["p50"],
                    lateness["p95"],
                    lateness["p99"],
                    lateness["max"],
                    figures["errors"],
                    f"{rss['at_start']:.0f} -> {rss['peak']:.0f}",
                    round(cpu),
                ]
            )
            offered = ""
        if "apscheduler" in run:
            ours, peer = run["ours"], run["apscheduler"]
            ratio = run["ratio_ours_to_apscheduler"]
            ours_cpu = next(iter(ours["cpu_us_per_fire"].values()))
            peer_cpu = next(iter(peer["cpu_us_per_fire"].values()))
            ratios.append(
                [
                    f"{run['rate']:,.0f}/s",
                    ratio["sustained"],
                    ratio["lateness_p99"],
                    ratio["rss_peak"],
                    ours_cpu / peer_cpu,
                ]
            )
    text = table(
        [
            "offered",
            "system",
            "fires/s",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "max ms",
            "errors",
            "RSS MB (start -> peak)",
            "CPU/fire us",
        ],
        rows,
    )
    if ratios:
        text += "\n\n" + table(
            ["offered", "fires/s", "lateness p99", "peak RSS", "CPU per fire"], ratios
        )
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args()
    for path in args.files:
        result = json.loads(path.read_text())
        print(f"<!-- {path} ({result['machine']['load_average']}) -->")
        if result["benchmark"] == "firing":
            print(firing_tables(result))
        else:
            print(json.dumps({k: v for k, v in result.items() if k != "machine"}, indent=1))
        print()


if __name__ == "__main__":
    main()
