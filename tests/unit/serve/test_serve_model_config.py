"""Model config and batching parameter text protos, version policies, base-path checks."""

from __future__ import annotations

import pytest

from tfpilot.errors import ServeError
from tfpilot.serve.model_config import (
    BatchingParameters,
    ServedModel,
    VersionPolicy,
    check_base_path,
    load_model_config_file,
    parse_batching_parameters,
    parse_model_config,
    validate_model_name,
)

CONFIG = """
model_config_list {
  config {
    name: "half"  base_path: "/models/half"  model_platform: "tensorflow"
    model_version_policy { latest { num_versions: 2 } }
  }
  config {
    name: "pinned"  base_path: "/models/pinned"
    model_version_policy { specific { versions: 43 versions: 42 } }
    version_labels { key: "stable" value: 42 }
    version_labels { key: "canary" value: 43 }
  }
  config { name: "every"  base_path: "/models/every"  model_version_policy { all {} } }
  config { name: "plain"  base_path: "/models/plain" }
}
"""


def test_model_config_list_parses_policies_and_labels(tmp_path):
    path = tmp_path / "models.config"
    path.write_text(CONFIG)
    half, pinned, every, plain = load_model_config_file(path)
    assert (half.name, str(half.base_path), half.version_policy) == ("half", "/models/half", VersionPolicy("latest", 2))
    assert pinned.version_policy == VersionPolicy("specific", versions=(42, 43))
    assert pinned.version_labels == {"stable": 42, "canary": 43}
    assert every.version_policy.kind == "all"
    assert plain.version_policy == VersionPolicy()


def test_policies_select_from_loadable_versions():
    candidates = [1, 3, 7, 12]
    assert VersionPolicy().select(candidates) == {12}
    assert VersionPolicy("latest", 2).select(candidates) == {7, 12}
    assert VersionPolicy("all").select(candidates) == set(candidates)
    assert VersionPolicy("specific", versions=(3, 99)).select(candidates) == {3}
    assert VersionPolicy().select([]) == set()


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("model_config_list { config { name: 'a' } }", "needs a `base_path`"),
        ("model_config_list { config { base_path: '/x' } }", "needs a `name`"),
        ("model_config_list { config { name: 'a/b' base_path: '/x' } }", "no path separators"),
        ("model_config_list { config { name: '..' base_path: '/x' } }", "no path separators"),
        (
            "model_config_list { config { name: 'a' base_path: '/x' } config { name: 'a' base_path: '/y' } }",
            "configured twice",
        ),
        ("model_config_list { config { name: 'a' base_path: '/x' model_platform: 'pytorch' } }", "only `tensorflow`"),
        (
            "model_config_list { config { name: 'a' base_path: '/x' model_version_policy { specific {} } } }",
            "lists no versions",
        ),
        ("model_config_list { config { nam: 'a' } }", "Error parsing text-format tensorflow.serving.ModelServerConfig"),
        ("model_config_list { }", "lists no models"),
        ("", "expected a `model_config_list"),
    ],
)
def test_bad_model_configs_name_the_problem(text, fragment):
    with pytest.raises(ServeError) as caught:
        parse_model_config(text, source="models.config")
    assert fragment in str(caught.value)
    assert str(caught.value).startswith("models.config")


def test_batching_parameters_text_proto():
    parameters = parse_batching_parameters(
        """
        max_batch_size { value: 64 }
        batch_timeout_micros { value: 2000 }
        max_enqueued_batches { value: 4 }
        num_batch_threads { value: 3 }
        thread_pool_name { value: "batch_threads" }
        allowed_batch_sizes: 16
        allowed_batch_sizes: 64
        pad_variable_length_inputs: false
        """
    )
    assert parameters == BatchingParameters(
        max_batch_size=64,
        batch_timeout_micros=2000,
        max_enqueued_batches=4,
        num_batch_threads=3,
        allowed_batch_sizes=(16, 64),
    )
    defaults = parse_batching_parameters("")
    assert (
        defaults.max_batch_size == 1000 and defaults.batch_timeout_micros == 0 and defaults.max_enqueued_batches == 10
    )


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("max_batch_siz { value: 3 }", 'no field named "max_batch_siz"'),
        ("max_batch_size { value: 0 }", "`max_batch_size` must be >= 1"),
        ("max_batch_size { value: 8 } allowed_batch_sizes: 4", "must increase and end with max_batch_size 8"),
        ("batch_timeout_micros { value: -5 }", "must be >= 0"),
    ],
)
def test_bad_batching_parameters(text, fragment):
    with pytest.raises(ServeError) as caught:
        parse_batching_parameters(text)
    assert fragment in str(caught.value)


def test_base_path_checks_catch_common_mistakes(tmp_path):
    (tmp_path / "model" / "1").mkdir(parents=True)
    assert check_base_path(tmp_path / "model", model_name="m") == (tmp_path / "model").resolve()
    (tmp_path / "model" / "1" / "saved_model.pb").write_bytes(b"")
    with pytest.raises(ServeError, match="is itself a SavedModel.*move it to"):
        check_base_path(tmp_path / "model" / "1", model_name="m")
    with pytest.raises(ServeError, match="does not exist"):
        check_base_path(tmp_path / "missing", model_name="m")
    with pytest.raises(ServeError, match="must be a local directory"):
        check_base_path("gs://bucket/model", model_name="m")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ServeError, match="not a directory"):
        check_base_path(tmp_path / "file", model_name="m")


def test_model_and_label_names_are_validated():
    assert validate_model_name("half_plus-two.v2") == "half_plus-two.v2"
    for bad in ("", "a/b", "a\\b", "../x", "-x", "a b"):
        with pytest.raises(ServeError):
            validate_model_name(bad)
    with pytest.raises(ServeError, match="version label"):
        ServedModel(name="m", base_path="/x", version_labels={"bad/label": 1})


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            'prometheus_config: {\n  enable: true,\n  path: "/monitoring/prometheus/metrics"\n}',
            "/monitoring/prometheus/metrics",
        ),
        ('prometheus_config { enable: true path: "/metrics" }', "/metrics"),
        ("prometheus_config { enable: true }", "/monitoring/prometheus/metrics"),
        ("prometheus_config { enable: false }", None),
        ("", None),
    ],
)
def test_monitoring_config_gives_the_prometheus_path(text, expected):
    from tfpilot.serve.model_config import parse_monitoring_config

    assert parse_monitoring_config(text) == expected


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("prometheus_config { enabled: true }", "Error parsing text-format tensorflow.serving.MonitoringConfig"),
        ('prometheus_config { enable: true path: "metrics" }', "must start with `/`"),
    ],
)
def test_bad_monitoring_config_is_one_line(text, fragment):
    from tfpilot.serve.model_config import parse_monitoring_config

    with pytest.raises(ServeError) as caught:
        parse_monitoring_config(text, source="m.txt")
    assert fragment in str(caught.value) and "\n" not in str(caught.value)
