"""``tf.layers`` / ``tf.compat.v1.layers`` and ``tf.contrib.layers`` functions for TF1 graph code.

With Keras 3, ``tf.compat.v1.layers.dense`` and friends raise AttributeError, and tf.contrib is
gone. These helpers build the same graphs with ``tf.compat.v1.get_variable``, so what TF1 code
relies on keeps working: variable names (``dense/kernel``, ``dense_1/bias``, ``conv2d/kernel``),
sharing through ``variable_scope(..., reuse=True)``, the default initialisers (Glorot uniform
kernels, zero biases) and batch norm's moving averages in ``UPDATE_OPS``. Old checkpoints load
into the migrated graph because the names match.
"""

# These helpers are TF1 graph code on purpose (they stand in for removed TF1 APIs).
# tfpilot: noqa-file[TFP6]
# --- emitted below ---
import tensorflow as _tf

from tfpilot.migrate.shims.refusal import TF1OptionRefused


class _tf1_layers:
    """tf.layers.* / tf.contrib.layers.* (removed with Keras 3) on tf.compat.v1.get_variable, TF1 names kept."""

    @staticmethod
    def _scope(name, default_name, reuse):
        if reuse:  # tf.layers with reuse=True opened the scope by its plain name
            return _tf.compat.v1.variable_scope(name or default_name, reuse=True)
        return _tf.compat.v1.variable_scope(name, default_name=default_name, reuse=reuse)

    @staticmethod
    def _pair(value, rank=2):
        return tuple(value) if isinstance(value, (list, tuple)) else (value,) * rank

    @staticmethod
    def _finish(outputs, activation, activity_regularizer):
        if activation is not None:
            outputs = activation(outputs)
        if activity_regularizer is not None:
            _tf.compat.v1.add_to_collection(
                _tf.compat.v1.GraphKeys.REGULARIZATION_LOSSES, activity_regularizer(outputs)
            )
        return outputs

    @staticmethod
    def _variable(name, shape, initializer, regularizer, trainable, dtype, constraint=None):
        return _tf.compat.v1.get_variable(
            name,
            shape=shape,
            dtype=dtype,
            initializer=initializer,
            regularizer=regularizer,
            trainable=trainable,
            constraint=constraint,
        )

    @staticmethod
    def dense(
        inputs,
        units,
        activation=None,
        use_bias=True,
        kernel_initializer=None,
        bias_initializer=None,
        kernel_regularizer=None,
        bias_regularizer=None,
        activity_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        trainable=True,
        name=None,
        reuse=None,
    ):
        inputs = _tf.convert_to_tensor(inputs)
        dtype = inputs.dtype.base_dtype
        with _tf1_layers._scope(name, "dense", reuse):
            kernel = _tf1_layers._variable(
                "kernel",
                [int(inputs.shape[-1]), units],
                kernel_initializer,
                kernel_regularizer,
                trainable,
                dtype,
                kernel_constraint,
            )
            if inputs.shape.ndims == 2:
                outputs = _tf.matmul(inputs, kernel)
            else:
                outputs = _tf.tensordot(inputs, kernel, [[inputs.shape.ndims - 1], [0]])
            if use_bias:
                bias = _tf1_layers._variable(
                    "bias",
                    [units],
                    bias_initializer or _tf.compat.v1.zeros_initializer(),
                    bias_regularizer,
                    trainable,
                    dtype,
                    bias_constraint,
                )
                outputs = _tf.nn.bias_add(outputs, bias)
            return _tf1_layers._finish(outputs, activation, activity_regularizer)

    @staticmethod
    def _conv(
        rank,
        default_name,
        inputs,
        filters,
        kernel_size,
        strides,
        padding,
        data_format,
        dilation_rate,
        activation,
        use_bias,
        kernel_initializer,
        bias_initializer,
        kernel_regularizer,
        bias_regularizer,
        activity_regularizer,
        kernel_constraint,
        bias_constraint,
        trainable,
        name,
        reuse,
    ):
        inputs = _tf.convert_to_tensor(inputs)
        dtype = inputs.dtype.base_dtype
        channels_first = data_format == "channels_first"
        channels = int(inputs.shape[1] if channels_first else inputs.shape[-1])
        kernel_size = _tf1_layers._pair(kernel_size, rank)
        with _tf1_layers._scope(name, default_name, reuse):
            kernel = _tf1_layers._variable(
                "kernel",
                list(kernel_size) + [channels, filters],
                kernel_initializer,
                kernel_regularizer,
                trainable,
                dtype,
                kernel_constraint,
            )
            outputs = _tf.nn.convolution(
                inputs,
                kernel,
                strides=_tf1_layers._pair(strides, rank),
                padding=padding.upper(),
                dilations=_tf1_layers._pair(dilation_rate, rank),
                data_format=("NC" + "DHW"[3 - rank :]) if channels_first else None,
            )
            if use_bias:
                bias = _tf1_layers._variable(
                    "bias",
                    [filters],
                    bias_initializer or _tf.compat.v1.zeros_initializer(),
                    bias_regularizer,
                    trainable,
                    dtype,
                    bias_constraint,
                )
                outputs = _tf.nn.bias_add(outputs, bias, data_format="NCHW" if channels_first and rank == 2 else None)
            return _tf1_layers._finish(outputs, activation, activity_regularizer)

    @staticmethod
    def conv1d(
        inputs,
        filters,
        kernel_size,
        strides=1,
        padding="valid",
        data_format="channels_last",
        dilation_rate=1,
        activation=None,
        use_bias=True,
        kernel_initializer=None,
        bias_initializer=None,
        kernel_regularizer=None,
        bias_regularizer=None,
        activity_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        trainable=True,
        name=None,
        reuse=None,
    ):
        return _tf1_layers._conv(
            1,
            "conv1d",
            inputs,
            filters,
            kernel_size,
            strides,
            padding,
            data_format,
            dilation_rate,
            activation,
            use_bias,
            kernel_initializer,
            bias_initializer,
            kernel_regularizer,
            bias_regularizer,
            activity_regularizer,
            kernel_constraint,
            bias_constraint,
            trainable,
            name,
            reuse,
        )

    @staticmethod
    def conv2d(
        inputs,
        filters,
        kernel_size,
        strides=(1, 1),
        padding="valid",
        data_format="channels_last",
        dilation_rate=(1, 1),
        activation=None,
        use_bias=True,
        kernel_initializer=None,
        bias_initializer=None,
        kernel_regularizer=None,
        bias_regularizer=None,
        activity_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        trainable=True,
        name=None,
        reuse=None,
    ):
        return _tf1_layers._conv(
            2,
            "conv2d",
            inputs,
            filters,
            kernel_size,
            strides,
            padding,
            data_format,
            dilation_rate,
            activation,
            use_bias,
            kernel_initializer,
            bias_initializer,
            kernel_regularizer,
            bias_regularizer,
            activity_regularizer,
            kernel_constraint,
            bias_constraint,
            trainable,
            name,
            reuse,
        )

    @staticmethod
    def conv2d_transpose(
        inputs,
        filters,
        kernel_size,
        strides=(1, 1),
        padding="valid",
        data_format="channels_last",
        activation=None,
        use_bias=True,
        kernel_initializer=None,
        bias_initializer=None,
        kernel_regularizer=None,
        bias_regularizer=None,
        activity_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        trainable=True,
        name=None,
        reuse=None,
    ):
        if data_format != "channels_last":
            raise TF1OptionRefused("the migrated conv2d_transpose supports data_format='channels_last' only")
        inputs = _tf.convert_to_tensor(inputs)
        dtype = inputs.dtype.base_dtype
        kernel_h, kernel_w = _tf1_layers._pair(kernel_size)
        stride_h, stride_w = _tf1_layers._pair(strides)
        channels = int(inputs.shape[-1])
        with _tf1_layers._scope(name, "conv2d_transpose", reuse):
            # A transposed convolution's kernel is (height, width, out_channels, in_channels), as in TF1.
            kernel = _tf1_layers._variable(
                "kernel",
                [kernel_h, kernel_w, filters, channels],
                kernel_initializer,
                kernel_regularizer,
                trainable,
                dtype,
                kernel_constraint,
            )
            shape = _tf.shape(inputs)
            if padding.lower() == "same":
                height, width = shape[1] * stride_h, shape[2] * stride_w
            else:
                height = shape[1] * stride_h + max(kernel_h - stride_h, 0)
                width = shape[2] * stride_w + max(kernel_w - stride_w, 0)
            outputs = _tf.nn.conv2d_transpose(
                inputs,
                kernel,
                _tf.stack([shape[0], height, width, filters]),
                (1, stride_h, stride_w, 1),
                padding=padding.upper(),
            )
            if use_bias:
                bias = _tf1_layers._variable(
                    "bias",
                    [filters],
                    bias_initializer or _tf.compat.v1.zeros_initializer(),
                    bias_regularizer,
                    trainable,
                    dtype,
                    bias_constraint,
                )
                outputs = _tf.nn.bias_add(outputs, bias)
            return _tf1_layers._finish(outputs, activation, activity_regularizer)

    @staticmethod
    def _pool(kind, rank, inputs, pool_size, strides, padding, data_format):
        channels_first = data_format == "channels_first"
        return _tf.nn.pool(
            inputs,
            window_shape=_tf1_layers._pair(pool_size, rank),
            pooling_type=kind,
            strides=_tf1_layers._pair(strides, rank),
            padding=padding.upper(),
            data_format=("NC" + "DHW"[3 - rank :]) if channels_first else None,
        )

    @staticmethod
    def max_pooling1d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
        return _tf1_layers._pool("MAX", 1, inputs, pool_size, strides, padding, data_format)

    @staticmethod
    def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
        return _tf1_layers._pool("MAX", 2, inputs, pool_size, strides, padding, data_format)

    @staticmethod
    def average_pooling1d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
        return _tf1_layers._pool("AVG", 1, inputs, pool_size, strides, padding, data_format)

    @staticmethod
    def average_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
        return _tf1_layers._pool("AVG", 2, inputs, pool_size, strides, padding, data_format)

    @staticmethod
    def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
        def dropped():
            return _tf.nn.dropout(inputs, rate=rate, noise_shape=noise_shape, seed=seed)

        if isinstance(training, bool):
            return dropped() if training else _tf.identity(inputs)
        return _tf.cond(_tf.cast(training, _tf.bool), dropped, lambda: _tf.identity(inputs))

    @staticmethod
    def flatten(inputs, name=None, data_format="channels_last", outputs_collections=None, scope=None):
        inputs = _tf.convert_to_tensor(inputs)
        if data_format == "channels_first" and inputs.shape.ndims > 2:
            inputs = _tf.transpose(inputs, [0] + list(range(2, inputs.shape.ndims)) + [1])
        static = inputs.shape.as_list()[1:]
        if None not in static:
            size = 1
            for dimension in static:
                size *= dimension
            return _tf.reshape(inputs, [-1, size])
        return _tf.reshape(inputs, _tf.stack([_tf.shape(inputs)[0], -1]))

    @staticmethod
    def batch_normalization(
        inputs,
        axis=-1,
        momentum=0.99,
        epsilon=1e-3,
        center=True,
        scale=True,
        beta_initializer=None,
        gamma_initializer=None,
        moving_mean_initializer=None,
        moving_variance_initializer=None,
        beta_regularizer=None,
        gamma_regularizer=None,
        beta_constraint=None,
        gamma_constraint=None,
        training=False,
        trainable=True,
        name=None,
        reuse=None,
        renorm=False,
        renorm_clipping=None,
        renorm_momentum=0.99,
        fused=None,
        virtual_batch_size=None,
        adjustment=None,
    ):
        if renorm or virtual_batch_size is not None or adjustment is not None:
            raise TF1OptionRefused("the migrated batch_normalization has no renorm / virtual batches")
        inputs = _tf.convert_to_tensor(inputs)
        ndims = inputs.shape.ndims
        axes = [axis] if isinstance(axis, int) else list(axis)
        axes = [a % ndims for a in axes]
        params_shape = [int(inputs.shape[a]) for a in axes]
        reduction = [i for i in range(ndims) if i not in axes]
        broadcast = [int(inputs.shape[i]) if i in axes else 1 for i in range(ndims)]
        dtype = inputs.dtype.base_dtype
        with _tf1_layers._scope(name, "batch_normalization", reuse):
            beta = gamma = None
            if center:
                beta = _tf1_layers._variable(
                    "beta",
                    params_shape,
                    beta_initializer or _tf.compat.v1.zeros_initializer(),
                    beta_regularizer,
                    trainable,
                    dtype,
                    beta_constraint,
                )
            if scale:
                gamma = _tf1_layers._variable(
                    "gamma",
                    params_shape,
                    gamma_initializer or _tf.compat.v1.ones_initializer(),
                    gamma_regularizer,
                    trainable,
                    dtype,
                    gamma_constraint,
                )
            moving_mean = _tf.compat.v1.get_variable(
                "moving_mean",
                params_shape,
                dtype,
                moving_mean_initializer or _tf.compat.v1.zeros_initializer(),
                trainable=False,
                collections=[
                    _tf.compat.v1.GraphKeys.GLOBAL_VARIABLES,
                    _tf.compat.v1.GraphKeys.MOVING_AVERAGE_VARIABLES,
                ],
            )
            moving_variance = _tf.compat.v1.get_variable(
                "moving_variance",
                params_shape,
                dtype,
                moving_variance_initializer or _tf.compat.v1.ones_initializer(),
                trainable=False,
                collections=[
                    _tf.compat.v1.GraphKeys.GLOBAL_VARIABLES,
                    _tf.compat.v1.GraphKeys.MOVING_AVERAGE_VARIABLES,
                ],
            )

            def normalize(mean, variance):
                def shaped(value):
                    return None if value is None else _tf.reshape(value, broadcast)

                return _tf.nn.batch_normalization(
                    inputs, shaped(mean), shaped(variance), shaped(beta), shaped(gamma), epsilon
                )

            def batch_statistics():
                mean, variance = _tf.nn.moments(inputs, reduction)
                return mean, variance

            if fused is not False and ndims == 4 and axes in ([3], [1]) and dtype in (_tf.float16, _tf.float32):
                return _tf1_layers._fused_batch_norm(
                    inputs, gamma, beta, moving_mean, moving_variance, momentum, epsilon, training, axes[0]
                )
            if isinstance(training, bool) and not training:
                return normalize(moving_mean, moving_variance)
            if isinstance(training, bool):
                mean, variance = batch_statistics()
            else:
                # TF1's layer computed the batch moments outside its smart_cond and selected them there: the
                # same graph, so the same float rounding (moments inside the cond drifted a seeded
                # batch-norm lesson's accuracy by 8 test examples in 10000)
                training = _tf.cast(training, _tf.bool)
                batch_mean, batch_variance = batch_statistics()
                mean = _tf.cond(training, lambda: batch_mean, lambda: _tf.convert_to_tensor(moving_mean))
                variance = _tf.cond(training, lambda: batch_variance, lambda: _tf.convert_to_tensor(moving_variance))
            # TF1 batch norm left the moving-average updates in UPDATE_OPS for the train op to depend on.
            decay = 1.0 - momentum
            for variable, value in ((moving_mean, mean), (moving_variance, variance)):
                update = _tf.compat.v1.assign_sub(variable, (variable - value) * decay)
                _tf.compat.v1.add_to_collection(_tf.compat.v1.GraphKeys.UPDATE_OPS, update)
            return normalize(mean, variance)

    @staticmethod
    def _fused_batch_norm(inputs, gamma, beta, moving_mean, moving_variance, momentum, epsilon, training, axis):
        """TF1's fused path, which tf.layers.batch_normalization took for 4-D input with the channels on axis 1
        or 3 (`fused=None` meant fused there): FusedBatchNorm normalises with the batch's own variance but
        returns it with Bessel's correction, and that corrected variance fed the moving average (TF1's
        `_bessels_correction_test_only`); a tensor `training` selects the train or inference kernel, and the
        momentum is 1.0 in inference, so the updates in UPDATE_OPS move nothing there."""
        params = inputs.shape[axis : axis + 1]
        scale = gamma if gamma is not None else _tf.ones(params, inputs.dtype)
        offset = beta if beta is not None else _tf.zeros(params, inputs.dtype)
        data_format = "NHWC" if axis == 3 else "NCHW"

        def train():
            return _tf.compat.v1.nn.fused_batch_norm(
                inputs, scale, offset, epsilon=epsilon, data_format=data_format, is_training=True
            )

        def infer():
            return _tf.compat.v1.nn.fused_batch_norm(
                inputs,
                scale,
                offset,
                mean=_tf.convert_to_tensor(moving_mean),
                variance=_tf.convert_to_tensor(moving_variance),
                epsilon=epsilon,
                data_format=data_format,
                is_training=False,
            )

        if isinstance(training, bool):
            if not training:
                return infer()[0]
            output, mean, variance = train()
            rate = _tf.convert_to_tensor(momentum)
        else:
            training = _tf.cast(training, _tf.bool)
            output, mean, variance = _tf.cond(training, train, infer)
            rate = _tf.cond(training, lambda: _tf.constant(momentum), lambda: _tf.constant(1.0))
        decay = _tf.cast(1.0 - rate, moving_mean.dtype)  # a float32 subtraction, as TF1's fused path made it
        for variable, value in ((moving_mean, mean), (moving_variance, variance)):
            update = _tf.compat.v1.assign_sub(variable, (variable - _tf.cast(value, variable.dtype)) * decay)
            _tf.compat.v1.add_to_collection(_tf.compat.v1.GraphKeys.UPDATE_OPS, update)
        output.set_shape(inputs.shape)
        return output

    class _Layer:
        """A tf.layers class (`tf.layers.Dense(units=1)`, then `layer(x)`): the function of the same
        name, its variables made under one scope on the first call and shared by later calls, as
        TF1's layer objects did (`dense/kernel`, then `dense_1/kernel` for the next object)."""

        _function = ""
        _default_name = ""
        _has_variables = False

        def __init__(self, *args, name=None, **kwargs):
            self._args, self._kwargs, self._name, self._scope = args, kwargs, name, None

        def __call__(self, inputs, **call_kwargs):
            function = getattr(_tf1_layers, self._function)
            if not self._has_variables:
                return function(inputs, *self._args, name=self._name, **self._kwargs, **call_kwargs)
            reuse = self._scope is not None
            if not reuse:
                with _tf.compat.v1.variable_scope(self._name, default_name=self._default_name) as scope:
                    self._scope = scope  # the unique name (dense, dense_1, ...), taken once
            return function(inputs, *self._args, name=self._scope, reuse=reuse or None, **self._kwargs, **call_kwargs)

        def apply(self, inputs, **call_kwargs):
            return self(inputs, **call_kwargs)

    class Dense(_Layer):
        _function, _default_name, _has_variables = "dense", "dense", True

    class Conv1D(_Layer):
        _function, _default_name, _has_variables = "conv1d", "conv1d", True

    class Conv2D(_Layer):
        _function, _default_name, _has_variables = "conv2d", "conv2d", True

    class Conv2DTranspose(_Layer):
        _function, _default_name, _has_variables = "conv2d_transpose", "conv2d_transpose", True

    class BatchNormalization(_Layer):
        _function, _default_name, _has_variables = "batch_normalization", "batch_normalization", True

    class MaxPooling1D(_Layer):
        _function = "max_pooling1d"

    class MaxPooling2D(_Layer):
        _function = "max_pooling2d"

    class AveragePooling1D(_Layer):
        _function = "average_pooling1d"

    class AveragePooling2D(_Layer):
        _function = "average_pooling2d"

    class Dropout(_Layer):
        _function = "dropout"

    class Flatten(_Layer):
        _function = "flatten"
