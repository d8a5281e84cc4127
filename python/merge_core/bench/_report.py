"""The Markdown report and PNG charts of a benchmark run."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import os
import platform

from ._measure import MiB, Run, Section, missing

PACKAGES = ["merge-core", "pyarrow", "datafusion", "duckdb", "polars", "pyspark", "pypaimon"]


def versions() -> dict[str, str | None]:
    found = {}
    for package in PACKAGES:
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = None
    return found


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
        with open("/proc/meminfo") as f:
            memory = int(next(line.split()[1] for line in f if line.startswith("MemTotal"))) >> 20
        cpu += f", {memory} GiB"
    except (OSError, StopIteration):
        pass
    system = f"{platform.system()} {platform.release()}"
    return f"{cpu}, {os.cpu_count()} cores, {system}, Python {platform.python_version()}"


def baseline(section: Section, run: Run) -> Run | None:
    """The merge-core run a ratio refers to: the first in the same group ("group: tool")."""
    group = run.tool.split(": ")[0] if ": " in run.tool else None
    for other in section.runs:
        same_group = group is None or other.tool.startswith(f"{group}: ")
        if same_group and "merge-core" in other.tool and other.seconds:
            return other
    return None


def row(section: Section, run: Run) -> str:
    if run.seconds is None:
        blank = 4 + shows_cpu(section) + len(section.extra_columns)
        cells = [run.tool, run.note or "no figures"] + [""] * blank
        return "| " + " | ".join(cells) + " |"
    mine = baseline(section, run)
    cells = [
        run.tool,
        f"{run.seconds:.2f}",
        f"{run.rows / run.seconds / 1e6:.2f}" if run.rows else "",
        f"{run.seconds / mine.seconds:.2f}x" if mine else "",
        str(run.peak_bytes // MiB) if run.peak_bytes is not None else "n/a",
        {True: "yes", False: "**NO**", None: "n/a"}[run.same] + (f" ({run.note})" if run.note else ""),
    ]
    if shows_cpu(section):
        cells.append(f"{run.cpu_seconds:.2f}" if run.cpu_seconds is not None else "n/a")
    cells += [run.extra.get(c, "") for c in section.extra_columns]
    return "| " + " | ".join(cells) + " |"


def shows_cpu(section: Section) -> bool:
    """A section gets a CPU column when some of its runs were measured in this process."""
    return any(run.cpu_seconds is not None for run in section.runs)


def section_text(section: Section, chart: str | None) -> list[str]:
    columns = ["tool", "seconds", "M rows/s", "time vs merge-core", "peak memory (MiB)", "same result"]
    columns += ["CPU seconds"] * shows_cpu(section) + section.extra_columns
    lines = [f"## {section.title}", "", *(f"- {line}" for line in section.about), ""]
    aligns = ["---"] + ["---:"] * 4 + ["---"] + ["---:"] * (len(columns) - 6)
    lines += ["| " + " | ".join(columns) + " |", "|" + "|".join(aligns) + "|"]
    lines += [row(section, run) for run in section.runs]
    if chart:
        lines += ["", f"![{section.title}]({chart})"]
    if section.after:
        lines += ["", *section.after]
    return [*lines, ""]


def chart(section: Section, folder: str) -> str | None:
    """A bar chart of the section's times; None when matplotlib is not installed."""
    if missing("matplotlib"):
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    timed = [run for run in section.runs if run.seconds]
    if not timed:
        return None
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(timed) + 1.2))
    colours = ["#1f6fb4" if "merge-core" in run.tool else "#9aa5b1" for run in timed]
    ax.barh([run.tool for run in timed], [run.seconds for run in timed], color=colours)
    ax.invert_yaxis()
    ax.set_xlabel("seconds (lower is better)")
    ax.set_title(section.title, fontsize=10)
    for i, run in enumerate(timed):
        ax.text(run.seconds, i, f" {run.seconds:.2f}", va="center", fontsize=8)
    fig.tight_layout()
    name = f"{section.name}.png"
    fig.savefig(os.path.join(folder, name), dpi=100)
    plt.close(fig)
    return name


