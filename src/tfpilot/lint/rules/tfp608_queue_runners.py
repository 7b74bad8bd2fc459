"""TFP608: queue runners and TF1 readers."""

from __future__ import annotations

import ast

from tfpilot.lint.apis import TF1_QUEUES, plain_tf1_match
from tfpilot.lint.rule import Invalid, Rule


class QueueRunners(Rule):
    """Queue-based input pipelines (queue runners, readers, ``tf.train.shuffle_batch``) are TF1.

    They need a session and Python threads (a Coordinator), cannot run eagerly and were
    replaced by tf.data, which is faster, deterministic when asked and easy to test.
    Reached through ``tf.compat.v1`` the API still exists on TF 2.21: this rule reports the
    removed TF1 spelling only and leaves compat.v1 files to TFP607's one note per file.
    """

    code = "TFP608"
    name = "tf1-queue-input"
    message = "queue-based input pipeline is TF1-only"
    fix_hint = (
        "Build the input with tf.data: TFRecordDataset / from_tensor_slices, then .map(parse, "
        "num_parallel_calls=tf.data.AUTOTUNE).shuffle().batch().prefetch(tf.data.AUTOTUNE)"
    )
    category = "tf1 -> tf2"
    tokens = ("train.", "Queue", "Reader", "queue_runner")
    VALID = [
        """
import tensorflow as tf

ds = tf.data.TFRecordDataset(["a.tfrecord"]).batch(32).prefetch(tf.data.AUTOTUNE)
queue = tf.queue.FIFOQueue(10, tf.float32)
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

filename_queue = tf.train.string_input_producer(["a.tfrecord"])
reader = tf.TFRecordReader()
_, serialized = reader.read(filename_queue)
batch = tf.train.shuffle_batch([serialized], batch_size=32, capacity=1000, min_after_dequeue=100)
""",
            line=4,
        ),
    ]

    def on_reference(self, node: ast.AST, qualname: str) -> None:
        match = plain_tf1_match(qualname, TF1_QUEUES)
        if match is not None:
            self.report(node, f"`{self.context.dotted(node) or match}` is part of TF1 queue-based input; use tf.data")
