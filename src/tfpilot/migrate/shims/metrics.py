"""``tf.contrib.metrics``' streaming metrics for TF1 graph code on TF 2.21.

TF1 evaluation code computed AUC, accuracy, precision and recall with
``tf.contrib.metrics.streaming_*``, which were TF1's ``tf.metrics`` (now
``tf.compat.v1.metrics``) with the arguments in the other order: contrib took
``(predictions, labels)``, ``tf.metrics`` takes ``(labels, predictions)``. A plain rename would
swap them silently (AUC and precision are not symmetric), so each helper here passes them by
keyword. ``aggregate_metrics`` / ``aggregate_metric_map`` split (value, update) pairs as contrib did.
"""

# tfpilot: noqa-file[TFP6]
# --- emitted below ---
import tensorflow as _tf


class _tf1_metrics:
    """tf.contrib.metrics (removed in TF 2): the streaming metrics of tf.compat.v1.metrics."""

    @staticmethod  # callable while the class body runs (Python 3.10+), deleted after it
    def _streaming(name, *extra):
        """A contrib.metrics streaming_<name>(predictions, labels, *extra, weights=None, ...) that
        calls tf.compat.v1.metrics.<name>(labels=..., predictions=..., ...)."""
        metric = getattr(_tf.compat.v1.metrics, name)

        def streaming(predictions, labels, *args, **kwargs):
            for key, value in zip((*extra, "weights"), args, strict=False):
                kwargs[key] = value
            return metric(labels=labels, predictions=predictions, **kwargs)

        streaming.__name__ = f"streaming_{name}"
        return staticmethod(streaming)

    streaming_accuracy = _streaming("accuracy")
    streaming_auc = _streaming("auc")
    streaming_precision = _streaming("precision")
    streaming_recall = _streaming("recall")
    streaming_mean_absolute_error = _streaming("mean_absolute_error")
    streaming_mean_squared_error = _streaming("mean_squared_error")
    streaming_root_mean_squared_error = _streaming("root_mean_squared_error")
    streaming_mean_relative_error = _streaming("mean_relative_error", "normalizer")
    streaming_mean_iou = _streaming("mean_iou", "num_classes")
    streaming_true_positives = _streaming("true_positives")
    streaming_false_positives = _streaming("false_positives")
    streaming_true_negatives = _streaming("true_negatives")
    streaming_false_negatives = _streaming("false_negatives")
    streaming_sparse_precision_at_k = _streaming("precision_at_k", "k")
    streaming_sparse_recall_at_k = _streaming("recall_at_k", "k")
    del _streaming

    @staticmethod
    def streaming_mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
        return _tf.compat.v1.metrics.mean(values, weights, metrics_collections, updates_collections, name)

    @staticmethod
    def streaming_mean_tensor(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
        return _tf.compat.v1.metrics.mean_tensor(values, weights, metrics_collections, updates_collections, name)

    @staticmethod
    def accuracy(predictions, labels, weights=None, name=None):
        # contrib.metrics.accuracy: the fraction of equal entries, not a streaming metric
        with _tf.compat.v1.name_scope(name, "accuracy", [predictions, labels, weights]):
            correct = _tf.cast(_tf.equal(predictions, labels), _tf.float32)
            if weights is None:
                return _tf.reduce_mean(correct)
            weights = _tf.cast(weights, _tf.float32)
            return _tf.reduce_sum(correct * weights) / _tf.reduce_sum(_tf.ones_like(correct) * weights)

    @staticmethod
    def aggregate_metrics(*value_update_tuples):
        if not value_update_tuples:
            raise ValueError("Expected at least one value_tensor/update_op pair")
        values, updates = zip(*value_update_tuples, strict=True)
        return list(values), list(updates)

    @staticmethod
    def aggregate_metric_map(names_to_tuples):
        names = list(names_to_tuples)
        values, updates = _tf1_metrics.aggregate_metrics(*[names_to_tuples[n] for n in names])
        return dict(zip(names, values, strict=True)), dict(zip(names, updates, strict=True))
