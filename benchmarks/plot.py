"""Plot the benchmarks' share of copy bandwidth per case and implementation.

Reads the files bench_reorder.py and bench_shuffle.py write with --json
(one per script and strategy) and draws one horizontal bar per case and
strategy, coloured by strategy and implementation, against the x axis
"share of copy bandwidth" (1.0: as fast as the device's copy kernel moving
as many bytes, timed in alternation with the case).

Usage: python benchmarks/plot.py RESULTS.json ... [-o benchmarks/ratio_to_copy.png]
Needs matplotlib (pip install 'clayout[bench]'); reading the files does not.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import textwrap
from dataclasses import dataclass

DEFAULT_OUT = pathlib.Path(__file__).parent / "ratio_to_copy.png"


@dataclass(frozen=True)
class Bar:
    case: str      # "reorder: nchw->nhwc 8x256x56x56"
    strategy: str  # "cpu", "gpu" (the kernel family) or "host"
    impl: str      # the implementation's family: "ocl:generated", "ocl:copy", "host:numpy" ...
    share: float   # of the copy kernel's bandwidth

    @property
    def series(self) -> str:
        return f"{self.strategy} strategy, {self.impl}"


def load(paths) -> tuple[list[Bar], list[str]]:
    """The bars of every timed row in the files ``paths`` (rows without a
    share of copy, e.g. host-engine runs, are left out), and the engines
    (devices) that ran them. Raises ValueError for a file that is not a --json result."""
    bars, engines = [], []
    for path in paths:
        document = json.loads(pathlib.Path(path).read_text())
        if not isinstance(document, dict) or not isinstance(document.get("rows"), list):
            raise ValueError(f"{path}: not a benchmark --json result (no 'rows' list)")
        device = document.get("device") or document.get("engine")
        if device not in engines:
            engines.append(device)
        for row in document["rows"]:
            if row.get("share_of_copy") is None:
                continue
            # "host:numpy (7 dims: ...)" and "ocl:generated" -> the family.
            impl = row["impl"].split(" ")[0]
            bars.append(Bar(f"{document['script']}: {row['case']}", document["strategy"],
                            impl, float(row["share_of_copy"])))
    return bars, engines


def layout(bars: list[Bar]):
    """Where each bar goes: (cases top to bottom, strategies in each case's
    slots, series in legend order, and per bar its (y, series) position)."""
    cases = list(dict.fromkeys(b.case for b in bars))
    strategies = sorted({b.strategy for b in bars})
    series = sorted({b.series for b in bars})
    slot = 0.8 / max(1, len(strategies))
    positions = []
    for b in bars:
        y = len(cases) - 1 - cases.index(b.case)  # first case on top
        positions.append((y + 0.4 - slot * (strategies.index(b.strategy) + 0.5), slot))
    return cases, strategies, series, positions


def draw(bars: list[Bar], engines: list[str], out) -> None:
    """Write the plot of ``bars`` to ``out`` (PNG) with matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases, _, series, positions = layout(bars)
    colours = plt.get_cmap("tab10").colors
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.42 * len(cases)))
    for name in series:
        picked = [(b, p) for b, p in zip(bars, positions) if b.series == name]
        colour = colours[series.index(name) % len(colours)]
        ax.barh([p[0] for _, p in picked], [b.share for b, _ in picked],
                height=[p[1] * 0.9 for _, p in picked], color=colour, label=name)
    ax.axvline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_yticks(range(len(cases)), list(reversed(cases)), fontsize=8)
    ax.set_ylim(-0.6, len(cases) - 0.4)
    ax.set_xlabel("share of copy bandwidth (1.0 = the device's copy kernel, timed alongside)")
    ax.set_title(textwrap.fill("clayout on " + "; ".join(str(e) for e in engines), 110),
                 fontsize=9, pad=24)
    ax.grid(axis="x", alpha=0.3)
    # Above the bars, under the title: no bar is hidden behind it.
    ax.legend(fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(series),
              frameon=False)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", help="files written by the benchmarks' --json")
    parser.add_argument("-o", "--out", default=str(DEFAULT_OUT))
    args = parser.parse_args(argv)
    bars, engines = load(args.results)
    if not bars:
        raise SystemExit(f"no timed rows with a share of copy in {', '.join(args.results)}")
    draw(bars, engines, args.out)
    print(f"wrote {args.out}: {len(bars)} bars, {len({b.case for b in bars})} cases")


if __name__ == "__main__":
    main()
