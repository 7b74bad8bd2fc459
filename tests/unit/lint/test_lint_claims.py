"""Issue 16 round 2: a finding at warning or error claims a defect; a note (info) does not.

Shapes from labelling real code, each paired with the near-identical one that must still fire
as a claim, so neither direction regresses silently.
"""

from __future__ import annotations

import textwrap

from tfpilot.lint import LintConfig, lint_source
from tfpilot.lint.earned import rule_severity


def found(source: str, code: str) -> list[tuple[int, str, str]]:
    """(line, severity, message) of each `code` finding in `source`."""
    config = LintConfig(select=(code,))
    return [
        (int(f.location.split(":")[1]), rule_severity(f).value, f.message)
        for f in lint_source(textwrap.dedent(source), config=config)
    ]


def lines(source: str, code: str, severity: str | None = None) -> list[int]:
    return [line for line, level, _ in found(source, code) if severity is None or level == severity]


# --- TF1 rules: the removed spelling is an error, compat.v1 one note per file ---------------------

PLAIN_TF1 = """\
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 3])
with tf.Session() as sess:
    sess.run(tf.reduce_sum(x), feed_dict={x: [[1.0, 2.0, 3.0]]})
    saver = tf.train.Saver()
    init = tf.global_variables_initializer()
    with tf.variable_scope("a"):
        pass
"""
COMPAT_TF1 = PLAIN_TF1.replace(
    "import tensorflow as tf", "import tensorflow.compat.v1 as tf\n\ntf.disable_v2_behavior()"
)


def test_tf1_rules_claim_a_defect_for_the_removed_spelling():
    assert lines(PLAIN_TF1, "TFP601", "error") == [4]
    assert lines(PLAIN_TF1, "TFP602", "error") == [3, 5]
    assert lines(PLAIN_TF1, "TFP610") == [6] and lines(PLAIN_TF1, "TFP614") == [7] and lines(PLAIN_TF1, "TFP603") == [8]
    assert found(PLAIN_TF1, "TFP607") == []


def test_tf1_rules_leave_compat_v1_to_one_info_note_per_file():
    for code in ("TFP601", "TFP602", "TFP603", "TFP610", "TFP614"):
        assert found(COMPAT_TF1, code) == [], code
    ((line, severity, message),) = found(COMPAT_TF1, "TFP607")
    assert (line, severity) == (1, "info")
    assert "placeholder, Session, train.Saver, global_variables_initializer, variable_scope" in message
    assert "tf.disable_v2_behavior() on line 3 turns TF2 behaviour off" in message


def test_tf1_explicit_compat_v1_calls_are_one_note_at_the_first_use():
    source = """\
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32)
    with tf.compat.v1.Session(graph=graph) as sess:
        sess.run(x, feed_dict={x: 1.0})
    """
    assert [(line, severity) for line, severity, _ in found(source, "TFP607")] == [(5, "info")]
    assert found(source, "TFP601") == [] and found(source, "TFP602") == []


def test_tfp607_warns_when_a_module_level_placeholder_never_leaves_eager_mode():
    # measured on TF 2.21: RuntimeError even after tf.InteractiveSession()
    source = """\
    import tensorflow.compat.v1 as tf

    sess = tf.InteractiveSession()
    eps = tf.placeholder(tf.float32, shape=())
    """
    assert lines(source, "TFP607", "warning") == [4]
    assert lines(source, "TFP607", "info") == [1]


def test_tfp607_placeholder_in_a_graph_context_or_after_a_mode_switch_is_only_the_note():
    in_session = """\
    import tensorflow.compat.v1 as tf

    with tf.Session() as sess:
        x = tf.placeholder(tf.float32)
    """
    switched = """\
    import tensorflow.compat.v1 as tf

    tf.disable_eager_execution()
    x = tf.placeholder(tf.float32)
    """
    in_function = """\
    import tensorflow.compat.v1 as tf

    def build():
        return tf.placeholder(tf.float32)
    """
    for source in (in_session, switched, in_function):
        assert lines(source, "TFP607", "warning") == [], source
        assert lines(source, "TFP607", "info") == [1], source


# --- TFP305: from_generator is a note, a py_function in a map a claim ----------------------------

GENERATOR = """\
import tensorflow as tf


def frames(path):
    for frame in read_video_with_opencv(path):
        yield frame


ds = tf.data.Dataset.from_generator(frames, args=["v.mp4"], output_signature=tf.TensorSpec([None, None, 3], tf.uint8))
ds = ds.map(lambda f: tf.py_function(lambda x: x, [f], tf.uint8))
"""


def test_tfp305_from_generator_is_a_note_and_a_py_function_in_a_map_a_warning():
    assert lines(GENERATOR, "TFP305", "info") == [9]
    assert lines(GENERATOR, "TFP305", "warning") == [10]


