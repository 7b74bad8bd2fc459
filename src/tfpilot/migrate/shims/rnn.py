"""``tf.contrib.rnn`` / ``tf.compat.v1.nn.rnn_cell`` cells for TF1 graph code.

With Keras 3, ``tf.compat.v1.nn.rnn_cell.BasicLSTMCell`` and the other cells raise AttributeError,
while ``tf.compat.v1.nn.dynamic_rnn`` / ``static_rnn`` still exist and accept any object with
``state_size``, ``output_size``, ``zero_state`` and ``__call__(inputs, state)``. These cells are
such objects. They compute what the TF1 cells computed (gate order i, j, f, o for LSTM; reset and
update gates for GRU) and create their variables the way TF1 did, on first call, under the
caller's variable scope: ``rnn/basic_lstm_cell/kernel``, ``rnn/multi_rnn_cell/cell_0/...``.
"""

# These helpers are TF1 graph code on purpose (they stand in for removed TF1 APIs).
# tfpilot: noqa-file[TFP6]
# --- emitted below ---
import abc as _abc
import collections as _collections

import tensorflow as _tf

from tfpilot.migrate.shims.refusal import TF1OptionRefused


class _tf1_rnn:
    """tf.contrib.rnn / tf.nn.rnn_cell cells (removed with Keras 3), usable with tf.compat.v1.nn.*_rnn."""

    LSTMStateTuple = _collections.namedtuple("LSTMStateTuple", ("c", "h"))
    static_rnn = staticmethod(_tf.compat.v1.nn.static_rnn)
    static_bidirectional_rnn = staticmethod(_tf.compat.v1.nn.static_bidirectional_rnn)
    dynamic_rnn = staticmethod(_tf.compat.v1.nn.dynamic_rnn)
    bidirectional_dynamic_rnn = staticmethod(_tf.compat.v1.nn.bidirectional_dynamic_rnn)

    @staticmethod
    def stack_bidirectional_dynamic_rnn(
        cells_fw,
        cells_bw,
        inputs,
        initial_states_fw=None,
        initial_states_bw=None,
        dtype=None,
        sequence_length=None,
        parallel_iterations=None,
        time_major=False,
        scope=None,
        swap_memory=False,
    ):
        """contrib.rnn's stack: each layer a bidirectional_dynamic_rnn over the previous layer's
        forward and backward outputs side by side, under stack_bidirectional_rnn/cell_<i>."""
        states_fw, states_bw, layer = [], [], inputs
        with _tf.compat.v1.variable_scope(scope or "stack_bidirectional_rnn"):
            for index, (cell_fw, cell_bw) in enumerate(zip(cells_fw, cells_bw, strict=False)):
                with _tf.compat.v1.variable_scope(f"cell_{index}"):
                    outputs, (state_fw, state_bw) = _tf.compat.v1.nn.bidirectional_dynamic_rnn(
                        cell_fw,
                        cell_bw,
                        layer,
                        initial_state_fw=initial_states_fw[index] if initial_states_fw else None,
                        initial_state_bw=initial_states_bw[index] if initial_states_bw else None,
                        sequence_length=sequence_length,
                        parallel_iterations=parallel_iterations,
                        dtype=dtype,
                        swap_memory=swap_memory,
                        time_major=time_major,
                    )
                    layer = _tf.concat(outputs, 2)
                states_fw.append(state_fw)
                states_bw.append(state_bw)
        return layer, tuple(states_fw), tuple(states_bw)

    class _Cell(_abc.ABC):
        base_name = "rnn_cell"

        def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None):
            self._num_units = num_units
            self._activation = activation or _tf.tanh
            self._reuse = reuse
            self._name = name
            self._variables = {}

        @property
        def output_size(self):
            return self._num_units

        @property
        def state_size(self):
            return self._num_units

        def zero_state(self, batch_size, dtype):
            return _tf.nest.map_structure(lambda size: _tf.zeros([batch_size, size], dtype), self.state_size)

        def _linear(self, key, inputs):
            kernel, bias = self._variables[key]
            return _tf.nn.bias_add(_tf.matmul(_tf.concat(inputs, 1), kernel), bias)

        @_abc.abstractmethod
        def _build(self, input_depth, dtype):
            """Create the cell's variables for inputs of ``input_depth`` features."""

        @_abc.abstractmethod
        def _step(self, inputs, state):
            """One time step: (output, new state)."""

        def __call__(self, inputs, state, scope=None):
            if not self._variables:
                # Like TF1's cells: variables are created once, on the first call, under the caller's scope.
                with _tf.compat.v1.variable_scope(scope or self._name, default_name=self.base_name, reuse=self._reuse):
                    self._variables = self._build(int(inputs.shape[-1]), inputs.dtype.base_dtype)
            return self._step(inputs, state)

        @staticmethod
        def _pair(name, shape, dtype, initializer=None, bias_initializer=None):
            kernel = _tf.compat.v1.get_variable(name + "kernel", shape, dtype, initializer=initializer)
            bias = _tf.compat.v1.get_variable(
                name + "bias", shape[-1:], dtype, initializer=bias_initializer or _tf.compat.v1.zeros_initializer()
            )
            return kernel, bias

    class BasicRNNCell(_Cell):
        base_name = "basic_rnn_cell"

        def _build(self, input_depth, dtype):
            return {"": self._pair("", [input_depth + self._num_units, self._num_units], dtype)}

        def _step(self, inputs, state):
            output = self._activation(self._linear("", [inputs, state]))
            return output, output

    class GRUCell(_Cell):
        base_name = "gru_cell"

        def __init__(
            self,
            num_units,
            activation=None,
            reuse=None,
            kernel_initializer=None,
            bias_initializer=None,
            name=None,
            dtype=None,
        ):
            super().__init__(num_units, activation, reuse, name, dtype)
            self._kernel_initializer = kernel_initializer
            self._bias_initializer = bias_initializer

        def _build(self, input_depth, dtype):
            depth = input_depth + self._num_units
            gate_bias = self._bias_initializer or _tf.compat.v1.constant_initializer(1.0)
            return {
                "gates": self._pair("gates/", [depth, 2 * self._num_units], dtype, self._kernel_initializer, gate_bias),
                "candidate": self._pair(
                    "candidate/", [depth, self._num_units], dtype, self._kernel_initializer, self._bias_initializer
                ),
            }

        def _step(self, inputs, state):
            gates = _tf.sigmoid(self._linear("gates", [inputs, state]))
            reset, update = _tf.split(gates, 2, axis=1)
            candidate = self._activation(self._linear("candidate", [inputs, reset * state]))
            new_state = update * state + (1 - update) * candidate
            return new_state, new_state

    class BasicLSTMCell(_Cell):
        base_name = "basic_lstm_cell"

        def __init__(
            self,
            num_units,
            forget_bias=1.0,
            state_is_tuple=True,
            activation=None,
            reuse=None,
            name=None,
            dtype=None,
            initializer=None,
        ):
            super().__init__(num_units, activation, reuse, name, dtype)
            self._forget_bias = forget_bias
            self._state_is_tuple = state_is_tuple
            self._initializer = initializer

        @property
        def state_size(self):
            if self._state_is_tuple:
                return _tf1_rnn.LSTMStateTuple(self._num_units, self._num_units)
            return 2 * self._num_units

        def _build(self, input_depth, dtype):
            shape = [input_depth + self._num_units, 4 * self._num_units]
            return {"": self._pair("", shape, dtype, self._initializer)}

        def _step(self, inputs, state):
            if self._state_is_tuple:
                c, h = state
            else:
                c, h = _tf.split(state, 2, axis=1)
            gates = self._linear("", [inputs, h])
            i, j, f, o = _tf.split(gates, 4, axis=1)  # TF1's order: input, new input, forget, output
            new_c = c * _tf.sigmoid(f + self._forget_bias) + _tf.sigmoid(i) * self._activation(j)
            new_h = self._activation(new_c) * _tf.sigmoid(o)
            new_state = _tf1_rnn.LSTMStateTuple(new_c, new_h) if self._state_is_tuple else _tf.concat([new_c, new_h], 1)
            return new_h, new_state

    class LSTMCell(BasicLSTMCell):
        base_name = "lstm_cell"

        def __init__(
            self,
            num_units,
            use_peepholes=False,
            cell_clip=None,
            initializer=None,
            num_proj=None,
            proj_clip=None,
            num_unit_shards=None,
            num_proj_shards=None,
            forget_bias=1.0,
            state_is_tuple=True,
            activation=None,
            reuse=None,
            name=None,
            dtype=None,
        ):
            if use_peepholes or num_proj is not None or cell_clip is not None:
                raise TF1OptionRefused("the migrated LSTMCell has no peepholes, projection or cell clipping")
            super().__init__(num_units, forget_bias, state_is_tuple, activation, reuse, name, dtype, initializer)

    class LSTMBlockCell(BasicLSTMCell):
        """contrib.rnn's fused LSTM: BasicLSTMCell's gates (i, c, f, o) and forget bias, one kernel and bias."""

        base_name = "lstm_cell"

        def __init__(
            self,
            num_units,
            forget_bias=1.0,
            cell_clip=None,
            use_peephole=False,
            dtype=None,
            reuse=None,
            name="lstm_cell",
        ):
            if use_peephole or (cell_clip is not None and cell_clip > 0):
                raise TF1OptionRefused("the migrated LSTMBlockCell has no peepholes or cell clipping")
            super().__init__(num_units, forget_bias, True, None, reuse, name, dtype)

    class GRUBlockCell(GRUCell):
        """contrib.rnn's fused GRU: GRUCell's arithmetic (reset and update gates biased to 1, then the candidate)."""

        def __init__(self, num_units=None, reuse=None, name="gru_cell", cell_size=None):
            super().__init__(num_units if num_units is not None else cell_size, reuse=reuse, name=name)

    GRUBlockCellV2 = GRUBlockCell

    class LayerNormBasicLSTMCell(BasicLSTMCell):
        """contrib.rnn's layer-normalised LSTM: each gate and the new memory normalised over its units (gamma /
        beta per gate scope, epsilon 1e-12 as contrib's layer_norm), no kernel bias when normalising, optional
        recurrent dropout of the new input."""

        base_name = "layer_norm_basic_lstm_cell"

        def __init__(
            self,
            num_units,
            forget_bias=1.0,
            input_size=None,
            activation=None,
            layer_norm=True,
            norm_gain=1.0,
            norm_shift=0.0,
            dropout_keep_prob=1.0,
            dropout_prob_seed=None,
            reuse=None,
        ):
            super().__init__(num_units, forget_bias, True, activation, reuse)
            self._layer_norm = layer_norm
            self._norm = (norm_gain, norm_shift)
            self._keep = dropout_keep_prob
            self._seed = dropout_prob_seed

        def _build(self, input_depth, dtype):
            shape = [input_depth + self._num_units, 4 * self._num_units]
            kernel = _tf.compat.v1.get_variable("kernel", shape, dtype)
            bias = None
            if not self._layer_norm:
                bias = _tf.compat.v1.get_variable(
                    "bias", shape[-1:], dtype, initializer=_tf.compat.v1.zeros_initializer()
                )
            norms = {}
            if self._layer_norm:
                for scope in ("input", "transform", "forget", "output", "state"):
                    with _tf.compat.v1.variable_scope(scope):
                        gamma = _tf.compat.v1.get_variable(
                            "gamma",
                            [self._num_units],
                            dtype,
                            initializer=_tf.compat.v1.constant_initializer(self._norm[0]),
                        )
                        beta = _tf.compat.v1.get_variable(
                            "beta",
                            [self._num_units],
                            dtype,
                            initializer=_tf.compat.v1.constant_initializer(self._norm[1]),
                        )
                    norms[scope] = (gamma, beta)
            return {"kernel": kernel, "bias": bias, "norms": norms}

        def _normalized(self, values, scope):
            if not self._layer_norm:
                return values
            gamma, beta = self._variables["norms"][scope]
            mean, variance = _tf.nn.moments(values, [1], keepdims=True)
            return _tf.nn.batch_normalization(values, mean, variance, beta, gamma, 1e-12)

        def _step(self, inputs, state):
            c, h = state
            gates = _tf.matmul(_tf.concat([inputs, h], 1), self._variables["kernel"])
            if self._variables["bias"] is not None:
                gates = _tf.nn.bias_add(gates, self._variables["bias"])
            i, j, f, o = _tf.split(gates, 4, axis=1)
            i, j = self._normalized(i, "input"), self._normalized(j, "transform")
            f, o = self._normalized(f, "forget"), self._normalized(o, "output")
            g = self._activation(j)
            if not (isinstance(self._keep, (int, float)) and self._keep == 1):
                g = _tf.nn.dropout(g, rate=1 - self._keep, seed=self._seed)
            new_c = self._normalized(c * _tf.sigmoid(f + self._forget_bias) + _tf.sigmoid(i) * g, "state")
            new_h = self._activation(new_c) * _tf.sigmoid(o)
            return new_h, _tf1_rnn.LSTMStateTuple(new_c, new_h)

    class OutputProjectionWrapper:
        """The cell's output through a dense layer (`kernel` / `bias` under output_projection_wrapper)."""

        def __init__(self, cell, output_size, activation=None, reuse=None):
            self._cell = cell
            self._output_size = output_size
            self._activation = activation
            self._reuse = reuse
            self._variables = None

        state_size = property(lambda self: self._cell.state_size)
        output_size = property(lambda self: self._output_size)

        def zero_state(self, batch_size, dtype):
            return self._cell.zero_state(batch_size, dtype)

        def __call__(self, inputs, state, scope=None):
            output, new_state = self._cell(inputs, state)
            if self._variables is None:
                with _tf.compat.v1.variable_scope(scope, default_name="output_projection_wrapper", reuse=self._reuse):
                    self._variables = _tf1_rnn._Cell._pair(  # noqa: SLF001 - the cells' own kernel/bias maker
                        "", [int(output.shape[-1]), self._output_size], output.dtype.base_dtype
                    )
            kernel, bias = self._variables
            projected = _tf.nn.bias_add(_tf.matmul(output, kernel), bias)
            if self._activation is not None:
                projected = self._activation(projected)
            return projected, new_state

    class ResidualWrapper:
        """The cell's output plus its input (or residual_fn(inputs, outputs))."""

        def __init__(self, cell, residual_fn=None):
            self._cell = cell
            self._residual_fn = residual_fn or (
                lambda inputs, outputs: _tf.nest.map_structure(_tf.add, inputs, outputs)
            )

        state_size = property(lambda self: self._cell.state_size)
        output_size = property(lambda self: self._cell.output_size)

        def zero_state(self, batch_size, dtype):
            return self._cell.zero_state(batch_size, dtype)

        def __call__(self, inputs, state, scope=None):
            outputs, new_state = self._cell(inputs, state, scope=scope)
            return self._residual_fn(inputs, outputs), new_state

    class MultiRNNCell:
        def __init__(self, cells, state_is_tuple=True):
            self._cells = list(cells)
            self._state_is_tuple = state_is_tuple
            self._scope = None

        @property
        def state_size(self):
            sizes = tuple(cell.state_size for cell in self._cells)
            return sizes if self._state_is_tuple else sum(sizes)

        @property
        def output_size(self):
            return self._cells[-1].output_size

        def zero_state(self, batch_size, dtype):
            states = tuple(cell.zero_state(batch_size, dtype) for cell in self._cells)
            return states if self._state_is_tuple else _tf.concat(states, 1)

        def __call__(self, inputs, state, scope=None):
            if self._scope is None:
                with _tf.compat.v1.variable_scope(scope, default_name="multi_rnn_cell") as captured:
                    self._scope = captured
            new_states = []
            position = 0  # state_is_tuple=False: the cells' states side by side in one [batch, sum] tensor
            with _tf.compat.v1.variable_scope(self._scope):
                for index, cell in enumerate(self._cells):
                    with _tf.compat.v1.variable_scope(f"cell_{index}"):
                        if self._state_is_tuple:
                            current = state[index]
                        else:
                            current = _tf.slice(state, [0, position], [-1, cell.state_size])
                            position += cell.state_size
                        inputs, new_state = cell(inputs, current)
                    new_states.append(new_state)
            return inputs, tuple(new_states) if self._state_is_tuple else _tf.concat(new_states, 1)

    class DropoutWrapper:
        def __init__(
            self,
            cell,
            input_keep_prob=1.0,
            output_keep_prob=1.0,
            state_keep_prob=1.0,
            variational_recurrent=False,
            input_size=None,
            dtype=None,
            seed=None,
        ):
            if variational_recurrent:
                raise TF1OptionRefused("the migrated DropoutWrapper has no variational_recurrent mode")
            self._cell = cell
            self._keep = (input_keep_prob, output_keep_prob, state_keep_prob)
            self._seed = seed

        state_size = property(lambda self: self._cell.state_size)
        output_size = property(lambda self: self._cell.output_size)

        def zero_state(self, batch_size, dtype):
            return self._cell.zero_state(batch_size, dtype)

        def _drop(self, values, keep):
            if isinstance(keep, (int, float)) and keep == 1:
                return values
            return _tf.nest.map_structure(lambda v: _tf.nn.dropout(v, rate=1 - keep, seed=self._seed), values)

        def __call__(self, inputs, state, scope=None):
            input_keep, output_keep, state_keep = self._keep
            output, new_state = self._cell(self._drop(inputs, input_keep), state, scope=scope)
            if isinstance(new_state, _tf1_rnn.LSTMStateTuple):  # TF1 kept an LSTM's memory c undropped
                new_state = new_state._replace(h=self._drop(new_state.h, state_keep))
            else:
                new_state = self._drop(new_state, state_keep)
            return self._drop(output, output_keep), new_state
