"""Rows of figures, one value per broker, rendered as one markdown table with the ratio
wirekafka/Kafka, so every figure is read next to the reference broker's.

The first broker is wirekafka; there may be more than one reference column (Kafka 4.3.1 for the
single-node rows, a Kafka 3.9.1 ZooKeeper-mode cluster for the cluster rows): a row's ratio is
taken against the first reference column that holds a figure for it."""

from __future__ import annotations

from dataclasses import dataclass, field

Value = float | str | None


@dataclass
class Row:
    workload: str
    metric: str
    better: str  # "higher", "lower" or "" (not a figure of merit)
    decimals: int
    values: dict[str, Value] = field(default_factory=dict)


@dataclass
class Report:
    """Rows keep the order they were first set in; a broker's missing value shows as "—"."""

    brokers: list[str]
    preamble: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rows: dict[tuple[str, str], Row] = field(default_factory=dict)

    def set(self, workload: str, metric: str, broker: str, value: Value, better: str = "higher",
            decimals: int = 1) -> None:
        row = self.rows.setdefault((workload, metric), Row(workload, metric, better, decimals))
        row.values[broker] = value

    def note(self, text: str) -> None:
        self.notes.append(text)

    def _cell(self, row: Row, broker: str) -> str:
        value = row.values.get(broker)
        if value is None:
            return "—"
        if isinstance(value, str):
            return value
        return f"{value:,.{row.decimals}f}"

    @staticmethod
    def _ratio(row: Row, mine: str, *references: str) -> str:
        a = row.values.get(mine)
        b = next((v for r in references if (v := row.values.get(r)) is not None), None)
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return "—"
        if round(b, row.decimals) == 0:  # a ratio to a figure shown as 0 would be noise
            return "—"
        return f"{a / b:.2f}"

    def markdown(self) -> str:
        header = ["workload", "metric", *self.brokers]
        with_ratio = len(self.brokers) >= 2
        if with_ratio:
            header.append(f"{self.brokers[0]}/{self.brokers[1].split()[0]}")
        header.append("better")
        lines = list(self.preamble)
        if lines:
            lines.append("")
        lines.append("| " + " | ".join(header) + " |")
        lines.append("| --- | --- | " + " | ".join(["---:"] * (len(header) - 3)) + " | --- |")
        for row in self.rows.values():
            cells = [row.workload, row.metric, *(self._cell(row, b) for b in self.brokers)]
            if with_ratio:
                cells.append(self._ratio(row, *self.brokers))
            cells.append(row.better)
            lines.append("| " + " | ".join(cells) + " |")
        if self.notes:
            lines.append("")
            lines.extend(f"- {n}" for n in self.notes)
        return "\n".join(lines) + "\n"