# --- TFP101: deliberate trace markers and the create-once pattern are notes ----------------------

TRACED = """\
import tensorflow as tf

g = None
num_traces = 0
leaked = None


@tf.function
def step(x):
    global g, num_traces, leaked
    print("Tracing with", x)
    print(x)
    tf.print(x)
    print("step done")
    if g is None:
        g = tf.random.Generator.from_seed(1)
    num_traces += 1
    leaked = x + 1
    return g.normal([])


@tf.function
def counted(x):
    global num_traces
    num_traces += 1
    return x


@tf.function
def lazy(x):
    global g
    if g is None:
        g = tf.random.Generator.from_seed(1)
    return g.normal([])
"""


def test_tfp101_trace_markers_and_create_once_are_info_and_not_fixable():
    by_line = {line: (severity, message) for line, severity, message in found(TRACED, "TFP101")}
    assert by_line[11][0] == "info" and "trace marker" in by_line[11][1]  # print("Tracing with", x)
    assert by_line[12][0] == "info"  # print(x) next to tf.print(x)
    assert by_line[14][0] == "warning"  # print("step done"): runs once, surprising
    assert by_line[10][0] == "warning"  # `global g, num_traces, leaked`: leaked is a real leak
    assert by_line[24][0] == "info" and "trace counter" in by_line[24][1]
    assert by_line[31][0] == "info" and "create-once" in by_line[31][1]
    fixable = {
        int(f.location.split(":")[1]) for f in lint_source(TRACED) if f.code == "TFP101" and f.evidence["fixable"]
    }
    assert fixable == {14}


# --- Keras-3-only rules in a file that runs on Keras 2 (tf_keras) --------------------------------

KERAS2_METRIC = """\
import tensorflow as tf
IMPORT

metric = tf.keras.metrics.Mean()
metric.reset_states()
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.save_weights("weights")
"""


def test_keras3_only_rules_are_errors_on_a_plain_tf_2_21_file():
    source = KERAS2_METRIC.replace("IMPORT", "")
    assert lines(source, "TFP501", "error") == [5] and lines(source, "TFP406", "error") == [7]


def test_keras3_only_rules_are_notes_where_the_file_runs_on_keras_2():
    for extra in (
        "import tensorflow_recommenders as tfrs",
        "import os\nos.environ['TF_USE_LEGACY_KERAS'] = '1'",
    ):
        source = KERAS2_METRIC.replace("IMPORT", extra)
        ((line, severity, message),) = found(source, "TFP501")
        assert severity == "info" and "runs on Keras 2" in message, extra
        assert [level for _, level, _ in found(source, "TFP406")] == ["info"], extra


def test_standalone_keras_stays_keras_3_even_with_the_legacy_variable():
    source = KERAS2_METRIC.replace("IMPORT", "import keras\nimport os\nos.environ['TF_USE_LEGACY_KERAS'] = '1'")
    assert [level for _, level, _ in found(source, "TFP501")] == ["error"]


# --- TFP307: a fixed split and a one-element fake-data loop freeze nothing -----------------------

SPLIT = """\
import tensorflow as tf

shuffled = tf.data.Dataset.range(100_000).shuffle(100_000, seed=42, reshuffle_each_iteration=FLAG)
train = shuffled.take(80_000)
test = shuffled.skip(80_000)
cached_test = test.batch(4096).cache()
fake = train.shuffle(1000).batch(8).take(1).cache().repeat()
cached_train = train.shuffle(1000).batch(8).cache()
"""


def test_tfp307_skips_a_fixed_split_and_take_1_but_not_a_reshuffling_training_set():
    assert lines(SPLIT.replace("FLAG", "False"), "TFP307") == [8]
    # the same split reshuffled every epoch: caching the test set freezes its first order
    assert lines(SPLIT.replace("FLAG", "True"), "TFP307") == [6, 8]


# --- TFP201: plain functions and classes, and a model's own training flag ------------------------

HAND_WRITTEN = """\
import tensorflow as tf


def model(inputs):
    return tf.matmul(inputs, W) + b


class NaiveSequential:
    def __call__(self, inputs):
        return inputs


def encoder(x, training=False):
    return x


net = NaiveSequential()


def step(x):
    with tf.GradientTape() as tape:
        a = model(x)
        b = net(x)
        c = discriminator(x, is_training=True)
        d = encoder(x)
        e = decoder(x)
    return a, b, c, d, e
"""


def test_tfp201_skips_plain_functions_classes_and_own_training_flags():
    # encoder takes `training` and decoder is unknown: both still fire
    assert lines(HAND_WRITTEN, "TFP201") == [25, 26]
