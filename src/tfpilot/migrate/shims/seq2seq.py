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

from tfpilot.migrate.shims.contrib import _tf1_contrib  # noqa: F401, I001 - written next to this helper in DEST
from tfpilot.migrate.shims.layers import _tf1_layers  # noqa: F401 - written next to this helper in DEST
from tfpilot.migrate.shims.refusal import TF1OptionRefused

# --- emitted below ---
import abc as _abc
import collections as _collections

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


class _tf1_seq2seq:
    """tf.contrib.seq2seq's training and greedy decoding path (removed in TF 2; TensorFlow Addons' port ended in
    2024): TrainingHelper / GreedyEmbeddingHelper, BasicDecoder, dynamic_decode, Luong and Bahdanau attention
    and AttentionWrapper, each computing what TF 1.15's did (attention over the memory masked to its lengths,
    the attention layer over [cell output, context], the decoder loop stopping when every sequence finished);
    their Dense layers are tf.layers' (`memory_layer/kernel`, `attention_layer/kernel`)."""

    BasicDecoderOutput = _collections.namedtuple("BasicDecoderOutput", ("rnn_output", "sample_id"))

    class AttentionWrapperState(
        _collections.namedtuple(
            "AttentionWrapperState",
            ("cell_state", "attention", "time", "alignments", "alignment_history", "attention_state"),
        )
    ):
        def clone(self, **kwargs):
            return self._replace(**kwargs)

    @staticmethod
    def sequence_loss(*args, **kwargs):
        return _tf1_contrib.sequence_loss(*args, **kwargs)

    @staticmethod
    def tile_batch(t, multiplier, name=None):
        def tile(value):
            value = _tf.convert_to_tensor(value)
            tiled = _tf.tile(_tf.expand_dims(value, 1), [1, multiplier] + [1] * (value.shape.rank - 1))
            return _tf.reshape(tiled, _tf.concat([[-1], _tf.shape(value)[1:]], 0))

        with _tf.name_scope(name or "tile_batch"):
            return _tf.nest.map_structure(tile, t)

    class TrainingHelper:
        """Feeds the ground truth: step t reads inputs[t]; a sequence is finished past its length."""

        def __init__(self, inputs, sequence_length, time_major=False, name=None):
            inputs = _tf.nest.map_structure(_tf.convert_to_tensor, inputs)
            if not time_major:
                inputs = _tf.nest.map_structure(lambda x: _tf.transpose(x, [1, 0, *range(2, x.shape.rank)]), inputs)
            self._inputs = inputs
            self._sequence_length = _tf.convert_to_tensor(sequence_length)
            self._zero_inputs = _tf.nest.map_structure(lambda x: _tf.zeros_like(x[0]), inputs)
            self._batch_size = _tf.size(self._sequence_length)

        @property
        def batch_size(self):
            return self._batch_size

        def _read(self, time, finished):
            return _tf.cond(
                _tf.reduce_all(finished),
                lambda: self._zero_inputs,
                lambda: _tf.nest.map_structure(lambda x: x[time], self._inputs),
            )

        def initialize(self, name=None):
            finished = _tf.equal(0, self._sequence_length)
            return finished, self._read(0, finished)

        def sample(self, time, outputs, state, name=None):
            return _tf.cast(_tf.argmax(outputs, axis=-1), _tf.int32)

        def next_inputs(self, time, outputs, state, sample_ids, name=None):
            next_time = time + 1
            finished = next_time >= self._sequence_length
            return finished, self._read(next_time, finished), state

    class GreedyEmbeddingHelper:
        """Feeds back the argmax of each step's output through the embedding, until `end_token`."""

        def __init__(self, embedding, start_tokens, end_token):
            self._embed = embedding if callable(embedding) else lambda ids: _tf.nn.embedding_lookup(embedding, ids)
            self._start_tokens = _tf.convert_to_tensor(start_tokens, _tf.int32)
            self._end_token = _tf.convert_to_tensor(end_token, _tf.int32)
            self._batch_size = _tf.size(self._start_tokens)
            self._start_inputs = self._embed(self._start_tokens)

        @property
        def batch_size(self):
            return self._batch_size

        def initialize(self, name=None):
            return _tf.tile([False], [self._batch_size]), self._start_inputs

        def sample(self, time, outputs, state, name=None):
            return _tf.cast(_tf.argmax(outputs, axis=-1), _tf.int32)

        def next_inputs(self, time, outputs, state, sample_ids, name=None):
            finished = _tf.equal(sample_ids, self._end_token)
            next_inputs = _tf.cond(
                _tf.reduce_all(finished), lambda: self._start_inputs, lambda: self._embed(sample_ids)
            )
            return finished, next_inputs, state

    class BasicDecoder:
        def __init__(self, cell, helper, initial_state, output_layer=None):
            self._cell, self._helper, self._initial_state, self._output_layer = (
                cell,
                helper,
                initial_state,
                output_layer,
            )

        @property
        def batch_size(self):
            return self._helper.batch_size

        def initialize(self, name=None):
            finished, inputs = self._helper.initialize()
            return finished, inputs, self._initial_state

        def step(self, time, inputs, state, name=None):
            cell_outputs, cell_state = self._cell(inputs, state)
            if self._output_layer is not None:
                cell_outputs = self._output_layer(cell_outputs)
            sample_ids = self._helper.sample(time=time, outputs=cell_outputs, state=cell_state)
            finished, next_inputs, next_state = self._helper.next_inputs(
                time=time, outputs=cell_outputs, state=cell_state, sample_ids=sample_ids
            )
            return _tf1_seq2seq.BasicDecoderOutput(cell_outputs, sample_ids), next_state, next_inputs, finished

    @staticmethod
    def dynamic_decode(
        decoder,
        output_time_major=False,
        impute_finished=False,
        maximum_iterations=None,
        parallel_iterations=32,
        swap_memory=False,
        scope=None,
    ):
        """Run decoder.step until every sequence finished (or maximum_iterations): (outputs, final state, lengths)."""
        with _tf.compat.v1.variable_scope(scope or "decoder"):
            finished, inputs, state = decoder.initialize()
            if maximum_iterations is not None:
                finished = _tf.logical_or(finished, 0 >= maximum_iterations)
            lengths = _tf.zeros_like(finished, dtype=_tf.int32)
            float_dtype = next((leaf.dtype for leaf in _tf.nest.flatten(state) if leaf.dtype.is_floating), _tf.float32)
            arrays = _tf1_seq2seq.BasicDecoderOutput(
                _tf.TensorArray(float_dtype, size=0, dynamic_size=True),
                _tf.TensorArray(_tf.int32, size=0, dynamic_size=True),
            )

            def condition(time, arrays, state, inputs, finished, lengths):
                return _tf.logical_not(_tf.reduce_all(finished))

            def body(time, arrays, state, inputs, finished, lengths):
                outputs, next_state, next_inputs, decoder_finished = decoder.step(time, inputs, state)
                next_finished = _tf.logical_or(decoder_finished, finished)
                if maximum_iterations is not None:
                    next_finished = _tf.logical_or(next_finished, time + 1 >= maximum_iterations)
                next_lengths = _tf.where(_tf.logical_not(finished), _tf.fill(_tf.shape(lengths), time + 1), lengths)
                if impute_finished:

                    def keep(new, current):
                        """`current` where the sequence had finished, else `new` (a scalar, the time, moves on)."""
                        if new.shape.rank == 0:
                            return new
                        return _tf.where(_tf.reshape(finished, [-1] + [1] * (new.shape.rank - 1)), current, new)

                    outputs = _tf.nest.map_structure(lambda out: keep(out, _tf.zeros_like(out)), outputs)
                    next_state = _tf.nest.map_structure(keep, next_state, state)
                arrays = _tf1_seq2seq.BasicDecoderOutput(
                    arrays.rnn_output.write(time, outputs.rnn_output), arrays.sample_id.write(time, outputs.sample_id)
                )
                return time + 1, arrays, next_state, next_inputs, next_finished, next_lengths

            _, arrays, state, _, _, lengths = _tf.compat.v1.while_loop(
                condition,
                body,
                (_tf.constant(0, _tf.int32), arrays, state, inputs, finished, lengths),
                parallel_iterations=parallel_iterations,
                swap_memory=swap_memory,
            )
            outputs = _tf1_seq2seq.BasicDecoderOutput(arrays.rnn_output.stack(), arrays.sample_id.stack())
            if not output_time_major:
                outputs = _tf.nest.map_structure(lambda x: _tf.transpose(x, [1, 0, *range(2, x.shape.rank)]), outputs)
            return outputs, state, lengths

    class _Attention(_abc.ABC):
        """Memory masked to its lengths, its keys through `memory_layer`; scores masked to -inf past them."""

        def __init__(self, num_units, memory, memory_sequence_length, probability_fn, score_mask_value, name):
            if probability_fn is not None or score_mask_value is not None:
                raise TF1OptionRefused(f"the migrated {name} has no probability_fn / score_mask_value")
            memory = _tf.convert_to_tensor(memory)
            self._lengths = memory_sequence_length
            if memory_sequence_length is not None:
                mask = _tf.sequence_mask(memory_sequence_length, maxlen=_tf.shape(memory)[1], dtype=memory.dtype)
                memory = memory * _tf.expand_dims(mask, -1)
            self.values = memory
            self.keys = _tf1_layers.dense(memory, num_units, use_bias=False, name="memory_layer")
            self._num_units = num_units
            self._name = name

        @property
        def alignments_size(self):
            return _tf.shape(self.values)[1]

        def initial_alignments(self, batch_size, dtype):
            return _tf.zeros(_tf.stack([batch_size, self.alignments_size]), dtype)

        def _probabilities(self, score):
            if self._lengths is not None:
                mask = _tf.sequence_mask(self._lengths, maxlen=_tf.shape(score)[1])
                score = _tf.where(mask, score, _tf.fill(_tf.shape(score), _tf.constant(-float("inf"), score.dtype)))
            return _tf.nn.softmax(score)

        @_abc.abstractmethod
        def _score(self, query):
            """The mechanism's score of each memory step for ``query``: [batch, memory steps] (Luong's or
            Bahdanau's, below)."""

        def __call__(self, query, state):
            alignments = self._probabilities(self._score(query))
            return alignments, alignments

    class LuongAttention(_Attention):
        def __init__(
            self, num_units, memory, memory_sequence_length=None, scale=False, probability_fn=None,
            score_mask_value=None, dtype=None, name="LuongAttention",
        ):  # fmt: skip
            super().__init__(num_units, memory, memory_sequence_length, probability_fn, score_mask_value, name)
            self._scale = scale

        def _score(self, query):
            with _tf.compat.v1.variable_scope(None, "luong_attention", [query]):
                score = _tf.squeeze(_tf.matmul(_tf.expand_dims(query, 1), self.keys, transpose_b=True), [1])
                if self._scale:
                    g = _tf.compat.v1.get_variable("attention_g", dtype=score.dtype, initializer=1.0)
                    score = g * score
            return score

    class BahdanauAttention(_Attention):
        def __init__(
            self, num_units, memory, memory_sequence_length=None, normalize=False, probability_fn=None,
            score_mask_value=None, dtype=None, name="BahdanauAttention",
        ):  # fmt: skip
            super().__init__(num_units, memory, memory_sequence_length, probability_fn, score_mask_value, name)
            self._normalize = normalize
            self._query_scope = None

        def _score(self, query):
            reuse = self._query_scope is not None
            with _tf.compat.v1.variable_scope(
                self._query_scope, "bahdanau_attention", [query], reuse=reuse or None
            ) as scope:
                self._query_scope = scope
                processed = _tf.expand_dims(
                    _tf1_layers.dense(query, self._num_units, use_bias=False, name="query_layer", reuse=reuse or None),
                    1,
                )
                v = _tf.compat.v1.get_variable("attention_v", [self._num_units], dtype=processed.dtype)
                if self._normalize:
                    g = _tf.compat.v1.get_variable(
                        "attention_g", dtype=processed.dtype, initializer=(1.0 / self._num_units) ** 0.5
                    )
                    b = _tf.compat.v1.get_variable(
                        "attention_b", [self._num_units], dtype=processed.dtype,
                        initializer=_tf.compat.v1.zeros_initializer(),
                    )  # fmt: skip
                    normed_v = g * v * _tf.math.rsqrt(_tf.reduce_sum(_tf.square(v)))
                    score = _tf.reduce_sum(normed_v * _tf.tanh(self.keys + processed + b), [2])
                else:
                    score = _tf.reduce_sum(v * _tf.tanh(self.keys + processed), [2])
            return score

    class AttentionWrapper:
        def __init__(
            self, cell, attention_mechanism, attention_layer_size=None, alignment_history=False,
            cell_input_fn=None, output_attention=True, initial_cell_state=None, name=None,
        ):  # fmt: skip
            if alignment_history or isinstance(attention_mechanism, (list, tuple)):
                raise TF1OptionRefused("the migrated AttentionWrapper has one mechanism and no alignment_history")
            self._cell, self._mechanism = cell, attention_mechanism
            self._attention_size = attention_layer_size
            self._cell_input_fn = cell_input_fn or (lambda inputs, attention: _tf.concat([inputs, attention], -1))
            self._output_attention = output_attention
            self._initial_cell_state = initial_cell_state
            self._name = name
            self._scope = None

        def zero_state(self, batch_size, dtype):
            with _tf.name_scope("AttentionWrapperZeroState"):
                cell_state = (
                    self._initial_cell_state
                    if self._initial_cell_state is not None
                    else self._cell.zero_state(batch_size, dtype)
                )
                depth = self._attention_size or int(self._mechanism.values.shape[-1])
                alignments = self._mechanism.initial_alignments(batch_size, dtype)
                return _tf1_seq2seq.AttentionWrapperState(
                    cell_state=cell_state,
                    attention=_tf.zeros(_tf.stack([batch_size, depth]), dtype),
                    time=_tf.zeros([], _tf.int32),
                    alignments=alignments,
                    alignment_history=(),
                    attention_state=alignments,
                )

        def __call__(self, inputs, state, scope=None):
            reuse = self._scope is not None
            with _tf.compat.v1.variable_scope(
                self._scope or scope, default_name=self._name or "attention_wrapper", reuse=reuse or None
            ) as captured:
                self._scope = captured
                cell_output, next_cell_state = self._cell(
                    self._cell_input_fn(inputs, state.attention), state.cell_state
                )
                alignments, next_attention_state = self._mechanism(cell_output, state.attention_state)
                context = _tf.squeeze(_tf.matmul(_tf.expand_dims(alignments, 1), self._mechanism.values), [1])
                if self._attention_size is not None:
                    attention = _tf1_layers.dense(
                        _tf.concat([cell_output, context], 1), self._attention_size, use_bias=False,
                        name="attention_layer", reuse=reuse or None,
                    )  # fmt: skip
                else:
                    attention = context
            next_state = _tf1_seq2seq.AttentionWrapperState(
                cell_state=next_cell_state,
                attention=attention,
                time=state.time + 1,
                alignments=alignments,
                alignment_history=(),
                attention_state=next_attention_state,
            )
            return (attention if self._output_attention else cell_output), next_state
