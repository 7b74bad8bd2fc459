"""TFP610: tf.train.Saver, tf.summary.FileWriter and TF1 SavedModel builders."""

from __future__ import annotations

import ast

from tfpilot.lint.apis import TF1_SAVER_SUMMARY, plain_tf1_match
from tfpilot.lint.rule import Invalid, Rule


class Tf1SaverSummary(Rule):
    """TF1 checkpoint, summary and SavedModel-builder APIs are graph-bound.

    ``tf.train.Saver`` saves by variable name (fragile across code changes);
    ``tf.summary.FileWriter`` and ``merge_all`` need a session; ``simple_save`` and the
    SavedModel builder write TF1 signatures. TF2 replacements: ``tf.train.Checkpoint`` (object
    based) with ``CheckpointManager``, ``tf.summary.create_file_writer``, and ``model.export``.
    Reached through ``tf.compat.v1`` the API still exists on TF 2.21: this rule reports the
    removed TF1 spelling only and leaves compat.v1 files to TFP607's one note per file.
    """

    code = "TFP610"
    name = "tf1-saver-summary"
    message = "TF1 checkpoint / summary / SavedModel API"
    fix_hint = (
        "Use tf.train.Checkpoint + CheckpointManager, tf.summary.create_file_writer with "
        "tf.summary.scalar, and model.export (or keras.export.ExportArchive) for SavedModels"
    )
    category = "tf1 -> tf2"
    tokens = ("Saver", "FileWriter", "merge", "simple_save", "builder", "Builder", "loader", "import_meta_graph")
    VALID = [
        """
import tensorflow as tf

checkpoint = tf.train.Checkpoint(step=tf.Variable(0))
manager = tf.train.CheckpointManager(checkpoint, "ckpt", max_to_keep=3)
writer = tf.summary.create_file_writer("logs")
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

saver = tf.train.Saver(max_to_keep=3)
writer = tf.summary.FileWriter("logs")
""",
            line=4,
        ),
    ]

    def on_reference(self, node: ast.AST, qualname: str) -> None:
        match = plain_tf1_match(qualname, TF1_SAVER_SUMMARY)
        if match is not None:
            self.report(node, f"`{self.context.dotted(node) or match}` is a TF1 API")
