"""The private members of Keras 3's base classes that user subclasses reach (`self._x`).

TFP504 reports a subclass of one of these classes that reads a `self._name` which neither the
subclass nor Keras 3's class has: a Keras 2 internal (TensorBoard's `_get_writer`), gone in Keras
3 (AttributeError). Generated from Keras 3.15.1 with `python -m tfpilot.lint.keras3_private` (prints it)
(the class's attributes and an instance's); `test_lint_tf_premises.py` checks the names the rule
reports against the installed Keras. Importing this module needs no Keras."""

from __future__ import annotations

from typing import Any

__all__ = ["KERAS3_PRIVATE"]

KERAS3_PRIVATE: dict[str, frozenset[str]] = {
    "Model": frozenset(
        {
            "_add_trackable_child",
            "_add_variable_with_custom_getter",
            "_aggregate_additional_loss",
            "_allow_non_tensor_positional_args",
            "_api_export_path",
            "_api_export_symbol_id",
            "_assert_compile_called",
            "_assert_input_compatibility",
            "_assign_variable_values",
            "_auto_config",
            "_autoconvert_optionals",
            "_awq_call",
            "_build_at_init",
            "_build_by_run_for_kwargs",
            "_build_by_run_for_single_pos_arg",
            "_build_shapes_dict",
            "_call_context_args",
            "_call_has_context_arg",
            "_call_has_mask_arg",
            "_call_has_training_arg",
            "_call_signature",
            "_called",
            "_check_load_own_variables",
            "_check_quantize_args",
            "_check_super_called",
            "_checkpoint_adapter",
            "_checkpoint_dependencies",
            "_clear_losses",
            "_compile_config",
            "_compile_loss",
            "_compile_metrics",
            "_compiled_metrics_update_state",
            "_compiled_trainable_state",
            "_compute_loss",
            "_compute_loss_has_training_arg",
            "_convert_input_args",
            "_convert_tracked_collections",
            "_copy_trackable_to_cpu",
            "_create_nested_dict",
            "_default_save_signature",
            "_deferred_dependencies",
            "_delete_tracking",
            "_deserialization_dependencies",
            "_deserialize_from_proto",
            "_distribute_reduction_method",
            "_distribute_strategy",
            "_dtype_policy",
            "_eval_epoch_iterator",
            "_export_to_saved_model_graph",
            "_flatten_layers",
            "_flatten_metrics_in_order",
            "_flatten_nested_dict",
            "_float8_call",
            "_gather_saveables_for_checkpoint",
            "_get_call_context",
            "_get_metrics_result_or_logs",
            "_get_node_attribute_at_index",
            "_get_own_losses",
            "_get_own_metrics",
            "_get_regularization_losses",
            "_get_save_spec",
            "_get_variable_map",
            "_gptq_call",
            "_handle_deferred_dependencies",
            "_inbound_nodes",
            "_initial_epoch",
            "_initialize_tracker",
            "_input_shape_arg",
            "_input_spec",
            "_int4_call",
            "_int8_call",
            "_jit_compile",
            "_layers",
            "_lock",
            "_lock_state",
            "_lookup_dependency",
            "_loss_ids",
            "_loss_tracker",
            "_losses",
            "_losses_override",
            "_make_function",
            "_maybe_build",
            "_maybe_initialize_trackable",
            "_maybe_reset_call_context",
            "_maybe_symbolic_build",
            "_metrics",
            "_name_based_attribute_restore",
            "_name_based_restores",
            "_no_dependency",
            "_non_trainable_variables",
            "_not_implemented_error",
            "_obj_type",
            "_object_identifier",
            "_open_name_scope",
            "_outbound_nodes",
            "_parent_path",
            "_path",
            "_post_build",
            "_post_quantize",
            "_post_track_variable",
            "_post_untrack_variable",
            "_preload_simple_restoration",
            "_quantization_mode_error",
            "_register_call_context_args",
            "_remat_mode",
            "_resolve_and_populate_arg",
            "_resolve_auto_jit_compile",
            "_restore_from_tensors",
            "_run_eagerly",
            "_saved_model_arg_spec",
            "_saved_model_inputs_spec",
            "_seed_generators",
            "_self_setattr_tracking",
            "_serialize_to_proto",
            "_serialize_to_tensors",
            "_set_mask_metadata",
            "_set_save_spec",
            "_setattr_hook",
            "_setattr_tracking",
            "_should_eval",
            "_supports_masking",
            "_symbolic_build",
            "_tf_api_names",
            "_tf_api_names_v1",
            "_track_trackable",
            "_track_variable",
            "_trackable_children",
            "_tracked",
            "_tracker",
            "_trainable",
            "_trainable_variables",
            "_unconditional_checkpoint_dependencies",
            "_unconditional_dependency_names",
            "_unpickle_model",
            "_untrack_variable",
            "_update_uid",
            "_warn_if_trainable_state_changed",
        }
    ),
    "layers.Layer": frozenset(
        {
            "_add_trackable_child",
            "_add_variable_with_custom_getter",
            "_allow_non_tensor_positional_args",
            "_api_export_path",
            "_api_export_symbol_id",
            "_assert_input_compatibility",
            "_auto_config",
            "_awq_call",
            "_build_at_init",
            "_build_by_run_for_kwargs",
            "_build_by_run_for_single_pos_arg",
            "_build_shapes_dict",
            "_call_context_args",
            "_call_has_context_arg",
            "_call_has_mask_arg",
            "_call_has_training_arg",
            "_call_signature",
            "_called",
            "_check_load_own_variables",
            "_check_quantize_args",
            "_check_super_called",
            "_checkpoint_adapter",
            "_checkpoint_dependencies",
            "_clear_losses",
            "_convert_input_args",
            "_convert_tracked_collections",
            "_copy_trackable_to_cpu",
            "_default_save_signature",
            "_deferred_dependencies",
            "_delete_tracking",
            "_deserialization_dependencies",
            "_deserialize_from_proto",
            "_dtype_policy",
            "_export_to_saved_model_graph",
            "_flatten_layers",
            "_float8_call",
            "_gather_saveables_for_checkpoint",
            "_get_call_context",
            "_get_node_attribute_at_index",
            "_get_own_losses",
            "_get_regularization_losses",
            "_get_save_spec",
            "_gptq_call",
            "_handle_deferred_dependencies",
            "_inbound_nodes",
            "_initialize_tracker",
            "_input_shape_arg",
            "_input_spec",
            "_int4_call",
            "_int8_call",
            "_layers",
            "_lock",
            "_lock_state",
            "_lookup_dependency",
            "_loss_ids",
            "_losses",
            "_losses_override",
            "_maybe_build",
            "_maybe_initialize_trackable",
            "_maybe_reset_call_context",
            "_metrics",
            "_name_based_attribute_restore",
            "_name_based_restores",
            "_no_dependency",
            "_non_trainable_variables",
            "_not_implemented_error",
            "_obj_type",
            "_object_identifier",
            "_open_name_scope",
            "_outbound_nodes",
            "_parent_path",
            "_path",
            "_post_build",
            "_post_track_variable",
            "_post_untrack_variable",
            "_preload_simple_restoration",
            "_quantization_mode_error",
            "_register_call_context_args",
            "_remat_mode",
            "_resolve_and_populate_arg",
            "_restore_from_tensors",
            "_saved_model_arg_spec",
            "_saved_model_inputs_spec",
            "_seed_generators",
            "_self_setattr_tracking",
            "_serialize_to_proto",
            "_serialize_to_tensors",
            "_set_mask_metadata",
            "_set_save_spec",
            "_setattr_hook",
            "_setattr_tracking",
            "_supports_masking",
            "_tf_api_names",
            "_tf_api_names_v1",
            "_track_trackable",
            "_track_variable",
            "_trackable_children",
            "_tracked",
            "_tracker",
            "_trainable",
            "_trainable_variables",
            "_unconditional_checkpoint_dependencies",
            "_unconditional_dependency_names",
            "_unpickle_model",
            "_untrack_variable",
            "_update_uid",
        }
    ),
    "callbacks.Callback": frozenset(
        {
            "_api_export_path",
            "_api_export_symbol_id",
            "_model",
        }
    ),
    "callbacks.TensorBoard": frozenset(
        {
            "_api_export_path",
            "_api_export_symbol_id",
            "_batch_start_time",
            "_batch_trace_context",
            "_close_writers",
            "_collect_learning_rate",
            "_compute_steps_per_second",
            "_configure_embeddings",
            "_epoch_start_time",
            "_global_test_batch",
            "_global_train_batch",
            "_init_profile_batch",
            "_is_tracing",
            "_log_embeddings",
            "_log_epoch_metrics",
            "_log_weight_as_image",
            "_log_weights",
            "_log_write_dir",
            "_model",
            "_pop_writer",
            "_prev_summary_state",
            "_previous_epoch_iterations",
            "_profiler_started",
            "_push_writer",
            "_should_trace",
            "_should_write_train_graph",
            "_start_batch",
            "_start_profiler",
            "_start_trace",
            "_stop_batch",
            "_stop_profiler",
            "_stop_trace",
            "_summary_module",
            "_train_accumulated_time",
            "_train_dir",
            "_train_writer",
            "_val_dir",
            "_val_writer",
            "_write_keras_model_summary",
            "_write_keras_model_train_graph",
            "_writers",
        }
    ),
    "callbacks.ModelCheckpoint": frozenset(
        {
            "_api_export_path",
            "_api_export_symbol_id",
            "_batches_seen_since_last_saving",
            "_checkpoint_exists",
            "_current_epoch",
            "_get_file_path",
            "_get_most_recently_modified_file_matching_pattern",
            "_is_improvement",
            "_last_batch_seen",
            "_model",
            "_save_model",
            "_set_monitor_op",
            "_should_save_model",
            "_should_save_on_batch",
        }
    ),
    "callbacks.EarlyStopping": frozenset(
        {
            "_api_export_path",
            "_api_export_symbol_id",
            "_is_improvement",
            "_model",
            "_set_monitor_op",
        }
    ),
    "optimizers.Optimizer": frozenset(
        {
            "_accumulated_gradients",
            "_add_trackable_child",
            "_add_variable_with_custom_getter",
            "_all_reduce_sum_gradients",
            "_api_export_path",
            "_api_export_symbol_id",
            "_apply_weight_decay",
            "_backend_apply_gradients",
            "_backend_increment_gradient_accumulators",
            "_backend_reset_gradient_accumulators",
            "_backend_update_step",
            "_check_super_called",
            "_check_variables_are_known",
            "_checkpoint_adapter",
            "_checkpoint_dependencies",
            "_clip_by_norm",
            "_clip_gradients",
            "_copy_trackable_to_cpu",
            "_deferred_dependencies",
            "_delete_tracking",
            "_deserialization_dependencies",
            "_deserialize_from_proto",
            "_distributed_tf_update_step",
            "_distribution_strategy",
            "_exclude_from_weight_decay",
            "_exclude_from_weight_decay_cache",
            "_exclude_from_weight_decay_pattern",
            "_export_to_saved_model_graph",
            "_filter_empty_gradients",
            "_gather_saveables_for_checkpoint",
            "_get_current_learning_rate",
            "_get_variable_index",
            "_handle_deferred_dependencies",
            "_iterations",
            "_learning_rate",
            "_lock",
            "_lookup_dependency",
            "_maybe_initialize_trackable",
            "_model_variables_moving_average",
            "_name_based_attribute_restore",
            "_name_based_restores",
            "_no_dependency",
            "_obj_type",
            "_object_identifier",
            "_overwrite_model_variables_with_average_value",
            "_overwrite_variable_with_gradient",
            "_overwrite_variables_directly_with_gradients",
            "_preload_simple_restoration",
            "_restore_from_tensors",
            "_self_name_based_restores",
            "_self_saveable_object_factories",
            "_self_setattr_tracking",
            "_self_unconditional_checkpoint_dependencies",
            "_self_unconditional_deferred_dependencies",
            "_self_unconditional_dependency_names",
            "_self_update_uid",
            "_serialize_to_proto",
            "_serialize_to_tensors",
            "_setattr_tracking",
            "_tf_api_names",
            "_tf_api_names_v1",
            "_track_trackable",
            "_track_variable",
            "_trackable_children",
            "_tracker",
            "_trainable_variables",
            "_trainable_variables_indices",
            "_unconditional_checkpoint_dependencies",
            "_unconditional_dependency_names",
            "_unpickle_model",
            "_untrack_variable",
            "_update_model_variables_moving_average",
            "_update_uid",
            "_use_weight_decay",
            "_var_key",
            "_variables",
        }
    ),
}

