"""A campaign's report as markdown (docs/fuzzing.md carries the long run's)."""

from __future__ import annotations

from collections import Counter

from faults.fuzz.campaign import Report


def verdict_failures(report: Report) -> list[str]:
    """What keeps the run from passing issue 36's bar: crashes, hangs, failed liveness probes,
    closes no rule explains, frames the broker left unanswered, errors it logged, RSS growth."""
    s = report.stats
    failures = []
    if report.crashes:
        failures.append(f"{len(report.crashes)} crash(es)")
    if s.hangs:
        failures.append(f"{s.hangs} hang(s)")
    if report.probes_failed:
        failures.append(f"{report.probes_failed} failed liveness probe(s)")
    if s.unexplained:
        failures.append(f"{s.unexplained} unexplained close(s)")
    for outcome in ("unanswered", "undecodable-response", "stray-response", "login-refused"):
        if s.outcomes[outcome]:
            failures.append(f"{s.outcomes[outcome]} {outcome}")
    if report.log_findings:
        failures.append(f"{len(report.log_findings)} ERROR entries in the broker log")
    if report.rss_growth > 0.10:
        failures.append(f"RSS grew {report.rss_growth:.0%}")
    return failures


def markdown(report: Report) -> str:
    s = report.stats
    rate = s.frames / report.seconds if report.seconds else 0.0
    lines = [
        f"Seed {report.seed}: {s.frames:,} frames in {report.seconds / 60:.1f} minutes ({rate:.0f} frames/s) "
        f"over {s.connections:,} connections; {len(s.apis)} (API, version) pairs.", "",
        "| crashes | hangs | liveness probes failed | unexplained closes | broker log ERROR entries "
        "| RSS before (KiB) | RSS after (KiB) | growth |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| {len(report.crashes)} | {s.hangs} | {report.probes_failed} / {report.probes} | {s.unexplained} "
        f"| {len(report.log_findings)} | {report.rss_before_kb:,} | {report.rss_after_kb:,} "
        f"| {report.rss_growth:+.1%} |", "",
        f"RSS right after start-up, before the warm-up round: {report.rss_start_kb:,} KiB.", "",
        "Frames by listener state: " + ", ".join(f"{k} {v:,}" for k, v in sorted(s.per_listener.items())) + ".", "",
        "Outcomes: " + ", ".join(f"{k} {v:,}" for k, v in s.outcomes.most_common()) + ".", "",
        "| connection closed because | frames |", "| --- | ---: |",
    ]
    lines += [f"| {cause} | {n:,} |" for cause, n in s.closes.most_common()]
    failures = verdict_failures(report)
    lines += ["", "Verdict: " + ("pass" if not failures else "FAIL: " + "; ".join(failures)) + "."]
    if report.crashes:
        lines += ["", "Crashes (the broker was restarted on its data and the run went on):", ""]
        lines += ["```\n" + crash + "\n```" for crash in report.crashes[:5]]
    if report.log_findings:
        lines += ["", "| broker log ERROR entry | times |", "| --- | ---: |"]
        lines += [f"| `{entry}` | {n:,} |" for entry, n in Counter(report.log_findings).most_common(40)]
    if s.finding_counts:
        lines += ["", "| finding by frame: kind, API, mutation | frames |", "| --- | ---: |"]
        lines += [f"| {k} | {n:,} |" for k, n in s.finding_counts.most_common(60)]
    for kind, examples in s.findings.items():
        lines += ["", f"Examples ({kind}):", ""] + [f"- `{e}`" for e in examples]
    return "\n".join(lines) + "\n"
