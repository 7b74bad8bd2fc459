"""``tf.estimator`` (removed in TF 2.16) as a small TF1-graph runner, for migrated Estimator code.

A migrated ``model_fn`` still builds a TF1 graph (tf.compat.v1 layers, losses, optimizers,
``tf.compat.v1.metrics``), so this helper runs it the way TF1's Estimator did: each call builds a
fresh ``tf.Graph``, calls ``input_fn`` and ``model_fn`` in it, and runs the graph in a
``tf.compat.v1.train.MonitoredTrainingSession`` that restores the latest checkpoint in
``model_dir`` and writes new ones there. A second ``train`` call resumes where the first stopped;
``evaluate``, ``predict`` and ``export_saved_model`` read the same checkpoints.

Covered: ``Estimator(model_fn, model_dir, config, params)`` with ``train`` (steps / max_steps /
hooks / saving_listeners), ``evaluate`` (``eval_metric_ops`` from ``tf.compat.v1.metrics``, plus
``loss`` and ``global_step``), ``predict`` (dicts or a single tensor, ``predict_keys``,
``yield_single_examples``) and ``export_saved_model`` (``PredictOutput`` / ``ClassificationOutput``
/ ``RegressionOutput``, raw and tf.Example receivers); ``EstimatorSpec``, ``ModeKeys``,
``RunConfig``, ``numpy_input_fn``, ``TrainSpec`` / ``EvalSpec`` / ``train_and_evaluate`` (local,
``LatestExporter`` / ``FinalExporter``), and the canned ``DNNClassifier``, ``DNNRegressor``,
``LinearClassifier`` and ``LinearRegressor`` over ``tf.feature_column`` columns (TF1's v1 heads:
losses summed over the batch, TF1's default optimizers and learning rates).

Refused with NotImplementedError (the migrate report names literal uses before the run):
``warm_start_from``, distribution strategies and ``device_fn`` in RunConfig, canned estimators'
``label_vocabulary`` / ``weight_column`` / ``batch_norm``, Keras optimizers passed to a canned
estimator, Keras metric objects in ``eval_metric_ops``, and a multi-worker ``TF_CONFIG``.
"""

# These helpers are TF1 graph code on purpose (they stand in for removed TF1 APIs).
# tfpilot: noqa-file[TFP6]
# --- emitted below ---
import collections as _collections
import copy as _copy
import inspect as _inspect
import json as _json
import os as _os
import shutil as _shutil
import tempfile as _tempfile
import time as _time

import numpy as _np
import tensorflow as _tf

from tfpilot.migrate.shims.refusal import TF1OptionRefused


