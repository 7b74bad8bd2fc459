"""``tf.contrib.crf``, the linear-chain CRF of TF1 taggers (BiLSTM-CRF), for TF1 graph code on TF 2.21.

TF1's contrib.crf was removed with contrib in TF 2.0, and TensorFlow Addons' port ended in 2024. The
helpers compute what contrib computed, step for step: the sequence score is the unary scores of the
tags plus the transition scores between consecutive tags, each masked to the sequence's length; the
log partition runs the forward recursion ``alpha_t = x_t + logsumexp(alpha_{t-1} + transitions)``
over the steps inside each sequence (contrib ran it with ``dynamic_rnn``, which keeps a finished
sequence's state: here ``where`` keeps it); ``crf_log_likelihood`` makes its ``transitions`` variable
with ``get_variable`` as contrib did (same name, Glorot uniform), so TF1 checkpoints load. ``viterbi_decode``
is contrib's NumPy dynamic programme.
"""

# tfpilot: noqa-file[TFP6]
# --- emitted below ---
import numpy as _np
import tensorflow as _tf


class _tf1_crf:
    """tf.contrib.crf (removed in TF 2): linear-chain CRF scores, log-likelihood and Viterbi decoding."""

    @staticmethod
    def crf_unary_score(tag_indices, sequence_lengths, inputs):
        inputs = _tf.convert_to_tensor(inputs)
        tag_indices = _tf.convert_to_tensor(tag_indices)
        batch_size, max_seq_len, num_tags = (_tf.shape(inputs)[i] for i in range(3))
        offsets = _tf.expand_dims(_tf.range(batch_size) * max_seq_len * num_tags, 1)
        offsets += _tf.expand_dims(_tf.range(max_seq_len) * num_tags, 0)
        if tag_indices.dtype == _tf.int64:
            offsets = _tf.cast(offsets, _tf.int64)
        flattened = _tf.reshape(offsets + tag_indices, [-1])
        scores = _tf.reshape(_tf.gather(_tf.reshape(inputs, [-1]), flattened), [batch_size, max_seq_len])
        masks = _tf.sequence_mask(sequence_lengths, maxlen=_tf.shape(tag_indices)[1], dtype=scores.dtype)
        return _tf.reduce_sum(scores * masks, 1)

    @staticmethod
    def crf_binary_score(tag_indices, sequence_lengths, transition_params):
        tag_indices = _tf.convert_to_tensor(tag_indices)
        num_tags = int(transition_params.shape[0])
        num_transitions = _tf.shape(tag_indices)[1] - 1
        start = _tf.slice(tag_indices, [0, 0], [-1, num_transitions])
        end = _tf.slice(tag_indices, [0, 1], [-1, num_transitions])
        scores = _tf.gather(_tf.reshape(transition_params, [-1]), start * num_tags + end)
        masks = _tf.sequence_mask(sequence_lengths, maxlen=_tf.shape(tag_indices)[1], dtype=scores.dtype)
        return _tf.reduce_sum(scores * _tf.slice(masks, [0, 1], [-1, -1]), 1)

    @staticmethod
    def crf_sequence_score(inputs, tag_indices, sequence_lengths, transition_params):
        # contrib's one-step case is this sum with no transitions (and 0 for an empty sequence, as masked here)
        unary = _tf1_crf.crf_unary_score(tag_indices, sequence_lengths, inputs)
        return unary + _tf1_crf.crf_binary_score(tag_indices, sequence_lengths, transition_params)

    @staticmethod
    def crf_log_norm(inputs, sequence_lengths, transition_params):
        inputs = _tf.convert_to_tensor(inputs)
        lengths = _tf.cast(sequence_lengths, _tf.int32)
        first = inputs[:, 0, :]
        rest = _tf.transpose(inputs[:, 1:, :], [1, 0, 2])  # time major
        steps_left = _tf.maximum(lengths - 1, 0)

        def forward(alphas, step):
            x_t, t = step
            scores = _tf.expand_dims(alphas, 2) + _tf.expand_dims(transition_params, 0)
            updated = x_t + _tf.reduce_logsumexp(scores, [1])
            return _tf.where(_tf.expand_dims(t < steps_left, 1), updated, alphas)

        alphas = _tf.foldl(forward, (rest, _tf.range(_tf.shape(rest)[0])), initializer=first)
        log_norm = _tf.reduce_logsumexp(alphas, [1])
        return _tf.where(lengths <= 0, _tf.zeros_like(log_norm), log_norm)

    @staticmethod
    def crf_log_likelihood(inputs, tag_indices, sequence_lengths, transition_params=None):
        inputs = _tf.convert_to_tensor(inputs)
        if transition_params is None:
            num_tags = int(inputs.shape[2])
            transition_params = _tf.compat.v1.get_variable("transitions", [num_tags, num_tags])
        scores = _tf1_crf.crf_sequence_score(inputs, tag_indices, sequence_lengths, transition_params)
        return scores - _tf1_crf.crf_log_norm(inputs, sequence_lengths, transition_params), transition_params

    @staticmethod
    def viterbi_decode(score, transition_params):
        """The best tag sequence of one sequence's [time, tags] scores (NumPy), and its score."""
        trellis = _np.zeros_like(score)
        backpointers = _np.zeros_like(score, dtype=_np.int32)
        trellis[0] = score[0]
        for t in range(1, score.shape[0]):
            v = _np.expand_dims(trellis[t - 1], 1) + transition_params
            trellis[t] = score[t] + _np.max(v, 0)
            backpointers[t] = _np.argmax(v, 0)
        viterbi = [_np.argmax(trellis[-1])]
        for backpointer in reversed(backpointers[1:]):
            viterbi.append(backpointer[viterbi[-1]])
        viterbi.reverse()
        return viterbi, _np.max(trellis[-1])
