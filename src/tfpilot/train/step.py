"""The compiled training and evaluation steps (the inner layer of the trainer).

One tf.function call runs up to `steps_per_execution` steps inside the graph
(a tf.while_loop over the iterator's get_next_as_optional), as Keras' steps_per_execution does,
so Python overhead is paid once per call rather than once per step.

The NaN guard lives here too: finiteness of the loss and the gradient norm is checked in the
graph, a non-finite step is not applied (weights stay good), and the step number of the first
bad step is recorded, all without an extra host sync.
"""

from __future__ import annotations

import keras
import tensorflow as tf

__all__ = ["StepFunctions"]

# Bookkeeping variables hold the same value on every replica (computed from all-reduced values).
_SAME = tf.VariableAggregation.ONLY_FIRST_REPLICA


class StepFunctions:
    def __init__(
        self,
        *,
        model: keras.Model,
        optimizer: keras.optimizers.Optimizer,
        strategy: tf.distribute.Strategy,
        clip_norm: float | None,
        l2: float,
        label_smoothing: float,
        num_classes: int,
        steps_per_execution: int = 1,
        jit_compile: bool = False,
    ) -> None:
        self.model = model
        self.optimizer = optimizer
        self.strategy = strategy
        self.clip_norm = clip_norm
        self.l2 = l2
        self.label_smoothing = label_smoothing
        self.num_classes = num_classes
        self.steps_per_execution = steps_per_execution
        self.jit_compile = jit_compile
        with strategy.scope():
            # Metrics are updated inside the step and reset by the outer loop every epoch.
            self.train_loss = keras.metrics.Mean(name="loss")
            self.train_accuracy = keras.metrics.SparseCategoricalAccuracy(name="accuracy")
            self.eval_loss = keras.metrics.Mean(name="loss")
            self.eval_accuracy = keras.metrics.SparseCategoricalAccuracy(name="accuracy")
            self.global_step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step", aggregation=_SAME)
            self.grad_norm = tf.Variable(0.0, dtype=tf.float32, trainable=False, name="grad_norm", aggregation=_SAME)
            self.nonfinite_steps = tf.Variable(0, dtype=tf.int64, trainable=False, name="nonfinite_steps", aggregation=_SAME)
            self.first_nonfinite_step = tf.Variable(-1, dtype=tf.int64, trainable=False, name="first_nonfinite_step", aggregation=_SAME)
            optimizer.build(model.trainable_variables)
        self._train_function = None
        self._eval_function = None
        self._gradient_function = None

    # ------------------------------------------------------------------ loss
    def _per_example_loss(self, labels: tf.Tensor, logits: tf.Tensor) -> tf.Tensor:
        logits = tf.cast(logits, tf.float32)
        if self.label_smoothing:
            one_hot = tf.one_hot(tf.cast(labels, tf.int32), self.num_classes)
            return keras.losses.categorical_crossentropy(
                one_hot, logits, from_logits=True, label_smoothing=self.label_smoothing
            )
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.cast(labels, tf.int32), logits=logits)

    def _regularization(self) -> tf.Tensor:
        penalty = tf.constant(0.0)
        if self.l2:
            kernels = [v for v in self.model.trainable_variables if "kernel" in v.path or "embeddings" in v.path]
            penalty += self.l2 * tf.add_n([tf.nn.l2_loss(tf.cast(v, tf.float32)) * 2.0 for v in kernels]) if kernels else 0.0
        if self.model.losses:
            penalty += tf.add_n([tf.cast(loss, tf.float32) for loss in self.model.losses])
        # Regularisation is added once per global step, so each replica contributes its share.
        return penalty / tf.cast(self.strategy.num_replicas_in_sync, tf.float32)

    def loss_and_gradients(self, features, labels, *, training: bool = True):
        with tf.GradientTape() as tape:
            logits = self.model(features, training=training)
            per_example = self._per_example_loss(labels, logits)
            loss = tf.nn.compute_average_loss(per_example) + self._regularization()
        gradients = tape.gradient(loss, self.model.trainable_variables)
        return loss, logits, per_example, gradients

    # ------------------------------------------------------------------ one replica step
    def _replica_step(self, features, labels):
        loss, logits, per_example, gradients = self.loss_and_gradients(features, labels)
        gradients = [g if g is not None else tf.zeros_like(v) for g, v in zip(gradients, self.model.trainable_variables)]
        replica = tf.distribute.get_replica_context()
        if self.strategy.num_replicas_in_sync > 1:
            # Sum the per-replica gradients ourselves so the logged norm and the clipping see the
            # true global gradient (losses are already scaled by the global batch size).
            gradients = replica.all_reduce(tf.distribute.ReduceOp.SUM, gradients)
        norm = tf.linalg.global_norm(gradients)
        loss_total = replica.all_reduce(tf.distribute.ReduceOp.SUM, loss) if self.strategy.num_replicas_in_sync > 1 else loss
        finite = tf.logical_and(tf.math.is_finite(loss_total), tf.math.is_finite(norm))
        if self.clip_norm:
            gradients, _ = tf.clip_by_global_norm(gradients, self.clip_norm, use_norm=norm)

        def apply():
            self.optimizer.apply(gradients, self.model.trainable_variables)
            return tf.constant(True)

        def skip():
            return tf.constant(False)

        tf.cond(finite, apply, skip)
        self.grad_norm.assign(norm)
        step = self.global_step.assign_add(1)
        first_bad = tf.logical_and(tf.logical_not(finite), self.first_nonfinite_step < 0)
        self.first_nonfinite_step.assign(tf.where(first_bad, step, self.first_nonfinite_step))
        self.nonfinite_steps.assign_add(tf.cast(tf.logical_not(finite), tf.int64))
        # Metrics see the per-example loss so the epoch mean is exact even with a short last batch.
        self.train_loss.update_state(per_example)
        self.train_accuracy.update_state(labels, logits)

    def _replica_gradients(self, features, labels):
        _, _, _, gradients = self.loss_and_gradients(features, labels)
        return gradients

    def _replica_eval(self, features, labels):
        logits = self.model(features, training=False)
        self.eval_loss.update_state(self._per_example_loss(labels, logits))
        self.eval_accuracy.update_state(labels, logits)

    # ------------------------------------------------------------------ compiled functions
    @property
    def train_function(self):
        """Compiled: run up to steps_per_execution steps from the iterator; return steps run."""
        if self._train_function is None:
            step = self._replica_step
            if self.jit_compile:
                step = tf.function(step, jit_compile=True, reduce_retracing=True)
            strategy, steps = self.strategy, self.steps_per_execution

            @tf.function(reduce_retracing=True)
            def train_function(iterator):
                executed = tf.constant(0, tf.int64)
                for _ in tf.range(steps):
                    optional = iterator.get_next_as_optional()
                    if not optional.has_value():
                        break
                    features, labels = optional.get_value()
                    strategy.run(step, args=(features, labels))
                    executed += 1
                return executed

            self._train_function = train_function
        return self._train_function

    @property
    def eval_function(self):
        if self._eval_function is None:
            strategy = self.strategy

            @tf.function(reduce_retracing=True)
            def eval_function(iterator):
                for features, labels in iterator:
                    strategy.run(self._replica_eval, args=(features, labels))

            self._eval_function = eval_function
        return self._eval_function

    @property
    def gradient_function(self):
        """Gradients on one batch (for histograms): never applied."""
        if self._gradient_function is None:
            strategy = self.strategy

            @tf.function(reduce_retracing=True)
            def gradient_function(features, labels):
                per_replica = strategy.run(self._replica_gradients, args=(features, labels))
                return [strategy.reduce(tf.distribute.ReduceOp.SUM, g, axis=None) for g in per_replica]

            self._gradient_function = gradient_function
        return self._gradient_function

    def reset_train_metrics(self) -> None:
        self.train_loss.reset_state()
        self.train_accuracy.reset_state()

    def reset_eval_metrics(self) -> None:
        self.eval_loss.reset_state()
        self.eval_accuracy.reset_state()

    def train_logs(self) -> dict[str, float]:
        return {"loss": float(self.train_loss.result()), "accuracy": float(self.train_accuracy.result())}

    def eval_logs(self) -> dict[str, float]:
        return {"loss": float(self.eval_loss.result()), "accuracy": float(self.eval_accuracy.result())}