class _tf1_estimator:
    """tf.estimator.* (removed in TF 2.16): model_fn + input_fn run in a TF1 graph, checkpoints in model_dir."""

    class ModeKeys:
        TRAIN = "train"
        EVAL = "eval"
        PREDICT = "infer"

    class RunConfig:
        _REFUSED = ("train_distribute", "eval_distribute", "experimental_distribute", "device_fn")

        def __init__(
            self,
            model_dir=None,
            tf_random_seed=None,
            save_summary_steps=100,
            save_checkpoints_steps=None,
            save_checkpoints_secs="default",
            session_config=None,
            keep_checkpoint_max=5,
            keep_checkpoint_every_n_hours=10000,
            log_step_count_steps=100,
            train_distribute=None,
            device_fn=None,
            protocol=None,
            eval_distribute=None,
            experimental_distribute=None,
            experimental_max_worker_delay_secs=None,
            session_creation_timeout_secs=7200,
            checkpoint_save_graph_def=True,
        ):
            if train_distribute is not None or eval_distribute is not None or experimental_distribute is not None:
                raise TF1OptionRefused("the migrated RunConfig trains on one device: no train_distribute")
            if device_fn is not None:
                raise TF1OptionRefused("the migrated RunConfig has no device_fn")
            if save_checkpoints_steps is not None and save_checkpoints_secs not in (None, "default"):
                raise ValueError("Can not provide both save_checkpoints_steps and save_checkpoints_secs.")
            if save_checkpoints_secs == "default":
                save_checkpoints_secs = None if save_checkpoints_steps is not None else 600
            self.model_dir = model_dir
            self.tf_random_seed = tf_random_seed
            self.save_summary_steps = save_summary_steps
            self.save_checkpoints_steps = save_checkpoints_steps
            self.save_checkpoints_secs = save_checkpoints_secs
            self.session_config = session_config
            self.keep_checkpoint_max = keep_checkpoint_max
            self.keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
            self.log_step_count_steps = log_step_count_steps
            self.train_distribute = None
            self.eval_distribute = None
            self.device_fn = None
            self.is_chief = True
            self.num_ps_replicas = 0
            self.num_worker_replicas = 1
            self.task_type = "worker"
            self.task_id = 0
            self.cluster_spec = None
            self.master = ""
            self.evaluation_master = ""
            self.global_id_in_cluster = 0
            self.session_creation_timeout_secs = session_creation_timeout_secs

        def replace(self, **kwargs):
            values = {name: getattr(self, name) for name in _inspect.signature(type(self).__init__).parameters
                      if name != "self" and hasattr(self, name)}  # fmt: skip
            if "save_checkpoints_steps" in kwargs and "save_checkpoints_secs" not in kwargs:
                values["save_checkpoints_secs"] = None
            if "save_checkpoints_secs" in kwargs and "save_checkpoints_steps" not in kwargs:
                values["save_checkpoints_steps"] = None
            values.update(kwargs)
            return type(self)(**values)

    class EstimatorSpec(
        _collections.namedtuple(
            "EstimatorSpec",
            [
                "mode",
                "predictions",
                "loss",
                "train_op",
                "eval_metric_ops",
                "export_outputs",
                "training_chief_hooks",
                "training_hooks",
                "scaffold",
                "evaluation_hooks",
                "prediction_hooks",
            ],
        )
    ):
        def __new__(
            cls,
            mode,
            predictions=None,
            loss=None,
            train_op=None,
            eval_metric_ops=None,
            export_outputs=None,
            training_chief_hooks=None,
            training_hooks=None,
            scaffold=None,
            evaluation_hooks=None,
            prediction_hooks=None,
        ):
            modes = _tf1_estimator.ModeKeys
            if mode == modes.TRAIN and (loss is None or train_op is None):
                raise ValueError("Missing loss or train_op: EstimatorSpec in TRAIN mode needs both.")
            if mode == modes.EVAL and loss is None:
                raise ValueError("Missing loss: EstimatorSpec in EVAL mode needs it.")
            if mode == modes.PREDICT and predictions is None:
                raise ValueError("Missing predictions: EstimatorSpec in PREDICT mode needs them.")
            for name, metric in (eval_metric_ops or {}).items():
                if not isinstance(metric, (tuple, list)) or len(metric) != 2:
                    raise TF1OptionRefused(
                        f"eval_metric_ops[{name!r}]: the migrated Estimator takes (value, update_op) pairs from "
                        "tf.compat.v1.metrics, not Keras metric objects"
                    )
            if mode == modes.PREDICT:
                if export_outputs is None:
                    export_outputs = {"serving_default": _tf1_estimator.PredictOutput(predictions)}
                elif "serving_default" not in export_outputs:
                    if len(export_outputs) != 1:
                        raise ValueError("Multiple export_outputs were provided, but none of them is the default.")
                    export_outputs = dict(export_outputs, serving_default=next(iter(export_outputs.values())))
            return super().__new__(
                cls,
                mode,
                predictions,
                loss,
                train_op,
                eval_metric_ops or {},
                export_outputs,
                tuple(training_chief_hooks or ()),
                tuple(training_hooks or ()),
                scaffold,
                tuple(evaluation_hooks or ()),
                tuple(prediction_hooks or ()),
            )

    class PredictOutput:
        def __init__(self, outputs):
            self.outputs = outputs if isinstance(outputs, dict) else {"output": outputs}

        def signature(self, receiver_tensors):
            return _tf.compat.v1.saved_model.predict_signature_def(receiver_tensors, self.outputs)

    class ClassificationOutput:
        def __init__(self, scores=None, classes=None):
            if scores is None and classes is None:
                raise ValueError("At least one of scores and classes must be set.")
            self.scores, self.classes = scores, classes

        def signature(self, receiver_tensors):
            tensors = list(receiver_tensors.values())
            if len(tensors) == 1 and tensors[0].dtype == _tf.string:  # tf.Example input, as TF1 required
                return _tf.compat.v1.saved_model.classification_signature_def(tensors[0], self.classes, self.scores)
            outputs = {name: t for name, t in (("scores", self.scores), ("classes", self.classes)) if t is not None}
            return _tf.compat.v1.saved_model.predict_signature_def(receiver_tensors, outputs)

    class RegressionOutput:
        def __init__(self, value):
            self.value = value

        def signature(self, receiver_tensors):
            tensors = list(receiver_tensors.values())
            if len(tensors) == 1 and tensors[0].dtype == _tf.string:
                return _tf.compat.v1.saved_model.regression_signature_def(tensors[0], self.value)
            return _tf.compat.v1.saved_model.predict_signature_def(receiver_tensors, {"outputs": self.value})

    class ServingInputReceiver:
        def __init__(self, features, receiver_tensors, receiver_tensors_alternatives=None):
            self.features = features if isinstance(features, dict) else {"feature": features}
            self.receiver_tensors = (
                receiver_tensors if isinstance(receiver_tensors, dict) else {"input": receiver_tensors}
            )
            self.receiver_tensors_alternatives = receiver_tensors_alternatives

    class TensorServingInputReceiver(ServingInputReceiver):
        def __init__(self, features, receiver_tensors, receiver_tensors_alternatives=None):
            super().__init__(features, receiver_tensors, receiver_tensors_alternatives)
            self.features = features  # the model_fn gets the tensor itself

    @staticmethod
    def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
        def serving_input_receiver_fn():
            receivers = {
                name: _tf.compat.v1.placeholder(
                    tensor.dtype, [default_batch_size] + tensor.shape.as_list()[1:], name=name
                )
                for name, tensor in features.items()
            }
            return _tf1_estimator.ServingInputReceiver(receivers, receivers)

        return serving_input_receiver_fn

    @staticmethod
    def build_parsing_serving_input_receiver_fn(feature_spec, default_batch_size=None):
        def serving_input_receiver_fn():
            examples = _tf.compat.v1.placeholder(_tf.string, [default_batch_size], name="input_example_tensor")
            features = _tf.compat.v1.parse_example(examples, feature_spec)
            return _tf1_estimator.ServingInputReceiver(features, {"examples": examples})

        return serving_input_receiver_fn

    @staticmethod
    def numpy_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None, queue_capacity=1000, num_threads=1):
        """TF1's numpy_input_fn on tf.data: batches span epochs, the last one may be short."""
        if not isinstance(shuffle, bool):
            raise ValueError(f"shuffle must be provided and explicitly set as boolean (got {shuffle!r})")

        def arrays(value):
            return {k: _np.asarray(v) for k, v in value.items()} if isinstance(value, dict) else _np.asarray(value)

        features, labels = arrays(x), None if y is None else arrays(y)

        def input_fn():
            dataset = _tf.data.Dataset.from_tensor_slices(features if labels is None else (features, labels))
            if shuffle:
                dataset = dataset.shuffle(queue_capacity)
            return dataset.repeat(num_epochs).batch(batch_size)

        return input_fn

    class TrainSpec(_collections.namedtuple("TrainSpec", ["input_fn", "max_steps", "hooks", "saving_listeners"])):
        def __new__(cls, input_fn, max_steps=None, hooks=None, saving_listeners=None):
            return super().__new__(cls, input_fn, max_steps, tuple(hooks or ()), tuple(saving_listeners or ()))

    class EvalSpec(
        _collections.namedtuple(
            "EvalSpec", ["input_fn", "steps", "name", "hooks", "exporters", "start_delay_secs", "throttle_secs"]
        )
    ):
        def __new__(cls, input_fn, steps=100, name=None, hooks=None, exporters=None, start_delay_secs=120,
                    throttle_secs=600):  # fmt: skip
            if exporters is None:
                exporters = ()
            elif not isinstance(exporters, (list, tuple)):
                exporters = (exporters,)
            return super().__new__(
                cls, input_fn, steps, name, tuple(hooks or ()), tuple(exporters), start_delay_secs, throttle_secs
            )

    class LatestExporter:
        final_only = False

        def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False, exports_to_keep=5):
            self.name, self.serving_input_receiver_fn = name, serving_input_receiver_fn
            self.exports_to_keep = exports_to_keep

        def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
            path = estimator.export_saved_model(
                export_path, self.serving_input_receiver_fn, checkpoint_path=checkpoint_path
            )
            if self.exports_to_keep:
                done = sorted(entry for entry in _os.listdir(export_path) if entry.isdigit())
                for old in done[: -self.exports_to_keep]:
                    _shutil.rmtree(_os.path.join(export_path, old), ignore_errors=True)
            return path

    class FinalExporter(LatestExporter):
        final_only = True

        def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False):
            super().__init__(name, serving_input_receiver_fn, exports_to_keep=None)

    @staticmethod
    def _call_with(function, **available):
        """Call ``function`` with the arguments it names (model_fn / input_fn signatures vary)."""
        parameters = _inspect.signature(function).parameters
        if any(p.kind == p.VAR_KEYWORD for p in parameters.values()):
            return function(**available)
        return function(**{name: value for name, value in available.items() if name in parameters})

    class _DatasetInitializer(_tf.compat.v1.train.SessionRunHook):
        def __init__(self, iterator):
            self._iterator = iterator

        def after_create_session(self, session, coord):
            session.run(self._iterator.initializer)

    class _StopAfter(_tf.compat.v1.train.SessionRunHook):
        def __init__(self, steps):
            self._steps, self._done = steps, 0

        def after_run(self, run_context, run_values):
            self._done += 1
            if self._steps is not None and self._done >= self._steps:
                run_context.request_stop()

    class Estimator:
        def __init__(self, model_fn, model_dir=None, config=None, params=None, warm_start_from=None):
            if warm_start_from is not None:
                raise TF1OptionRefused("the migrated Estimator has no warm_start_from: restore the variables by hand")
            config = config if config is not None else _tf1_estimator.RunConfig()
            model_dir = model_dir or config.model_dir
            if model_dir is None:
                model_dir = _tempfile.mkdtemp()
                _tf.compat.v1.logging.warning(f"Using temporary folder as model directory: {model_dir}")
            self._model_fn = model_fn
            self._model_dir = str(model_dir)
            self._config = config.replace(model_dir=self._model_dir)
            # TF1 kept a deep copy of whatever params was (a dict, or a project's own Params object)
            self._params = _copy.deepcopy(params) if params is not None else {}

        model_dir = property(lambda self: self._model_dir)
        config = property(lambda self: self._config)
        params = property(lambda self: _copy.deepcopy(self._params))
        model_fn = property(lambda self: self._model_fn)

        def latest_checkpoint(self):
            return _tf.train.latest_checkpoint(self._model_dir)

        def get_variable_names(self):
            return [name for name, _shape in _tf.train.list_variables(self._need_checkpoint(None))]

        def get_variable_value(self, name):
            return _tf.train.load_variable(self._need_checkpoint(None), name)

        def _need_checkpoint(self, checkpoint_path):
            found = checkpoint_path or self.latest_checkpoint()
            if not found:
                raise ValueError(f"Could not find trained model in model_dir: {self._model_dir}.")
            return found

        def _features_and_labels(self, input_fn, mode, hooks):
            result = _tf1_estimator._call_with(input_fn, mode=mode, params=self._params, config=self._config)
            if isinstance(result, _tf.data.Dataset):
                iterator = _tf.compat.v1.data.make_initializable_iterator(result)
                hooks.append(_tf1_estimator._DatasetInitializer(iterator))
                result = iterator.get_next()
            if isinstance(result, (tuple, list)) and len(result) == 2:
                return result[0], result[1]
            return result, None

        def _spec(self, features, labels, mode):
            if labels is not None and "labels" not in _inspect.signature(self._model_fn).parameters:
                raise ValueError("model_fn does not take labels, but input_fn returns labels.")  # as TF1 said
            spec = _tf1_estimator._call_with(self._model_fn, features=features, labels=labels, mode=mode,
                                             params=self._params, config=self._config)  # fmt: skip
            if not isinstance(spec, _tf1_estimator.EstimatorSpec):
                raise ValueError("model_fn should return an EstimatorSpec.")
            return spec

        def _graph(self):
            graph = _tf.Graph()
            if self._config.tf_random_seed is not None:
                with graph.as_default():
                    _tf.compat.v1.set_random_seed(self._config.tf_random_seed)
            return graph

        def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
            if steps is not None and max_steps is not None:
                raise ValueError("Can not provide both steps and max_steps.")
            latest = self.latest_checkpoint()
            if max_steps is not None and latest and _tf.train.load_variable(latest, "global_step") >= max_steps:
                _tf.compat.v1.logging.info(f"Skipping training since max_steps has already saved: {max_steps}")
                return self
            config = self._config
            with self._graph().as_default():
                global_step = _tf.compat.v1.train.get_or_create_global_step()
                run_hooks: list = []
                features, labels = self._features_and_labels(input_fn, _tf1_estimator.ModeKeys.TRAIN, run_hooks)
                spec = self._spec(features, labels, _tf1_estimator.ModeKeys.TRAIN)
                scaffold = spec.scaffold or _tf.compat.v1.train.Scaffold(
                    saver=_tf.compat.v1.train.Saver(
                        sharded=True,
                        max_to_keep=config.keep_checkpoint_max,
                        keep_checkpoint_every_n_hours=config.keep_checkpoint_every_n_hours,
                        save_relative_paths=True,
                    )
                )
                if steps is not None or max_steps is not None:  # else: until input_fn's data runs out
                    run_hooks.append(_tf.compat.v1.train.StopAtStepHook(num_steps=steps, last_step=max_steps))
                run_hooks += [
                    _tf.compat.v1.train.NanTensorHook(spec.loss),
                    _tf.compat.v1.train.LoggingTensorHook(
                        {"loss": spec.loss, "step": global_step}, every_n_iter=config.log_step_count_steps or 100
                    ),
                    *(hooks or ()),
                    *spec.training_hooks,
                ]
                chief_hooks = list(spec.training_chief_hooks)
                if config.save_checkpoints_steps or config.save_checkpoints_secs:
                    chief_hooks.append(
                        _tf.compat.v1.train.CheckpointSaverHook(
                            self._model_dir,
                            save_secs=config.save_checkpoints_secs,
                            save_steps=config.save_checkpoints_steps,
                            scaffold=scaffold,
                            listeners=list(saving_listeners or ()),
                        )
                    )
                loss = None
                with _tf.compat.v1.train.MonitoredTrainingSession(
                    checkpoint_dir=self._model_dir,
                    scaffold=scaffold,
                    hooks=run_hooks,
                    chief_only_hooks=chief_hooks,
                    save_checkpoint_secs=None,
                    save_checkpoint_steps=None,
                    save_summaries_steps=config.save_summary_steps,
                    log_step_count_steps=config.log_step_count_steps,
                    config=config.session_config,
                ) as session:
                    while not session.should_stop():
                        _, loss = session.run([spec.train_op, spec.loss])
                if loss is not None:
                    _tf.compat.v1.logging.info(f"Loss for final step: {loss}.")
            return self

        def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
            checkpoint = self._need_checkpoint(checkpoint_path)
            with self._graph().as_default():
                global_step = _tf.compat.v1.train.get_or_create_global_step()
                run_hooks: list = []
                features, labels = self._features_and_labels(input_fn, _tf1_estimator.ModeKeys.EVAL, run_hooks)
                spec = self._spec(features, labels, _tf1_estimator.ModeKeys.EVAL)
                metrics = dict(spec.eval_metric_ops)
                metrics.setdefault("loss", _tf.compat.v1.metrics.mean(spec.loss))
                values = {name: value for name, (value, _update) in metrics.items()}
                values["global_step"] = global_step
                final = _tf.compat.v1.train.FinalOpsHook(values)
                updates = _tf.group(*[update for _value, update in metrics.values()])
                run_hooks += [_tf1_estimator._StopAfter(steps), *(hooks or ()), *spec.evaluation_hooks, final]
                creator = _tf.compat.v1.train.ChiefSessionCreator(
                    checkpoint_filename_with_path=checkpoint, config=self._config.session_config
                )
                with _tf.compat.v1.train.MonitoredSession(session_creator=creator, hooks=run_hooks) as session:
                    while not session.should_stop():
                        session.run(updates)
            results = dict(final.final_ops_values)
            shown = ", ".join(f"{key} = {value}" for key, value in sorted(results.items()))
            _tf.compat.v1.logging.info(f"Saving dict for global step {results['global_step']}: {shown}")
            return results

        def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None, yield_single_examples=True):
            checkpoint = checkpoint_path or self.latest_checkpoint()
            if not checkpoint:
                _tf.compat.v1.logging.info(
                    f"Could not find trained model in model_dir: {self._model_dir}, running initialization to predict."
                )
            with self._graph().as_default():
                _tf.compat.v1.train.get_or_create_global_step()
                run_hooks: list = []
                features, _labels = self._features_and_labels(input_fn, _tf1_estimator.ModeKeys.PREDICT, run_hooks)
                spec = self._spec(features, None, _tf1_estimator.ModeKeys.PREDICT)
                predictions = spec.predictions
                if isinstance(predictions, dict) and predict_keys is not None:
                    keys = [predict_keys] if isinstance(predict_keys, str) else list(predict_keys)
                    predictions = {key: predictions[key] for key in keys}
                creator = _tf.compat.v1.train.ChiefSessionCreator(
                    checkpoint_filename_with_path=checkpoint, config=self._config.session_config
                )
                run_hooks += [*(hooks or ()), *spec.prediction_hooks]
                with _tf.compat.v1.train.MonitoredSession(session_creator=creator, hooks=run_hooks) as session:
                    while not session.should_stop():
                        batch = session.run(predictions)
                        if not yield_single_examples:
                            yield batch
                        elif isinstance(batch, dict):
                            for index in range(len(next(iter(batch.values())))):
                                yield {key: value[index] for key, value in batch.items()}
                        else:
                            yield from batch

        def export_saved_model(
            self,
            export_dir_base,
            serving_input_receiver_fn,
            assets_extra=None,
            as_text=False,
            checkpoint_path=None,
            experimental_mode="infer",
        ):
            if experimental_mode != _tf1_estimator.ModeKeys.PREDICT:
                raise TF1OptionRefused("the migrated Estimator exports the PREDICT graph only")
            checkpoint = checkpoint_path or self.latest_checkpoint()
            if not checkpoint:
                raise ValueError(f"Couldn't find trained model at {self._model_dir}.")
            export_dir_base = _os.fsdecode(export_dir_base)
            stamp = int(_time.time())
            while _os.path.exists(_os.path.join(export_dir_base, str(stamp))):
                stamp += 1
            final_dir = _os.path.join(export_dir_base, str(stamp))
            temp_dir = _os.path.join(export_dir_base, f"temp-{stamp}")
            with self._graph().as_default() as graph:
                _tf.compat.v1.train.get_or_create_global_step()
                receiver = serving_input_receiver_fn()
                spec = self._spec(receiver.features, None, _tf1_estimator.ModeKeys.PREDICT)
                signatures = {name: output.signature(receiver.receiver_tensors)
                              for name, output in spec.export_outputs.items()}  # fmt: skip
                saver = _tf.compat.v1.train.Saver(sharded=True)
                with _tf.compat.v1.Session(graph=graph, config=self._config.session_config) as session:
                    saver.restore(session, checkpoint)
                    session.run([_tf.compat.v1.local_variables_initializer(), _tf.compat.v1.tables_initializer()])
                    builder = _tf.compat.v1.saved_model.Builder(temp_dir)
                    builder.add_meta_graph_and_variables(
                        session,
                        [_tf.saved_model.SERVING],
                        signature_def_map=signatures,
                        main_op=_tf.compat.v1.tables_initializer(),
                        strip_default_attrs=True,
                        saver=saver,
                    )
                    builder.save(as_text)
            for relative, source in (assets_extra or {}).items():
                target = _os.path.join(temp_dir, "assets.extra", relative)
                _os.makedirs(_os.path.dirname(target), exist_ok=True)
                _shutil.copyfile(source, target)
            _os.rename(temp_dir, final_dir)
            _tf.compat.v1.logging.info(f"SavedModel written to: {final_dir}")
            return final_dir.encode()

        export_savedmodel = export_saved_model

    @staticmethod
    def train_and_evaluate(estimator, train_spec, eval_spec):
        """Local train_and_evaluate: evaluate on new checkpoints at most every throttle_secs, and at the end."""
        cluster = _json.loads(_os.environ.get("TF_CONFIG") or "{}").get("cluster")
        if cluster and sum(len(tasks) for tasks in cluster.values()) > 1:
            raise TF1OptionRefused("the migrated train_and_evaluate runs locally: no multi-worker TF_CONFIG")
        state: dict = {"last": None, "time": _time.time(), "first": True, "result": None, "exports": []}

        def evaluate(is_final):
            result = estimator.evaluate(eval_spec.input_fn, steps=eval_spec.steps, hooks=eval_spec.hooks,
                                        name=eval_spec.name)  # fmt: skip
            state.update(last=result["global_step"], time=_time.time(), result=result)
            checkpoint = estimator.latest_checkpoint()
            for exporter in eval_spec.exporters:
                if is_final or not exporter.final_only:
                    base = _os.path.join(estimator.model_dir, "export", exporter.name)
                    state["exports"].append(exporter.export(estimator, base, checkpoint, result, is_final))

        class Listener(_tf.compat.v1.train.CheckpointSaverListener):
            def after_save(self, session, global_step_value):
                if state["first"]:  # TF1 skipped the checkpoint written when training starts
                    state["first"] = False
                    return
                final = train_spec.max_steps is not None and global_step_value >= train_spec.max_steps
                if final or _time.time() - state["time"] >= eval_spec.throttle_secs:
                    evaluate(final)

        estimator.train(train_spec.input_fn, hooks=train_spec.hooks, max_steps=train_spec.max_steps,
                        saving_listeners=[Listener(), *train_spec.saving_listeners])  # fmt: skip
        latest = estimator.latest_checkpoint()
        if state["last"] is None or _tf.train.load_variable(latest, "global_step") != state["last"]:
            evaluate(True)
        return state["result"], state["exports"]

    # --- canned estimators (TF1's v1 heads: the training loss is summed over the batch) ---

    @staticmethod
    def _optimizer(optimizer, learning_rate):
        names = {
            "Adagrad": _tf.compat.v1.train.AdagradOptimizer,
            "Adam": _tf.compat.v1.train.AdamOptimizer,
            "Ftrl": _tf.compat.v1.train.FtrlOptimizer,
            "RMSProp": _tf.compat.v1.train.RMSPropOptimizer,
            "SGD": _tf.compat.v1.train.GradientDescentOptimizer,
        }
        if isinstance(optimizer, str):
            return names[optimizer](learning_rate=learning_rate)
        if callable(optimizer) and not isinstance(optimizer, _tf.compat.v1.train.Optimizer):
            optimizer = optimizer()
        if not isinstance(optimizer, _tf.compat.v1.train.Optimizer):
            raise TF1OptionRefused(
                "the migrated canned estimators take a tf.compat.v1.train optimizer or its name, not a Keras optimizer"
            )
        return optimizer

    @staticmethod
    def _head_spec(features, labels, mode, logits, kind, n_classes, optimizer):
        """TF1's canned heads: binary / multi-class classification and regression."""
        modes = _tf1_estimator.ModeKeys
        if kind == "regression":
            predictions = {"predictions": logits}
            outputs = {"serving_default": _tf1_estimator.RegressionOutput(logits),
                       "regression": _tf1_estimator.RegressionOutput(logits),
                       "predict": _tf1_estimator.PredictOutput(predictions)}  # fmt: skip
        else:
            if n_classes == 2:
                logistic = _tf.sigmoid(logits)
                probabilities = _tf.concat([1 - logistic, logistic], axis=1)
                class_ids = _tf.cast(logits > 0, _tf.int64)
            else:
                probabilities = _tf.nn.softmax(logits)
                class_ids = _tf.expand_dims(_tf.argmax(logits, axis=1), 1)
            predictions = {"logits": logits, "probabilities": probabilities, "class_ids": class_ids,
                           "classes": _tf.strings.as_string(class_ids)}  # fmt: skip
            if n_classes == 2:
                predictions["logistic"] = logistic
            all_ids = _tf.tile(_tf.range(n_classes, dtype=_tf.int64)[None, :], [_tf.shape(logits)[0], 1])
            predictions["all_class_ids"] = _tf.cast(all_ids, _tf.int32)
            predictions["all_classes"] = _tf.strings.as_string(all_ids)
            classification = _tf1_estimator.ClassificationOutput(scores=probabilities,
                                                                 classes=predictions["all_classes"])  # fmt: skip
            outputs = {"serving_default": classification, "classification": classification,
                       "predict": _tf1_estimator.PredictOutput(predictions)}  # fmt: skip
        if mode == modes.PREDICT:
            return _tf1_estimator.EstimatorSpec(mode, predictions=predictions, export_outputs=outputs)
        if kind == "regression":
            labels = _tf.reshape(_tf.cast(labels, _tf.float32), _tf.shape(logits))
            unreduced = _tf.square(logits - labels)
        elif n_classes == 2:
            labels = _tf.reshape(_tf.cast(labels, _tf.float32), [-1, 1])
            unreduced = _tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
        else:
            labels = _tf.reshape(_tf.cast(labels, _tf.int64), [-1, 1])
            unreduced = _tf.expand_dims(
                _tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels[:, 0], logits=logits), 1
            )
        loss = _tf.reduce_sum(unreduced)
        if mode == modes.TRAIN:
            with _tf.control_dependencies(_tf.compat.v1.get_collection(_tf.compat.v1.GraphKeys.UPDATE_OPS)):
                train_op = optimizer.minimize(loss, global_step=_tf.compat.v1.train.get_global_step())
            return _tf1_estimator.EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op)
        metrics = {"average_loss": _tf.compat.v1.metrics.mean(unreduced)}
        if kind == "regression":
            metrics["label/mean"] = _tf.compat.v1.metrics.mean(labels)
            metrics["prediction/mean"] = _tf.compat.v1.metrics.mean(logits)
        else:
            metrics["accuracy"] = _tf.compat.v1.metrics.accuracy(labels, predictions["class_ids"])
            if n_classes == 2:
                metrics["label/mean"] = _tf.compat.v1.metrics.mean(labels)
                metrics["prediction/mean"] = _tf.compat.v1.metrics.mean(logistic)
                metrics["auc"] = _tf.compat.v1.metrics.auc(labels, logistic)
                metrics["precision"] = _tf.compat.v1.metrics.precision(labels, predictions["class_ids"])
                metrics["recall"] = _tf.compat.v1.metrics.recall(labels, predictions["class_ids"])
        return _tf1_estimator.EstimatorSpec(mode, predictions=predictions, loss=loss, eval_metric_ops=metrics)

    @staticmethod
    def _refuse_canned(label_vocabulary, weight_column, batch_norm):
        if label_vocabulary is not None or weight_column is not None or batch_norm:
            raise TF1OptionRefused(
                "the migrated canned estimators have no label_vocabulary / weight_column / batch_norm"
            )

    class _Canned(Estimator):
        def __init__(self, network, kind, n_classes, optimizer, learning_rate, model_dir, config, warm_start_from):
            def model_fn(features, labels, mode):
                logits = network(features, mode)
                return _tf1_estimator._head_spec(
                    features, labels, mode, logits, kind, n_classes,
                    _tf1_estimator._optimizer(optimizer, learning_rate) if mode == "train" else None,
                )  # fmt: skip

            super().__init__(model_fn, model_dir=model_dir, config=config, warm_start_from=warm_start_from)

    @staticmethod
    def _dnn(hidden_units, feature_columns, units, activation_fn, dropout):
        def network(features, mode):
            with _tf.compat.v1.variable_scope("dnn"):
                with _tf.compat.v1.variable_scope("input_from_feature_columns"):
                    net = _tf.compat.v1.feature_column.input_layer(features, list(feature_columns))
                layers = [(f"hiddenlayer_{index}", width, activation_fn) for index, width in enumerate(hidden_units)]
                for name, width, activation in [*layers, ("logits", units, None)]:
                    with _tf.compat.v1.variable_scope(name):
                        kernel = _tf.compat.v1.get_variable(
                            "kernel", [net.shape[-1], width], initializer=_tf.compat.v1.glorot_uniform_initializer()
                        )
                        bias = _tf.compat.v1.get_variable(
                            "bias", [width], initializer=_tf.compat.v1.zeros_initializer()
                        )
                        net = _tf.matmul(net, kernel) + bias
                        if activation is not None:
                            net = activation(net)
                            if dropout is not None and mode == "train":
                                net = _tf.nn.dropout(net, rate=dropout)
                return net

        return network

    @staticmethod
    def _linear(feature_columns, units):
        def network(features, mode):
            with _tf.compat.v1.variable_scope("linear"):
                return _tf.compat.v1.feature_column.linear_model(features, list(feature_columns), units=units)

        return network

    class DNNClassifier(_Canned):
        def __init__(self, hidden_units, feature_columns, model_dir=None, n_classes=2, weight_column=None,
                     label_vocabulary=None, optimizer="Adagrad", activation_fn=_tf.nn.relu, dropout=None,
                     input_layer_partitioner=None, config=None, warm_start_from=None, loss_reduction=None,
                     batch_norm=False):  # fmt: skip
            _tf1_estimator._refuse_canned(label_vocabulary, weight_column, batch_norm)
            units = 1 if n_classes == 2 else n_classes
            network = _tf1_estimator._dnn(hidden_units, feature_columns, units, activation_fn, dropout)
            super().__init__(network, "classification", n_classes, optimizer, 0.05, model_dir, config, warm_start_from)

    class DNNRegressor(_Canned):
        def __init__(self, hidden_units, feature_columns, model_dir=None, label_dimension=1, weight_column=None,
                     optimizer="Adagrad", activation_fn=_tf.nn.relu, dropout=None, input_layer_partitioner=None,
                     config=None, warm_start_from=None, loss_reduction=None, batch_norm=False):  # fmt: skip
            _tf1_estimator._refuse_canned(None, weight_column, batch_norm)
            network = _tf1_estimator._dnn(hidden_units, feature_columns, label_dimension, activation_fn, dropout)
            super().__init__(network, "regression", None, optimizer, 0.05, model_dir, config, warm_start_from)

    class LinearClassifier(_Canned):
        def __init__(self, feature_columns, model_dir=None, n_classes=2, weight_column=None, label_vocabulary=None,
                     optimizer="Ftrl", config=None, partitioner=None, warm_start_from=None, loss_reduction=None,
                     sparse_combiner="sum"):  # fmt: skip
            _tf1_estimator._refuse_canned(label_vocabulary, weight_column, False)
            units = 1 if n_classes == 2 else n_classes
            rate = min(0.2, 1.0 / _np.sqrt(len(list(feature_columns))))  # TF1's linear learning rate
            network = _tf1_estimator._linear(feature_columns, units)
            super().__init__(network, "classification", n_classes, optimizer, rate, model_dir, config, warm_start_from)

    class LinearRegressor(_Canned):
        def __init__(self, feature_columns, model_dir=None, label_dimension=1, weight_column=None, optimizer="Ftrl",
                     config=None, partitioner=None, warm_start_from=None, loss_reduction=None,
                     sparse_combiner="sum"):  # fmt: skip
            _tf1_estimator._refuse_canned(None, weight_column, False)
            rate = min(0.2, 1.0 / _np.sqrt(len(list(feature_columns))))
            network = _tf1_estimator._linear(feature_columns, label_dimension)
            super().__init__(network, "regression", None, optimizer, rate, model_dir, config, warm_start_from)
