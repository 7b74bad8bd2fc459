"""Divergence scores: known values, bounds and symmetry."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tfpilot.monitor import js_divergence, ks_test, linf_distance, population_stability_index


def test_js_is_zero_for_identical_and_one_for_disjoint_histograms():
    assert js_divergence([1, 2, 3], [2, 4, 6]) == pytest.approx(0.0, abs=1e-12)
    assert js_divergence([1, 0], [0, 1]) == pytest.approx(1.0)


def test_js_is_symmetric_and_matches_the_definition():
    p, q = np.array([0.5, 0.5]), np.array([0.9, 0.1])
    m = (p + q) / 2
    expected = 0.5 * np.sum(p * np.log2(p / m)) + 0.5 * np.sum(q * np.log2(q / m))
    assert js_divergence(p, q) == pytest.approx(expected, rel=1e-9)
    assert js_divergence(q, p) == pytest.approx(js_divergence(p, q), rel=1e-12)


def test_psi_matches_the_textbook_formula_and_survives_empty_bins():
    reference, current = [0.25, 0.25, 0.5], [0.5, 0.25, 0.25]
    expected = (0.5 - 0.25) * math.log(0.5 / 0.25) + (0.25 - 0.5) * math.log(0.25 / 0.5)
    assert population_stability_index(reference, current) == pytest.approx(expected, rel=1e-9)
    assert math.isfinite(population_stability_index([1, 0], [0, 1]))
    assert population_stability_index([3, 3], [5, 5]) == pytest.approx(0.0, abs=1e-12)


def test_linf_is_the_largest_frequency_difference():
    assert linf_distance([10, 10, 0], [5, 10, 5]) == pytest.approx(0.25)


def test_ks_separates_same_from_shifted_samples():
    rng = np.random.default_rng(0)
    reference = rng.normal(size=1000)
    _, same_p = ks_test(reference, rng.normal(size=300))
    statistic, shifted_p = ks_test(reference, rng.normal(loc=1.0, size=300))
    assert same_p > 0.01
    assert shifted_p < 1e-6 and statistic > 0.3
