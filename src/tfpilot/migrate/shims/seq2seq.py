"""``tf.contrib.legacy_seq2seq`` for TF1 graph code: the decoder loop and the per-timestep losses.

TF1's char-RNN and language-model tutorials (and the many scripts copied from them) decode with
``legacy_seq2seq.rnn_decoder`` and score with ``sequence_loss_by_example``; tf.contrib is gone in
TF 2.x. These functions compute what TF1's did: the decoder runs the cell over a list of inputs,
reusing its variables after the first step (under ``scope``, default ``rnn_decoder``, so TF1
checkpoints keep their names), optionally feeding each output back through ``loop_function``;
the losses are TF1's weighted sparse softmax cross entropy summed over the timesteps' lists.
"""

# These helpers are TF1 graph code on purpose (they stand in for removed TF1 APIs).
# tfpilot: noqa-file[TFP6]
# --- emitted below ---
import tensorflow as _tf


class _tf1_legacy_seq2seq:
    """tf.contrib.legacy_seq2seq (removed in TF 2): rnn_decoder, sequence_loss_by_example, sequence_loss."""

    @staticmethod
    def rnn_decoder(decoder_inputs, initial_state, cell, loop_function=None, scope=None):
        with _tf.compat.v1.variable_scope(scope or "rnn_decoder"):
            state, outputs, previous = initial_state, [], None
            for step, step_input in enumerate(decoder_inputs):
                if loop_function is not None and previous is not None:
                    with _tf.compat.v1.variable_scope("loop_function", reuse=True):
                        step_input = loop_function(previous, step)
                if step > 0:
                    # the cell's variables were made at step 0; every later step shares them
                    _tf.compat.v1.get_variable_scope().reuse_variables()
                output, state = cell(step_input, state)
                outputs.append(output)
                if loop_function is not None:
                    previous = output
        return outputs, state

    @staticmethod
    def sequence_loss_by_example(
        logits, targets, weights, average_across_timesteps=True, softmax_loss_function=None, name=None
    ):
        if not len(logits) == len(targets) == len(weights):
            raise ValueError(
                f"logits, targets and weights must be lists of the same length ({len(logits)}, {len(targets)}, {len(weights)})"
            )
        with _tf.compat.v1.name_scope(name, "sequence_loss_by_example", list(logits) + list(targets) + list(weights)):
            per_step = []
            for logit, target, weight in zip(logits, targets, weights, strict=True):
                if softmax_loss_function is None:
                    crossent = _tf.nn.sparse_softmax_cross_entropy_with_logits(
                        labels=_tf.reshape(target, [-1]), logits=logit
                    )
                else:
                    crossent = softmax_loss_function(labels=target, logits=logit)
                per_step.append(crossent * weight)
            total = _tf.add_n(per_step)
            if average_across_timesteps:
                total = total / (_tf.add_n(list(weights)) + 1e-12)
        return total

    @staticmethod
    def sequence_loss(
        logits,
        targets,
        weights,
        average_across_timesteps=True,
        average_across_batch=True,
        softmax_loss_function=None,
        name=None,
    ):
        with _tf.compat.v1.name_scope(name, "sequence_loss", list(logits) + list(targets) + list(weights)):
            cost = _tf.reduce_sum(
                _tf1_legacy_seq2seq.sequence_loss_by_example(
                    logits,
                    targets,
                    weights,
                    average_across_timesteps=average_across_timesteps,
                    softmax_loss_function=softmax_loss_function,
                )
            )
            if average_across_batch:
                return cost / _tf.cast(_tf.shape(targets[0])[0], cost.dtype)
            return cost