def write(sections: list[Section], folder: str, scale: str, command: str) -> str:
    """Writes `README.md` and one chart per section into `folder`; returns the report path."""
    os.makedirs(folder, exist_ok=True)
    found = versions()
    lines = [
        "# merge-core benchmarks",
        "",
        f"- Made by `{command}` on {dt.date.today().isoformat()} (scale `{scale}`), in one run on the same inputs.",
        f"- Machine: {machine()}. Shared and noisy: compare the ratios of one run, not absolute times.",
        "- Versions: " + ", ".join(f"{k} {v or 'not installed'}" for k, v in found.items()) + ".",
        "- Times are the best of the repeats, run one after another in this process: the first after freed memory"
        " is handed back to the OS (glibc's heap, where merge-core allocates, and pyarrow's pool, as far as it"
        " gives pages back: its mimalloc keeps most), the later ones as the run before left the process, each"
        " tool's allocator keeping what it keeps, as in a process that reads again and again. Peak memory is a"
        " run's resident high-water mark above its start, the highest of the repeats. `time vs merge-core` is a"
        " tool's time over merge-core's (above 1:"
        " merge-core is faster); rows/s count input rows; `same result` is each result checked against"
        " merge-core's; `CPU seconds` (where shown) is the time all of the process's threads spent on a core in"
        " that run, so on few cores it tells how much work a tool does better than its wall time. Tools that"
        " are not installed or fail are listed as such, never estimated.",
    ]
    if missing("matplotlib"):
        lines.append("- Charts skipped: matplotlib is not installed.")
    lines.append("")
    for section in sections:
        lines += section_text(section, chart(section, folder))
    path = os.path.join(folder, "README.md")
    kept = scaling_block(read_text(path))  # made by its own, longer run: kept as it is
    with open(path, "w") as f:
        f.write("\n".join(lines) + (f"\n{kept}\n" if kept else ""))
    return path


# -- the scaling section: made by its own run (`--only scaling`, `--scale huge`), it replaces
# its block in README.md and nothing else, and the other runs keep it ---------------------

SCALING_BEGIN = "<!-- scaling: made by its own run; the other runs keep it -->"
SCALING_END = "<!-- /scaling -->"


def read_text(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def scaling_block(text: str) -> str | None:
    """The scaling section's block in a report, markers included, or None."""
    start = text.find(SCALING_BEGIN)
    end = text.find(SCALING_END, start)
    return text[start : end + len(SCALING_END)] if start >= 0 and end >= 0 else None


def with_scaling_block(text: str, block: str) -> str:
    """`text` with its scaling block replaced by `block`, or `block` appended."""
    old = scaling_block(text)
    if old is not None:
        return text.replace(old, block)
    if not text:
        return f"# merge-core benchmarks\n\n{block}\n"
    return text.rstrip("\n") + f"\n\n{block}\n"


def write_scaling(points: list, made: list[dict], folder: str, scale: str, command: str) -> str:
    """Writes the scaling section and its chart into `folder`'s README.md, replacing only
    that section; returns the report's path."""
    from ._scaling import scaling_text

    os.makedirs(folder, exist_ok=True)
    chart_name = scaling_chart(points, folder)
    about = [
        f"Made by `{command}` on {dt.date.today().isoformat()} (scale `{scale}`).",
        f"Machine: {machine()}.",
        "Versions: "
        + ", ".join(f"{k} {v or 'not installed'}" for k, v in versions().items() if k in SCALING_PACKAGES)
        + ".",
    ]
    block = "\n".join([SCALING_BEGIN, *scaling_text(points, made, about, chart_name), SCALING_END])
    path = os.path.join(folder, "README.md")
    text = with_scaling_block(read_text(path), block)
    with open(path, "w") as f:
        f.write(text)
    return path


SCALING_PACKAGES = ["merge-core", "pyarrow", "pyspark"]


def scaling_chart(points: list, folder: str) -> str | None:
    """CPU seconds and peak memory against rows, one line per step; None without matplotlib."""
    if missing("matplotlib"):
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ._scaling import STEPS

    fig, (times, memory) = plt.subplots(1, 2, figsize=(11, 4.2))
    for step, label in STEPS.items():
        timed = [p for p in points if p.step == step and p.cpu_seconds is not None]
        if timed:
            times.plot([p.rows / 1e6 for p in timed], [p.cpu_seconds for p in timed], marker="o", label=label)
        held = [p for p in points if p.step == step and p.peak_bytes is not None]
        if held:
            memory.plot([p.rows / 1e6 for p in held], [p.peak_bytes / MiB for p in held], marker="o", label=label)
    # CPU seconds: on a shared machine they vary far less than wall times do
    times.set(xlabel="rows (millions)", ylabel="CPU seconds", title="CPU time against rows")
    memory.set(xlabel="rows (millions)", ylabel="peak memory above the start (MiB)", title="Peak memory against rows")
    memory.set_ylim(bottom=0)
    times.set_ylim(bottom=0)
    times.legend(fontsize=7)
    fig.tight_layout()
    name = "scaling.png"
    fig.savefig(os.path.join(folder, name), dpi=100)
    plt.close(fig)
    return name
