"""Monitor: reference statistics, drift of served traffic, the validation gate and push."""

from tfpilot.monitor.drift import (
    CurrentData,
    DriftReport,
    DriftThresholds,
    DriftWindow,
    FeatureDrift,
    compute_drift,
    current_from_requests,
    detect_drift,
    drift_findings,
    js_divergence,
    ks_test,
    linf_distance,
    population_stability_index,
)
from tfpilot.monitor.gate import (
    Blessing,
    CheckResult,
    blessing_path,
    parse_threshold,
    read_blessing,
    validate_candidate,
)
from tfpilot.monitor.push import PushResult, push_blessed
from tfpilot.monitor.statistics import compute_reference_stats, load_reference_stats, write_reference_stats

__all__ = [
    "compute_reference_stats",
    "write_reference_stats",
    "load_reference_stats",
    "DriftThresholds",
    "DriftReport",
    "FeatureDrift",
    "CurrentData",
    "DriftWindow",
    "compute_drift",
    "current_from_requests",
    "detect_drift",
    "drift_findings",
    "js_divergence",
    "population_stability_index",
    "linf_distance",
    "ks_test",
    "Blessing",
    "CheckResult",
    "blessing_path",
    "parse_threshold",
    "read_blessing",
    "validate_candidate",
    "PushResult",
    "push_blessed",
]