KERAS3_PRIVATE["models.Model"] = KERAS3_PRIVATE["Model"]


# The arguments each base class is built with, to read an instance's attributes too (set in __init__).
_MAKERS: dict[str, tuple[object, ...]] = {
    "Model": (),
    "layers.Layer": (),
    "callbacks.Callback": (),
    "callbacks.TensorBoard": (),
    "callbacks.ModelCheckpoint": ("x.keras",),
    "callbacks.EarlyStopping": (),
    # a Keras 2 OptimizerV2 subclass calls self._set_hyper / _get_hyper (SimCLR's LARS, round 18)
    "optimizers.Optimizer": (0.01,),
}


def installed_private(base: str) -> frozenset[str]:
    """The private names of the installed Keras's class ``base`` and of an instance of it."""
    import keras  # only here: linting never imports Keras

    cls: Any = keras
    for part in base.split("."):
        cls = getattr(cls, part)
    names = {n for n in dir(cls) if n.startswith("_")} | set(vars(cls(*_MAKERS[base]))) | _assigned_in_methods(cls)
    return frozenset(n for n in names if n.startswith("_") and not n.startswith("__"))


def _assigned_in_methods(cls: Any) -> set[str]:
    """`self._x` assigned in any method of Keras' classes in the MRO: set later than __init__ (ModelCheckpoint's
    `_current_epoch` in on_epoch_begin), so neither the class nor a new instance shows it."""
    import ast
    import inspect
    import textwrap

    names: set[str] = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("keras"):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
                targets = [node.target]
            else:
                continue
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self":
                        names.add(sub.attr)
    return names


def render() -> str:
    """This module's table for the installed Keras (what `python -m tfpilot.lint.keras3_private` prints)."""
    import keras

    lines = [f"# Keras {keras.__version__}", "KERAS3_PRIVATE: dict[str, frozenset[str]] = {"]
    for base in _MAKERS:
        lines.append(f'    "{base}": frozenset(')
        lines.append("        {")
        lines.extend(f'            "{name}",' for name in sorted(installed_private(base)))
        lines.extend(["        }", "    ),"])
    lines.append("}")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    print(render())
