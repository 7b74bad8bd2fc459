"""`tfpilot report RUN`: one self-contained, offline HTML file from whatever the run directory holds.

Each section appears only when its file exists (history, metrics, findings, profile summary,
export parity, drift, blessing), so the report works after `train` alone and grows as later
steps add files. Tables are rendered here; charts are JSON specs drawn as inline SVG by the
inlined script in :mod:`tfpilot.report.charts_js`. Nothing is loaded from the network.
"""

from __future__ import annotations

import datetime
import html
import json
import math
from pathlib import Path
from typing import Any

from tfpilot.atomic import atomic_write_text
from tfpilot.errors import TfpilotError
from tfpilot.report.charts_js import CHARTS_JS
from tfpilot.rundir import RunDir

__all__ = ["collect_run_data", "render_report", "write_report"]

_MAX_TABLE_ROWS = 200

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d232b;background:#fafbfc}
header{background:#1d3557;color:#fff;padding:18px 28px}header h1{margin:0;font-size:22px}header p{margin:4px 0 0;opacity:.8}
main{padding:8px 28px 40px;max-width:1400px}section{background:#fff;border:1px solid #e3e6ea;border-radius:6px;margin:16px 0;padding:4px 18px 16px}
h2{font-size:17px;margin:14px 0 8px}h3{font-size:14px;margin:12px 0 6px}
nav a{color:#fff;margin-right:14px;font-size:13px}
.charts{display:flex;flex-wrap:wrap;gap:12px}.chart{min-width:300px}
table{border-collapse:collapse;margin:6px 0;font-size:13px}th,td{border:1px solid #e3e6ea;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f1f3f5}td.num{text-align:right;font-variant-numeric:tabular-nums}
.sev-error{color:#b00020;font-weight:600}.sev-warning{color:#a65e00;font-weight:600}.sev-info{color:#1f6fb2}
.pass{color:#2a7d2a;font-weight:600}.fail{color:#b00020;font-weight:600}.muted{color:#6b7580}
.chart-title{font-weight:600;font-size:13px}.tick{font-size:10px;fill:#4a5560}.label{font-size:11px;fill:#4a5560}
.legend{font-size:11px}.grid{stroke:#eef0f2}.axis{stroke:#98a2ad}.threshold{stroke:#d62728;stroke-dasharray:4,3}
.cell-text{font-size:10px;fill:#1d232b}.cell-text.dark{fill:#fff}
"""


# ----------------------------------------------------------------------------- data


def _read_json(path: Path) -> Any:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except ValueError:
        return None  # a corrupt optional file must not stop the report: the section is left out


def collect_run_data(run_dir: str | Path) -> dict[str, Any]:
    """Every optional input of the report that exists in ``run_dir`` (None where missing)."""
    run = RunDir.at(run_dir)
    config_text = run.config_path.read_text() if run.config_path.is_file() else None
    return {
        "name": run.root.resolve().name,
        "root": str(run.root),
        "config": config_text,
        "history": _read_json(run.history_path),
        "metrics": _read_json(run.metrics_path),
        "findings": _read_json(run.findings_path),
        "profile": _read_json(run.profile_summary_path),
        "parity": _read_json(run.parity_path),
        "drift": _read_json(run.drift_path),
        "blessing": _read_json(run.blessing_path),
        "reference_stats": _read_json(run.reference_stats_path),
    }


# ----------------------------------------------------------------------------- helpers


def _clean(value: Any) -> Any:
    """JSON-safe: NaN and infinities become null (JSON has no token for them)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:.4g}"
    if value is None:
        return "—"
    if isinstance(value, (dict, list)):
        return json.dumps(value, default=str)[:300]
    return str(value)


def _table(rows: list[dict[str, Any]], *, columns: list[str] | None = None) -> str:
    if not rows:
        return '<p class="muted">none</p>'
    columns = columns or list(dict.fromkeys(key for row in rows for key in row))
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = []
    for row in rows[:_MAX_TABLE_ROWS]:
        cells = []
        for column in columns:
            value = row.get(column)
            css = ' class="num"' if isinstance(value, (int, float)) and not isinstance(value, bool) else ""
            cells.append(f"<td{css}>{html.escape(_fmt(value))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    more = (
        f'<p class="muted">{len(rows) - _MAX_TABLE_ROWS} more rows not shown</p>' if len(rows) > _MAX_TABLE_ROWS else ""
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{more}"


class _Page:
    """Collects sections and chart specs while the report is assembled."""

    def __init__(self) -> None:
        self.sections: list[tuple[str, str, str]] = []  # (anchor, title, html)
        self.charts: list[dict[str, Any]] = []

    def chart(self, spec: dict[str, Any]) -> str:
        chart_id = f"chart-{len(self.charts) + 1}"
        self.charts.append({"id": chart_id, **_clean(spec)})
        return f'<div class="chart" id="{chart_id}" data-chart-type="{spec["type"]}"></div>'

    def section(self, anchor: str, title: str, body: str) -> None:
        self.sections.append((anchor, title, body))


# ----------------------------------------------------------------------------- sections


def _metrics_section(page: _Page, metrics: dict[str, Any]) -> None:
    rows = [
        {"split": split, **{k: v for k, v in values.items() if k != "confusion_matrix"}}
        for split, values in metrics.items()
        if isinstance(values, dict)
    ]
    body = _table(rows)
    test = metrics.get("test") or {}
    matrix = test.get("confusion_matrix")
    if matrix:
        labels = metrics.get("class_names") or [str(i) for i in range(len(matrix))]
        body += (
            '<div class="charts">'
            + page.chart(
                {
                    "type": "heatmap",
                    "title": "Confusion matrix (test split)",
                    "matrix": matrix,
                    "labels": [str(label) for label in labels],
                }
            )
            + "</div>"
        )
    page.section("metrics", "Metrics", body)


def _series(epochs: list[dict[str, Any]], key: str) -> list[Any]:
    return [e.get(key) for e in epochs]


def _history_section(page: _Page, history: dict[str, Any]) -> None:
    epochs = history.get("epochs") or []
    if not epochs:
        return
    x = [e.get("epoch", i) for i, e in enumerate(epochs)]
    charts = []
    metric_names = sorted({k for e in epochs for k in e if not k.startswith("val_") and f"val_{k}" in e})
    for name in metric_names:
        charts.append(
            page.chart(
                {
                    "type": "line",
                    "title": f"{name}: train vs validation",
                    "x_label": "epoch",
                    "y_label": name,
                    "series": [
                        {"name": "train", "x": x, "y": _series(epochs, name)},
                        {"name": "validation", "x": x, "y": _series(epochs, f"val_{name}")},
                    ],
                }
            )
        )
    if "loss" in metric_names:
        gap = [
            (v - t) if isinstance(v, (int, float)) and isinstance(t, (int, float)) else None
            for t, v in zip(_series(epochs, "loss"), _series(epochs, "val_loss"), strict=False)
        ]
        gaps: list[dict[str, Any]] = [{"name": "val_loss - loss", "x": x, "y": gap}]
        if "accuracy" in metric_names:
            gaps.append(
                {
                    "name": "accuracy - val_accuracy",
                    "x": x,
                    "dashed": True,
                    "y": [
                        (t - v) if isinstance(v, (int, float)) and isinstance(t, (int, float)) else None
                        for t, v in zip(_series(epochs, "accuracy"), _series(epochs, "val_accuracy"), strict=False)
                    ],
                }
            )
        charts.append(
            page.chart(
                {
                    "type": "line",
                    "title": "Overfitting gap (validation vs train)",
                    "x_label": "epoch",
                    "y_label": "gap",
                    "zero_based": True,
                    "series": gaps,
                    "threshold": 0.0,
                }
            )
        )
    for key, title in (("learning_rate", "Learning rate"), ("grad_norm", "Gradient norm (global, before clipping)")):
        if any(isinstance(e.get(key), (int, float)) for e in epochs):
            charts.append(
                page.chart(
                    {
                        "type": "line",
                        "title": title,
                        "x_label": "epoch",
                        "y_label": key,
                        "series": [{"name": key, "x": x, "y": _series(epochs, key)}],
                    }
                )
            )
    last = epochs[-1]
    gap_text = ""
    if isinstance(last.get("val_loss"), (int, float)) and isinstance(last.get("loss"), (int, float)):
        best = min((e for e in epochs if isinstance(e.get("val_loss"), (int, float))), key=lambda e: e["val_loss"])
        gap_text = (
            f"<p>Final overfitting gap (val_loss − loss): <b>{last['val_loss'] - last['loss']:.4g}</b>; "
            f"best val_loss {best['val_loss']:.4g} at epoch {best.get('epoch')}, {len(epochs)} epochs run.</p>"
        )
    page.section("training", "Training curves", gap_text + '<div class="charts">' + "".join(charts) + "</div>")


def _findings_section(
    page: _Page, findings: list[dict[str, Any]], *, title: str = "Findings", anchor: str = "findings"
) -> None:
    if not findings:
        page.section(anchor, title, '<p class="pass">No findings.</p>')
        return
    rows = []
    for item in findings:
        severity = str(item.get("severity", "info"))
        evidence = ", ".join(f"{k}={_fmt(v)}" for k, v in (item.get("evidence") or {}).items())
        rows.append(
            f'<tr><td class="sev-{html.escape(severity)}">{html.escape(severity)}</td><td>{html.escape(str(item.get("code", "")))}</td>'
            f"<td><b>{html.escape(str(item.get('title', '')))}</b><br>{html.escape(str(item.get('message', '')))}"
            f'<br><span class="muted">{html.escape(str(item.get("location", "")))}</span></td>'
            f"<td>{html.escape(evidence)}</td><td>{html.escape(str(item.get('fix', '')))}</td></tr>"
        )
    page.section(
        anchor,
        title,
        "<table><thead><tr><th>severity</th><th>code</th><th>finding</th><th>evidence</th><th>fix</th>"
        "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>",
    )


def _profile_section(page: _Page, profile: dict[str, Any]) -> None:
    body = []
    facts = {k: v for k, v in profile.items() if isinstance(v, (str, int, float, bool)) and k not in ("profile_dir",)}
    if facts:
        body.append(_table([{"field": k, "value": v} for k, v in facts.items()]))
    steps = profile.get("steps")
    charts = []
    if isinstance(steps, dict):
        parts = [
            ("input", steps.get("input_ms")),
            ("compute", steps.get("compute_ms")),
            ("other", steps.get("other_ms")),
        ]
        if all(isinstance(v, (int, float)) for _, v in parts):
            body.append(
                f"<p>Mean step time <b>{_fmt(steps.get('step_ms'))} ms</b> over {_fmt(steps.get('steps'))} steps: "
                f"input {_fmt(steps.get('input_percent'))}%, compute {_fmt(steps.get('compute_percent'))}%, "
                f"other {_fmt(steps.get('other_percent'))}%.</p>"
            )
            charts.append(
                page.chart(
                    {
                        "type": "bar",
                        "title": "Step time breakdown (ms per step)",
                        "y_label": "ms",
                        "categories": [p for p, _ in parts],
                        "series": [{"name": "ms", "values": [v for _, v in parts]}],
                    }
                )
            )
        per_step = steps.get("per_step") or []
        if per_step and isinstance(per_step[0], dict):
            keys = [k for k in ("step_ms", "input_ms", "compute_ms") if k in per_step[0]]
            if keys:
                x = [s.get("step", i) for i, s in enumerate(per_step)]
                charts.append(
                    page.chart(
                        {
                            "type": "line",
                            "title": "Per-step time",
                            "x_label": "step",
                            "y_label": "ms",
                            "series": [{"name": k, "x": x, "y": [s.get(k) for s in per_step]} for k in keys],
                        }
                    )
                )
    if charts:
        body.append('<div class="charts">' + "".join(charts) + "</div>")
    for key, title in (
        ("top_ops", "Top operations by self time"),
        ("host_python_ops", "Host Python ops"),
        ("input_stages", "Input pipeline stages"),
    ):
        rows = profile.get(key)
        if isinstance(rows, list) and rows:
            body.append(f"<h3>{title}</h3>" + _table([r for r in rows[:15] if isinstance(r, dict)]))
    page.section("profile", "Profile summary", "".join(body) or '<p class="muted">empty profile summary</p>')


def _parity_section(page: _Page, parity: Any) -> None:
    rows = parity if isinstance(parity, list) else (parity.get("rows") if isinstance(parity, dict) else None) or []
    rows = [r for r in rows if isinstance(r, dict)]
    columns = [
        c
        for c in (
            "format",
            "path",
            "size_bytes",
            "accuracy",
            "saved_model_accuracy",
            "accuracy_drop",
            "argmax_agreement",
            "max_abs_diff",
            "latency_ms_p50",
        )
        if any(c in r for r in rows)
    ]
    columns += [c for c in dict.fromkeys(k for r in rows for k in r) if c not in columns]
    body = _table(rows, columns=columns)
    if rows and any(isinstance(r.get("size_bytes"), (int, float)) for r in rows):
        body += (
            '<div class="charts">'
            + page.chart(
                {
                    "type": "bar",
                    "title": "Artifact size (KiB)",
                    "categories": [str(r.get("format", i)) for i, r in enumerate(rows)],
                    "series": [{"name": "KiB", "values": [(r.get("size_bytes") or 0) / 1024 for r in rows]}],
                }
            )
            + "</div>"
        )
    page.section("export", "Export parity", body)


def _drift_section(page: _Page, drift: dict[str, Any]) -> None:
    features = [f for f in drift.get("features") or [] if isinstance(f, dict)]
    prediction = drift.get("prediction")
    everything = features + ([prediction] if isinstance(prediction, dict) else [])
    verdict = (
        '<p class="fail">Drift detected in: ' + html.escape(", ".join(drift.get("drifted_features") or [])) + "</p>"
        if drift.get("drifted")
        else '<p class="pass">No drift detected.</p>'
    )
    if not drift.get("enough_data", True):
        verdict = '<p class="muted">Too few served examples to judge drift.</p>'
    body = [
        verdict,
        f"<p>{_fmt(drift.get('num_examples'))} served examples in {_fmt(drift.get('num_requests'))} requests.</p>",
    ]
    rows = []
    for item in everything:
        scores = item.get("scores") or {}
        rows.append(
            {
                "feature": item.get("feature"),
                "kind": item.get("kind"),
                "drifted": item.get("drifted"),
                **{k: scores.get(k) for k in ("js", "psi", "ks_statistic", "ks_pvalue", "linf")},
                "reasons": "; ".join(item.get("reasons") or []),
            }
        )
    body.append(_table(rows))
    thresholds = drift.get("thresholds") or {}
    charts = []
    if everything:
        names = [str(i.get("feature")) for i in everything]
        charts.append(
            page.chart(
                {
                    "type": "bar",
                    "title": "Jensen-Shannon divergence per feature",
                    "categories": names,
                    "threshold": thresholds.get("js"),
                    "series": [
                        {
                            "name": "js",
                            "values": [(i.get("scores") or {}).get("js") for i in everything],
                            "highlight": [bool(i.get("drifted")) for i in everything],
                        }
                    ],
                }
            )
        )
    shown = sorted(everything, key=lambda i: -((i.get("scores") or {}).get("js") or 0))[:6]
    for item in shown:
        if item.get("bins") and item.get("reference") and item.get("current"):
            charts.append(
                page.chart(
                    {
                        "type": "bar",
                        "title": f"{item.get('feature')}: reference vs served",
                        "categories": item["bins"],
                        "series": [
                            {"name": "reference", "values": item["reference"]},
                            {"name": "served", "values": item["current"]},
                        ],
                    }
                )
            )
    body.append('<div class="charts">' + "".join(charts) + "</div>")
    page.section("drift", "Drift of served traffic", "".join(body))


def _blessing_section(page: _Page, blessing: dict[str, Any]) -> None:
    verdict = (
        '<p class="pass">Blessed: every threshold passed.</p>'
        if blessing.get("blessed")
        else '<p class="fail">Not blessed.</p>'
    )
    checks = [
        {
            "threshold": c.get("threshold"),
            "candidate": c.get("candidate"),
            "baseline": c.get("baseline"),
            "observed": c.get("observed"),
            "passed": c.get("passed"),
        }
        for c in blessing.get("checks") or []
    ]
    baseline = (blessing.get("baseline") or {}).get("model_path")
    body = (
        verdict + f"<p>Evaluated on the <b>{html.escape(str(blessing.get('split')))}</b> split "
        f"({_fmt(blessing.get('examples'))} examples) against baseline <code>{html.escape(str(baseline))}</code>.</p>"
        + _table(checks)
    )
    page.section("validation", "Validation gate", body)


def _reference_section(page: _Page, stats: dict[str, Any]) -> None:
    rows = []
    for name, feature in (stats.get("features") or {}).items():
        if not isinstance(feature, dict):
            continue
        row = {"feature": name, "kind": feature.get("kind"), "count": feature.get("count")}
        if feature.get("kind") == "numeric":
            row.update({k: feature.get(k) for k in ("mean", "std", "min", "max", "missing")})
        elif feature.get("kind") == "image":
            row.update({"shape": feature.get("shape"), "mean": (feature.get("channel_mean") or [None])[0]})
        elif feature.get("kind") == "categorical":
            row.update({"unique": feature.get("num_unique"), "missing": feature.get("missing")})
        rows.append(row)
    page.section(
        "reference",
        "Reference statistics (training split)",
        f"<p>{_fmt(stats.get('num_examples'))} examples of the <b>{html.escape(str(stats.get('split')))}</b> split.</p>"
        + _table(rows),
    )


# ----------------------------------------------------------------------------- page


def render_report(data: dict[str, Any]) -> str:
    """The HTML text of the report for data from :func:`collect_run_data`."""
    page = _Page()
    if isinstance(data.get("metrics"), dict):
        _metrics_section(page, data["metrics"])
    if isinstance(data.get("history"), dict):
        _history_section(page, data["history"])
    if isinstance(data.get("findings"), list):
        _findings_section(page, data["findings"])
    if isinstance(data.get("profile"), dict):
        _profile_section(page, data["profile"])
    if data.get("parity") is not None:
        _parity_section(page, data["parity"])
    if isinstance(data.get("blessing"), dict):
        _blessing_section(page, data["blessing"])
    if isinstance(data.get("drift"), dict):
        _drift_section(page, data["drift"])
    if isinstance(data.get("reference_stats"), dict):
        _reference_section(page, data["reference_stats"])
    if data.get("config"):
        page.section("config", "Resolved config", f"<pre>{html.escape(data['config'])}</pre>")
    if not page.sections:
        page.section(
            "empty", "Nothing to report", '<p class="muted">The run directory holds none of the report inputs yet.</p>'
        )
    name = html.escape(str(data.get("name", "run")))
    created = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    nav = "".join(f'<a href="#{anchor}">{html.escape(title)}</a>' for anchor, title, _ in page.sections)
    sections = "".join(
        f'<section id="{anchor}"><h2>{html.escape(title)}</h2>{body}</section>' for anchor, title, body in page.sections
    )
    # "</" inside a script element would end it early; JSON allows the escaped form.
    charts_json = json.dumps(page.charts, allow_nan=False).replace("</", "<\\/")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        # The page is offline by construction: forbid any network fetch outright.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        f"<title>tfpilot report — {name}</title><style>{_CSS}</style></head>"
        f"<body><header><h1>tfpilot report — {name}</h1><p>{html.escape(str(data.get('root', '')))} · generated {created}</p>"
        f"<nav>{nav}</nav></header><main>{sections}</main>"
        f'<script type="application/json" id="tfpilot-charts">{charts_json}</script>'
        f"<script>{CHARTS_JS}</script></body></html>\n"
    )


def write_report(run_dir: str | Path, *, output: str | Path | None = None) -> Path:
    """Write ``run_dir/report.html`` (or ``output``) from whichever optional files exist."""
    root = Path(run_dir)
    if not root.is_dir():
        raise TfpilotError(f"run directory `{root}` does not exist; expected runs/<name> as written by `tfpilot train`")
    path = Path(output) if output is not None else RunDir.at(root).report_path
    atomic_write_text(path, render_report(collect_run_data(root)))
    return path
