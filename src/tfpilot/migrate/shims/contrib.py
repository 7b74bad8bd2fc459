"""The ``tf.contrib`` pieces TF1 tutorials use most, for TF1 graph code on TF 2.21.

``tf.contrib`` was removed in TF 2.0. ``contrib.layers.fully_connected`` / ``conv2d`` build their
variables with ``tf.compat.v1.get_variable`` under TF1's scope names (``fully_connected/weights``,
``Conv/biases``), so ``variable_scope(reuse=True)`` sharing works and TF1 checkpoints still load.
``sequence_loss`` is ``tf.contrib.seq2seq.sequence_loss``'s arithmetic (weighted per-token
cross-entropy, averaged over time steps and / or the batch as its flags say).
"""

# These helpers are TF1 graph code on purpose (they stand in for removed TF1 APIs).
# tfpilot: noqa-file[TFP6]

from tfpilot.migrate.shims.layers import _tf1_layers  # noqa: F401, I001 - written next to this helper in DEST
from typing import Any  # for the type checker; the emitted code's annotations are strings

from tfpilot.migrate.shims.refusal import TF1OptionRefused

# --- emitted below ---
import tensorflow as _tf


class _tf1_contrib:
    """tf.contrib.layers basics and tf.contrib.seq2seq.sequence_loss (tf.contrib was removed in TF 2)."""

    # slim.arg_scope's defaults, the innermost scope last: {layer function name: {argument: value}}
    _arg_stack: "list[dict[str, dict[str, Any]]]" = [{}]

    def _arg_scoped(function: "Any") -> "Any":  # a decorator the class body applies, not a method
        """The layer function takes slim.arg_scope's defaults for it, under what each call passes itself."""
        import functools
        import inspect

        signature = inspect.signature(function)

        @functools.wraps(function)
        def call(*args, **kwargs):
            defaults = _tf1_contrib._arg_stack[-1].get(function.__name__)
            if defaults:
                given = signature.bind_partial(*args, **kwargs).arguments
                kwargs = {**{key: value for key, value in defaults.items() if key not in given}, **kwargs}
            return function(*args, **kwargs)

        call.__dict__["_tf1_arg_scope_name"] = function.__name__  # the mark arg_scope reads
        return call

    @staticmethod
    def arg_scope(list_ops_or_scope, **kwargs):
        """slim.arg_scope: default arguments of the listed layer functions inside the `with` block, nested scopes
        adding to the outer ones; `with slim.arg_scope(saved):` re-enters a scope a `with ... as saved` kept."""
        import contextlib

        @contextlib.contextmanager
        def scope():
            if isinstance(list_ops_or_scope, dict):
                current = list_ops_or_scope
            else:
                current = {name: dict(values) for name, values in _tf1_contrib._arg_stack[-1].items()}
                for op in list_ops_or_scope:
                    name = getattr(op, "_tf1_arg_scope_name", None)
                    if name is None:
                        raise TF1OptionRefused(
                            f"slim.arg_scope over {getattr(op, '__name__', op)!r}: the migrated arg_scope sets defaults "
                            "of the migrated slim layers only (conv2d, fully_connected, max_pool2d, avg_pool2d, "
                            "batch_norm, dropout, flatten)"
                        )
                    current[name] = {**current.get(name, {}), **kwargs}
            _tf1_contrib._arg_stack.append(current)
            try:
                yield current
            finally:
                _tf1_contrib._arg_stack.pop()

        return scope()

    class losses:
        """slim.losses / tf.contrib.losses: TF1's losses with the logits (predictions) first, as contrib took them;
        tf.compat.v1.losses takes the labels first, so a plain rename would swap them without an error."""

        @staticmethod
        def softmax_cross_entropy(logits, onehot_labels, weights=1.0, label_smoothing=0, scope=None):
            return _tf.compat.v1.losses.softmax_cross_entropy(
                onehot_labels, logits, weights=weights, label_smoothing=label_smoothing, scope=scope
            )

        @staticmethod
        def sparse_softmax_cross_entropy(logits, labels, weights=1.0, scope=None):
            return _tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits, weights=weights, scope=scope)

        @staticmethod
        def sigmoid_cross_entropy(logits, multi_class_labels, weights=1.0, label_smoothing=0, scope=None):
            return _tf.compat.v1.losses.sigmoid_cross_entropy(
                multi_class_labels, logits, weights=weights, label_smoothing=label_smoothing, scope=scope
            )

        @staticmethod
        def mean_squared_error(predictions, labels=None, weights=1.0, scope=None):
            return _tf.compat.v1.losses.mean_squared_error(labels, predictions, weights=weights, scope=scope)

        @staticmethod
        def get_total_loss(add_regularization_losses=True, name="total_loss"):
            return _tf.compat.v1.losses.get_total_loss(add_regularization_losses, name=name)

        @staticmethod
        def get_regularization_losses(scope=None):
            return _tf.compat.v1.losses.get_regularization_losses(scope)

    @staticmethod
    def _scope(scope, default_name, reuse):
        return _tf.compat.v1.variable_scope(scope, default_name=default_name, reuse=reuse)

    @staticmethod
    def _finish(outputs, normalizer_fn, normalizer_params, biases, activation_fn):
        if normalizer_fn is not None:
            outputs = normalizer_fn(outputs, **(normalizer_params or {}))
        elif biases is not None:
            outputs = _tf.nn.bias_add(outputs, biases)
        return activation_fn(outputs) if activation_fn is not None else outputs

    @staticmethod
    def _weights(shape, dtype, initializer, regularizer, trainable, biases_initializer, biases_regularizer, bias_size):
        # contrib.layers' defaults: Glorot uniform weights, zero biases
        weights = _tf.compat.v1.get_variable(
            "weights",
            shape=shape,
            dtype=dtype,
            initializer=initializer or _tf.compat.v1.glorot_uniform_initializer(),
            regularizer=regularizer,
            trainable=trainable,
        )
        biases = None
        if biases_initializer is not None:
            biases = _tf.compat.v1.get_variable(
                "biases",
                shape=[bias_size],
                dtype=dtype,
                initializer=biases_initializer,
                regularizer=biases_regularizer,
                trainable=trainable,
            )
        return weights, biases

    @staticmethod
    @_arg_scoped
    def fully_connected(
        inputs,
        num_outputs,
        activation_fn=_tf.nn.relu,
        normalizer_fn=None,
        normalizer_params=None,
        weights_initializer=None,
        weights_regularizer=None,
        biases_initializer=_tf.compat.v1.zeros_initializer(),
        biases_regularizer=None,
        reuse=None,
        variables_collections=None,
        outputs_collections=None,
        trainable=True,
        scope=None,
    ):
        inputs = _tf.convert_to_tensor(inputs)
        with _tf1_contrib._scope(scope, "fully_connected", reuse):
            weights, biases = _tf1_contrib._weights(
                [int(inputs.shape[-1]), num_outputs],
                inputs.dtype.base_dtype,
                weights_initializer,
                weights_regularizer,
                trainable,
                None if normalizer_fn is not None else biases_initializer,
                biases_regularizer,
                num_outputs,
            )
            if inputs.shape.rank == 2:
                outputs = _tf.matmul(inputs, weights)
            else:
                outputs = _tf.tensordot(inputs, weights, [[inputs.shape.rank - 1], [0]])
            return _tf1_contrib._finish(outputs, normalizer_fn, normalizer_params, biases, activation_fn)

    @staticmethod
    def linear(inputs, num_outputs, **kwargs):
        """contrib.layers.linear: fully_connected without an activation (its scope is fully_connected's)."""
        return _tf1_contrib.fully_connected(inputs, num_outputs, activation_fn=None, **kwargs)

    @staticmethod
    @_arg_scoped
    def bias_add(
        inputs,
        activation_fn=None,
        initializer=_tf.compat.v1.zeros_initializer(),
        regularizer=None,
        reuse=None,
        variables_collections=None,
        outputs_collections=None,
        trainable=True,
        data_format="NHWC",
        scope=None,
    ):
        inputs = _tf.convert_to_tensor(inputs)
        with _tf1_contrib._scope(scope, "BiasAdd", reuse):
            features = int(inputs.shape[1] if data_format == "NCHW" else inputs.shape[-1])
            biases = _tf.compat.v1.get_variable(
                "biases",
                shape=[features],
                dtype=inputs.dtype.base_dtype,
                initializer=initializer,
                regularizer=regularizer,
                trainable=trainable,
            )
            outputs = _tf.nn.bias_add(inputs, biases, data_format="NCHW" if data_format == "NCHW" else None)
            return activation_fn(outputs) if activation_fn is not None else outputs

    @staticmethod
    def variance_scaling_initializer(factor=2.0, mode="FAN_IN", uniform=False, seed=None, dtype=_tf.float32):
        """contrib's initializer: uniform in +-sqrt(3 factor / n), or a normal truncated at two stddev
        with stddev sqrt(1.3 factor / n), n the fan in, out or their mean (tf.compat.v1's differs)."""

        def initializer(shape, dtype=dtype, partition_info=None):
            shape = [int(d) for d in shape]
            receptive = 1
            for dimension in shape[:-2]:
                receptive *= dimension
            fan_in = shape[-2] * receptive if len(shape) > 1 else shape[-1]
            fan_out = shape[-1] * receptive
            n = {"FAN_IN": fan_in, "FAN_OUT": fan_out}.get(mode, (fan_in + fan_out) / 2.0)
            if uniform:
                limit = (3.0 * factor / n) ** 0.5
                return _tf.random.uniform(shape, -limit, limit, dtype, seed=seed)
            return _tf.random.truncated_normal(shape, 0.0, (1.3 * factor / n) ** 0.5, dtype, seed=seed)

        return initializer

    @staticmethod
    def xavier_initializer(uniform=True, seed=None, dtype=_tf.float32):
        return _tf1_contrib.variance_scaling_initializer(1.0, "FAN_AVG", uniform, seed, dtype)

    xavier_initializer_conv2d = xavier_initializer

    @staticmethod
    def get_variables(scope=None, suffix=None, collection=_tf.compat.v1.GraphKeys.GLOBAL_VARIABLES):
        """contrib.framework.get_variables: the collection's variables under `scope` (a name or a
        VariableScope), those whose name ends in `suffix` when given."""
        if isinstance(scope, _tf.compat.v1.VariableScope):
            scope = scope.name
        if suffix is not None:
            scope = (scope or "") + ".*" + (suffix if ":" in suffix else suffix + ":")
        return _tf.compat.v1.get_collection(collection, scope)

    @staticmethod
    @_arg_scoped
    def conv2d(
        inputs,
        num_outputs,
        kernel_size,
        stride=1,
        padding="SAME",
        data_format=None,
        rate=1,
        activation_fn=_tf.nn.relu,
        normalizer_fn=None,
        normalizer_params=None,
        weights_initializer=None,
        weights_regularizer=None,
        biases_initializer=_tf.compat.v1.zeros_initializer(),
        biases_regularizer=None,
        reuse=None,
        variables_collections=None,
        outputs_collections=None,
        trainable=True,
        scope=None,
    ):
        inputs = _tf.convert_to_tensor(inputs)
        kernel = tuple(kernel_size) if isinstance(kernel_size, (list, tuple)) else (kernel_size, kernel_size)
        strides = tuple(stride) if isinstance(stride, (list, tuple)) else (stride, stride)
        channels_first = data_format == "NCHW"
        in_channels = int(inputs.shape[1] if channels_first else inputs.shape[-1])
        with _tf1_contrib._scope(scope, "Conv", reuse):
            weights, biases = _tf1_contrib._weights(
                [*kernel, in_channels, num_outputs],
                inputs.dtype.base_dtype,
                weights_initializer,
                weights_regularizer,
                trainable,
                None if normalizer_fn is not None else biases_initializer,
                biases_regularizer,
                num_outputs,
            )
            outputs = _tf.nn.conv2d(
                inputs,
                weights,
                strides=(1, 1, *strides) if channels_first else (1, *strides, 1),
                padding=padding.upper(),
                data_format="NCHW" if channels_first else "NHWC",
                dilations=rate,
            )
            if biases is not None and normalizer_fn is None:
                outputs = _tf.nn.bias_add(outputs, biases, data_format="NCHW" if channels_first else "NHWC")
                biases = None
            return _tf1_contrib._finish(outputs, normalizer_fn, normalizer_params, biases, activation_fn)

    @staticmethod
    def _pool(pool, inputs, kernel_size, stride, padding, data_format):
        kernel = tuple(kernel_size) if isinstance(kernel_size, (list, tuple)) else (kernel_size, kernel_size)
        strides = tuple(stride) if isinstance(stride, (list, tuple)) else (stride, stride)
        return pool(inputs, kernel, strides, padding.upper(), data_format=data_format or "NHWC")

    @staticmethod
    @_arg_scoped
    def max_pool2d(
        inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC", outputs_collections=None, scope=None
    ):
        return _tf1_contrib._pool(_tf.nn.max_pool2d, inputs, kernel_size, stride, padding, data_format)

    @staticmethod
    @_arg_scoped
    def avg_pool2d(
        inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC", outputs_collections=None, scope=None
    ):
        return _tf1_contrib._pool(_tf.nn.avg_pool2d, inputs, kernel_size, stride, padding, data_format)

    @staticmethod
    @_arg_scoped
    def batch_norm(
        inputs,
        decay=0.999,
        center=True,
        scale=False,
        epsilon=0.001,
        activation_fn=None,
        param_initializers=None,
        param_regularizers=None,
        updates_collections=_tf.compat.v1.GraphKeys.UPDATE_OPS,
        is_training=True,
        reuse=None,
        variables_collections=None,
        outputs_collections=None,
        trainable=True,
        batch_weights=None,
        fused=None,
        data_format="NHWC",
        zero_debias_moving_mean=False,
        scope=None,
    ):
        if batch_weights is not None or zero_debias_moving_mean:
            raise TF1OptionRefused("the migrated batch_norm has no batch_weights / zero_debias_moving_mean")
        initializers = param_initializers or {}
        regularizers = param_regularizers or {}
        rank = _tf.convert_to_tensor(inputs).shape.rank
        # contrib's own choice (TF 1.15): its fused kernel where it can fuse (rank 2 or 4) and the updates do not
        # go to UPDATE_OPS, or the input is rank 2; other calls used tf.layers' batch norm below
        if (
            (fused is None or fused)
            and rank in (2, 4)
            and (rank == 2 or updates_collections is not _tf.compat.v1.GraphKeys.UPDATE_OPS)
        ):
            return _tf1_contrib._fused_batch_norm(
                inputs, decay, center, scale, epsilon, activation_fn, initializers, regularizers,
                updates_collections, is_training, reuse, trainable, data_format, scope,
            )  # fmt: skip
        updates = _tf.compat.v1.get_collection_ref(_tf.compat.v1.GraphKeys.UPDATE_OPS)
        before = len(updates)
        with _tf.compat.v1.variable_scope(scope, default_name="BatchNorm", reuse=reuse) as bn_scope:
            # contrib's variables sit in the scope itself: BatchNorm/beta, BatchNorm/moving_mean
            outputs = _tf1_layers.batch_normalization(
                inputs,
                axis=1 if data_format == "NCHW" else -1,
                momentum=decay,
                epsilon=epsilon,
                center=center,
                scale=scale,
                beta_initializer=initializers.get("beta"),
                gamma_initializer=initializers.get("gamma"),
                moving_mean_initializer=initializers.get("moving_mean"),
                moving_variance_initializer=initializers.get("moving_variance"),
                beta_regularizer=regularizers.get("beta"),
                gamma_regularizer=regularizers.get("gamma"),
                training=is_training,
                trainable=trainable,
                name=bn_scope,
                reuse=reuse,
            )
        new_updates = updates[before:]
        if updates_collections is None and new_updates:
            # contrib ran the moving-average updates with the layer itself instead of leaving them in UPDATE_OPS
            del updates[before:]
            with _tf.control_dependencies(new_updates):
                outputs = _tf.identity(outputs)
        elif updates_collections not in (None, _tf.compat.v1.GraphKeys.UPDATE_OPS):
            del updates[before:]
            for update in new_updates:
                _tf.compat.v1.add_to_collection(updates_collections, update)
        return activation_fn(outputs) if activation_fn is not None else outputs

    @staticmethod
    def _fused_batch_norm(
        inputs, decay, center, scale, epsilon, activation_fn, initializers, regularizers, updates_collections,
        is_training, reuse, trainable, data_format, scope,
    ):  # fmt: skip
        """contrib.layers.batch_norm's fused path, op for op: FusedBatchNorm normalises with the batch statistics
        while training (its variance output, with Bessel's correction, feeds the moving variance) and with the
        moving ones otherwise; a rank-2 input runs as [batch, 1, 1, channels]."""
        with _tf.compat.v1.variable_scope(scope, "BatchNorm", [inputs], reuse=reuse):
            inputs = _tf.convert_to_tensor(inputs)
            original_shape = inputs.shape
            original_inputs = inputs
            if original_shape.rank == 2:
                channels = int(original_shape[-1])
                inputs = _tf.reshape(inputs, [-1, channels, 1, 1] if data_format == "NCHW" else [-1, 1, 1, channels])
            params_shape = inputs.shape[1:2] if data_format == "NCHW" else inputs.shape[-1:]

            def variable(name, initializer, regularizer, trainable_variable):
                return _tf.compat.v1.get_variable(
                    name,
                    shape=params_shape,
                    dtype=_tf.float32,
                    initializer=initializer,
                    regularizer=regularizer,
                    trainable=trainable_variable,
                    collections=[_tf.compat.v1.GraphKeys.GLOBAL_VARIABLES, _tf.compat.v1.GraphKeys.MODEL_VARIABLES]
                    + ([_tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES] if trainable_variable else []),
                )

            if center:
                beta = variable(
                    "beta",
                    initializers.get("beta", _tf.compat.v1.zeros_initializer()),
                    regularizers.get("beta"),
                    trainable,
                )
            else:
                beta = _tf.constant(0.0, dtype=_tf.float32, shape=params_shape)
            if scale:
                gamma = variable(
                    "gamma",
                    initializers.get("gamma", _tf.compat.v1.ones_initializer()),
                    regularizers.get("gamma"),
                    trainable,
                )
            else:
                gamma = _tf.constant(1.0, dtype=_tf.float32, shape=params_shape)
            moving_mean = variable(
                "moving_mean", initializers.get("moving_mean", _tf.compat.v1.zeros_initializer()), None, False
            )
            moving_variance = variable(
                "moving_variance", initializers.get("moving_variance", _tf.compat.v1.ones_initializer()), None, False
            )
            layout = "NCHW" if data_format == "NCHW" else "NHWC"

            def training():
                return _tf.compat.v1.nn.fused_batch_norm(inputs, gamma, beta, epsilon=epsilon, data_format=layout)

            def inference():
                return _tf.compat.v1.nn.fused_batch_norm(
                    inputs, gamma, beta, mean=moving_mean, variance=moving_variance, epsilon=epsilon,
                    is_training=False, data_format=layout,
                )  # fmt: skip

            def smart_cond(predicate, true_fn, false_fn):
                if isinstance(predicate, bool):
                    return true_fn() if predicate else false_fn()
                return _tf.cond(_tf.cast(predicate, _tf.bool), true_fn, false_fn)

            outputs, mean, variance = smart_cond(is_training, training, inference)
            if not (isinstance(is_training, bool) and not is_training):

                def moving_average(variable, value):
                    with _tf.compat.v1.name_scope(None, "AssignMovingAvg", [variable, value, decay]) as name:
                        rate = _tf.cast(_tf.convert_to_tensor(1.0 - decay, name="decay"), variable.dtype.base_dtype)
                        return _tf.compat.v1.assign_sub(variable, (variable - value) * rate, name=name)

                def updates():
                    return moving_average(moving_mean, mean), moving_average(moving_variance, variance)

                if updates_collections is None:

                    def forced():
                        with _tf.control_dependencies(list(updates())):
                            return _tf.identity(outputs)

                    outputs = smart_cond(is_training, forced, lambda: outputs)
                else:
                    update_mean, update_variance = smart_cond(
                        is_training, updates, lambda: (moving_mean, moving_variance)
                    )
                    _tf.compat.v1.add_to_collections(updates_collections, update_mean)
                    _tf.compat.v1.add_to_collections(updates_collections, update_variance)
            outputs.set_shape(inputs.shape)
            if original_shape.rank == 2:
                outputs = _tf.reshape(outputs, _tf.shape(original_inputs))
            return activation_fn(outputs) if activation_fn is not None else outputs

    @staticmethod
    @_arg_scoped
    def layer_norm(
        inputs,
        center=True,
        scale=True,
        activation_fn=None,
        reuse=None,
        variables_collections=None,
        outputs_collections=None,
        trainable=True,
        begin_norm_axis=1,
        begin_params_axis=-1,
        scope=None,
    ):
        """contrib.layers.layer_norm: moments over the axes from begin_norm_axis, beta/gamma over those from
        begin_params_axis, variance epsilon 1e-12, variables LayerNorm/beta and LayerNorm/gamma as TF1 named them."""
        with _tf.compat.v1.variable_scope(scope, "LayerNorm", [inputs], reuse=reuse):
            inputs = _tf.convert_to_tensor(inputs)
            rank = inputs.shape.ndims
            norm_axis = begin_norm_axis % rank
            params_shape = inputs.shape[begin_params_axis % rank :]
            beta = gamma = None
            if center:
                beta = _tf.compat.v1.get_variable(
                    "beta", params_shape, inputs.dtype, _tf.compat.v1.zeros_initializer(), trainable=trainable
                )
            if scale:
                gamma = _tf.compat.v1.get_variable(
                    "gamma", params_shape, inputs.dtype, _tf.compat.v1.ones_initializer(), trainable=trainable
                )
            mean, variance = _tf.nn.moments(inputs, list(range(norm_axis, rank)), keepdims=True)
            outputs = _tf.nn.batch_normalization(inputs, mean, variance, beta, gamma, variance_epsilon=1e-12)
            outputs.set_shape(inputs.shape)
            return activation_fn(outputs) if activation_fn is not None else outputs

    @staticmethod
    @_arg_scoped
    def flatten(inputs, outputs_collections=None, scope=None):
        """slim.flatten / contrib.layers.flatten: [batch, ...] -> [batch, k]."""
        with _tf.compat.v1.name_scope(scope, "Flatten", [inputs]):
            inputs = _tf.convert_to_tensor(inputs)
            rest = inputs.shape[1:]
            width = -1
            if rest.is_fully_defined():
                width = 1
                for size in rest.as_list():
                    width *= size
            return _tf.reshape(inputs, [-1, width])

    @staticmethod
    @_arg_scoped
    def conv2d_transpose(
        inputs,
        num_outputs,
        kernel_size,
        stride=1,
        padding="SAME",
        data_format="NHWC",
        activation_fn=_tf.nn.relu,
        normalizer_fn=None,
        normalizer_params=None,
        weights_initializer=None,
        weights_regularizer=None,
        biases_initializer=_tf.compat.v1.zeros_initializer(),
        biases_regularizer=None,
        reuse=None,
        variables_collections=None,
        outputs_collections=None,
        trainable=True,
        scope=None,
    ):
        """contrib.layers.conv2d_transpose: TF1's core transposed-convolution layer (variables `kernel` / `bias`
        under `Conv2d_transpose`), then the normalizer and activation (ReLU by default) as contrib applied them."""
        if data_format not in (None, "NHWC"):
            raise TF1OptionRefused("the migrated conv2d_transpose supports data_format='NHWC' only")
        with _tf1_contrib._scope(scope, "Conv2d_transpose", reuse) as captured:
            outputs = _tf1_layers.conv2d_transpose(
                inputs,
                num_outputs,
                kernel_size,
                strides=stride,
                padding=padding,
                use_bias=normalizer_fn is None and biases_initializer is not None,
                kernel_initializer=weights_initializer or _tf.compat.v1.glorot_uniform_initializer(),
                bias_initializer=biases_initializer,
                kernel_regularizer=weights_regularizer,
                bias_regularizer=biases_regularizer,
                trainable=trainable,
                name=captured,
                reuse=reuse,
            )
            return _tf1_contrib._finish(outputs, normalizer_fn, normalizer_params, None, activation_fn)

    @staticmethod
    def one_hot_encoding(labels, num_classes, on_value=1.0, off_value=0.0, outputs_collections=None, scope=None):
        with _tf.compat.v1.name_scope(scope, "OneHotEncoding", [labels]):
            labels = _tf.convert_to_tensor(labels)
            if labels.dtype == _tf.int32:
                labels = _tf.cast(labels, _tf.int64)
            return _tf.one_hot(labels, num_classes, on_value=on_value, off_value=off_value)

    @staticmethod
    def embed_sequence(
        ids,
        vocab_size=None,
        embed_dim=None,
        unique=False,
        initializer=None,
        regularizer=None,
        trainable=True,
        scope=None,
        reuse=None,
    ):
        """contrib.layers.embed_sequence: an `EmbedSequence/embeddings` table (get_variable's default, Glorot
        uniform) looked up at `ids`."""
        with _tf1_contrib._scope(scope, "EmbedSequence", reuse):
            embeddings = _tf.compat.v1.get_variable(
                "embeddings",
                shape=[vocab_size, embed_dim],
                initializer=initializer,
                regularizer=regularizer,
                trainable=trainable,
            )
            return _tf.nn.embedding_lookup(embeddings, ids)

    convolution2d = conv2d  # contrib.layers' long names for the same functions
    convolution2d_transpose = conv2d_transpose

    @staticmethod
    @_arg_scoped
    def dropout(inputs, keep_prob=0.5, noise_shape=None, is_training=True, outputs_collections=None, scope=None):
        return _tf1_layers.dropout(inputs, rate=1.0 - keep_prob, noise_shape=noise_shape, training=is_training)

    @staticmethod
    def l2_regularizer(scale, scope=None):
        def l2(weights):
            return _tf.multiply(
                _tf.cast(scale, weights.dtype.base_dtype), _tf.nn.l2_loss(weights), name="l2_regularizer"
            )

        return l2

    @staticmethod
    def l1_regularizer(scale, scope=None):
        def l1(weights):
            return _tf.multiply(
                _tf.cast(scale, weights.dtype.base_dtype), _tf.reduce_sum(_tf.abs(weights)), name="l1_regularizer"
            )

        return l1

    @staticmethod
    def l1_l2_regularizer(scale_l1=1.0, scale_l2=1.0, scope=None):
        """contrib.layers.l1_l2_regularizer: the sum of the two penalties, as contrib summed them."""
        return _tf1_contrib.sum_regularizer(
            [_tf1_contrib.l1_regularizer(scale_l1), _tf1_contrib.l2_regularizer(scale_l2)], scope=scope
        )

    @staticmethod
    def sum_regularizer(regularizer_list, scope=None):
        """contrib.layers.sum_regularizer: each regularizer's penalty, added (None penalties left out)."""

        def summed(weights):
            penalties = [p for p in (regularizer(weights) for regularizer in regularizer_list) if p is not None]
            return _tf.add_n(penalties) if penalties else None

        return summed

    @staticmethod
    def apply_regularization(regularizer, weights_list=None):
        """contrib.layers.apply_regularization: the summed penalty of `weights_list` (the WEIGHTS collection
        when none is given), added to REGULARIZATION_LOSSES as contrib added it."""
        graph_keys = _tf.compat.v1.GraphKeys
        if not weights_list:
            weights_list = _tf.compat.v1.get_collection(graph_keys.WEIGHTS)
        if not weights_list:
            raise ValueError("No weights to regularize.")
        with _tf.compat.v1.name_scope("get_regularization_penalty", values=weights_list) as scope:
            penalties = [regularizer(weights) for weights in weights_list]
            penalties = [_tf.constant(0.0) if p is None else p for p in penalties]
            summed_penalty = _tf.add_n(penalties, name=scope)
            _tf.compat.v1.add_to_collection(graph_keys.REGULARIZATION_LOSSES, summed_penalty)
            return summed_penalty

    class model_analyzer:
        """slim.model_analyzer: a table of variables or ops and their sizes, printed as slim printed it."""

        @staticmethod
        def analyze_vars(variables, print_info=False):
            """(total elements, total bytes) of `variables`; with print_info, one line per variable."""
            if print_info:
                print("---------")
                print("Variables: name (type shape) [size]")
                print("---------")
            total_size = total_bytes = 0
            for variable in variables:
                size = variable.get_shape().num_elements() or 0
                size_bytes = size * variable.dtype.size
                total_size += size
                total_bytes += size_bytes
                if print_info:
                    shape = "x".join(str(dim) for dim in variable.get_shape().as_list())
                    print(
                        variable.name, f"({variable.dtype.base_dtype.name} {shape})", f"[{size}, bytes: {size_bytes}]"
                    )
            if print_info:
                print(f"Total size of variables: {total_size}")
                print(f"Total bytes of variables: {total_bytes}")
            return total_size, total_bytes

        @staticmethod
        def analyze_ops(graph, print_info=False):
            """(total ops, total output elements) of `graph`'s ops; with print_info, one line per op."""
            if print_info:
                print("---------")
                print("Operations: name -> (type shapes) [size]")
                print("---------")
            total_size = 0
            for op in graph.get_operations():
                sizes = [output.get_shape().num_elements() or 0 for output in op.outputs]
                total_size += sum(sizes)
                if print_info:
                    shapes = ", ".join(str(output.get_shape()) for output in op.outputs)
                    print(op.name, "->", f"({op.type} {shapes})", f"[{sum(sizes)}]")
            if print_info:
                print(f"Total size: {total_size}")
            return len(graph.get_operations()), total_size

    @staticmethod
    def sequence_loss(
        logits,
        targets,
        weights,
        average_across_timesteps=True,
        average_across_batch=True,
        sum_over_timesteps=False,
        sum_over_batch=False,
        softmax_loss_function=None,
        name=None,
    ):
        with _tf.name_scope(name or "sequence_loss"):
            num_classes = _tf.shape(logits)[2]
            flat_logits = _tf.reshape(logits, [-1, num_classes])
            flat_targets = _tf.reshape(targets, [-1])
            if softmax_loss_function is None:
                crossent = _tf.nn.sparse_softmax_cross_entropy_with_logits(labels=flat_targets, logits=flat_logits)
            else:
                crossent = softmax_loss_function(labels=flat_targets, logits=flat_logits)
            weights = _tf.cast(weights, crossent.dtype)
            crossent = crossent * _tf.reshape(weights, [-1])
            batch_size, time_steps = _tf.shape(logits)[0], _tf.shape(logits)[1]
            if average_across_timesteps and average_across_batch:
                return _tf.reduce_sum(crossent) / (_tf.reduce_sum(weights) + 1e-12)
            if sum_over_timesteps and sum_over_batch:
                return _tf.reduce_sum(crossent) / (_tf.cast(_tf.math.count_nonzero(weights), crossent.dtype) + 1e-12)
            crossent = _tf.reshape(crossent, [batch_size, time_steps])
            if average_across_timesteps or sum_over_timesteps:
                loss = _tf.reduce_sum(crossent, axis=1)
                total = _tf.reduce_sum(weights, axis=1)
                if sum_over_timesteps:
                    total = _tf.cast(_tf.math.count_nonzero(weights, axis=1), crossent.dtype)
                return loss / (total + 1e-12)
            if average_across_batch or sum_over_batch:
                loss = _tf.reduce_sum(crossent, axis=0)
                total = _tf.reduce_sum(weights, axis=0)
                if sum_over_batch:
                    total = _tf.cast(_tf.math.count_nonzero(weights, axis=0), crossent.dtype)
                return loss / (total + 1e-12)
            return crossent
