"""How the single walk enters the nodes that change its state: functions and lambdas (a new
scope, traced or not), classes, loops, ``with tf.GradientTape()`` blocks, ``if`` branches (dataset
pipelines followed per branch) and assignments (what a name was bound to).

``STRUCTURAL`` maps those node types to their handler; FileContext._visit dispatches to it.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tfpilot.lint.apis import DATASET_CALL_NAMES, TF_FUNCTION_QUALNAMES
from tfpilot.lint.naming import is_model_name
from tfpilot.lint.nodes import walk_nodes
from tfpilot.lint.scope import Scope, TapeBlock, parameters

if TYPE_CHECKING:
    from tfpilot.lint.context import FileContext

__all__ = ["STRUCTURAL"]


def _visit_function(context: FileContext, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    context._visit_list(node.decorator_list)
    context._visit(node.args)
    if node.returns is not None:
        context._visit(node.returns)
    is_graph, reason, signature = context._graph_status(node)
    context.scopes.append(
        Scope(
            node,
            is_graph=is_graph,
            graph_reason=reason,
            has_input_signature=signature,
            params=parameters(node.args),
        )
    )
    context._visit_list(node.body)
    context.scopes.pop()


def _visit_lambda(context: FileContext, node: ast.Lambda) -> None:
    context._visit(node.args)
    context.scopes.append(Scope(node, params=parameters(node.args)))
    context._visit(node.body)
    context.scopes.pop()


def _visit_class(context: FileContext, node: ast.ClassDef) -> None:
    context._visit_list(node.decorator_list)
    context._visit_list(node.bases)
    context._visit_list(node.keywords)
    context.classes.append(node)
    context._visit_list(node.body)
    context.classes.pop()


def _visit_loop(context: FileContext, node: ast.For | ast.AsyncFor | ast.While) -> None:
    if isinstance(node, ast.While):
        context._visit(node.test)
    else:
        context._visit(node.iter)
        context._visit(node.target)
    context.loops.append(node)
    context.scope.loop_depth += 1
    context._visit_list(node.body)
    context.scope.loop_depth -= 1
    context.loops.pop()
    context._visit_list(node.orelse)


def _visit_with(context: FileContext, node: ast.With | ast.AsyncWith) -> None:
    tapes = 0
    for item in node.items:
        context._visit(item)
        call = item.context_expr
        if isinstance(call, ast.Call) and context.qualname(call.func) in (
            "tensorflow.GradientTape",
            "tensorflow.compat.v1.GradientTape",
            "tensorflow.autodiff.GradientTape",
        ):
            name = item.optional_vars.id if isinstance(item.optional_vars, ast.Name) else None
            context.tapes.append(TapeBlock(node, name, context.scope))  # type: ignore[arg-type]
            tapes += 1
    context._visit_list(node.body)
    for _ in range(tapes):
        context.tapes.pop()


def _visit_if(context: FileContext, node: ast.If) -> None:
    # Dataset pipelines are followed per branch: `if batch: ds = ds.batch(n) else: ds = ds.shuffle(k)`
    # must not look like a shuffle after a batch.
    context._visit(node.test)
    scope = context.scope
    before = dict(scope.pipelines)
    context._visit_list(node.body)
    after_body = scope.pipelines
    scope.pipelines = dict(before)
    context._visit_list(node.orelse)
    merged = scope.pipelines
    for name, pipeline in after_body.items():
        if before.get(name) is not pipeline:
            merged[name] = pipeline


_TENSOR_EXEMPT_PREFIXES = (
    "tensorflow.config.",
    "tensorflow.distribute.",
    "tensorflow.TensorSpec",
    "tensorflow.TensorShape",
    "tensorflow.function",
    "tensorflow.GradientTape",
    "tensorflow.keras.",
    "tensorflow.data.",
    "tensorflow.io.gfile.",
    "tensorflow.summary.",
    "tensorflow.executing_eagerly",
    "tensorflow.is_tensor",
    "tensorflow.dtypes.",
)


def _visit_assign(context: FileContext, node: ast.Assign | ast.AnnAssign) -> None:
    value = node.value
    if value is not None:
        context._visit(value)
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    context._visit_list(targets)
    if value is None:
        return
    scope = context.scope
    for target in targets:
        if isinstance(target, (ast.Tuple, ast.List)):
            _unpacked_pipelines(context, target, value)
    if isinstance(value, ast.Call):
        qualname = context.qualname(value.func)
        for target in targets:
            key = context.dotted(target)
            if key is None:
                continue
            if qualname is not None:
                context.assigned_calls[key] = qualname
                if qualname in TF_FUNCTION_QUALNAMES and value.args:
                    context.graph_functions[key.split(".")[-1]] = any(
                        keyword.arg == "input_signature" for keyword in value.keywords
                    )
            if isinstance(target, ast.Name):
                pipeline = context.pipeline(value) if _may_be_pipeline(value, context) else None
                if pipeline is not None and pipeline.is_dataset:
                    scope.pipelines[target.id] = dataclasses.replace(pipeline, origin=value)
                else:
                    scope.pipelines.pop(target.id, None)
        if scope.is_graph and _makes_tensor(context, value, qualname):
            for target in targets:
                for name_node in walk_nodes(target):
                    if isinstance(name_node, ast.Name):
                        scope.tensor_names.add(name_node.id)
    elif isinstance(value, ast.Name) and value.id in scope.pipelines:
        for target in targets:
            if isinstance(target, ast.Name):
                scope.pipelines[target.id] = scope.pipelines[value.id]
    elif scope.is_graph and isinstance(value, ast.BinOp):
        operands = [value.left, value.right]
        if any(isinstance(o, ast.Name) and o.id in scope.tensor_names for o in operands):
            for target in targets:
                if isinstance(target, ast.Name):
                    scope.tensor_names.add(target.id)


def _unpacked_pipelines(context: FileContext, target: ast.Tuple | ast.List, value: ast.expr) -> None:
    """`ds, info = tfds.load(..., with_info=True)` rebinds every unpacked name: what an earlier
    statement built under those names is no longer their pipeline (a `.repeat()` two cells up is
    not this dataset's). A dataset constructor's first element is a fresh, rooted dataset."""
    from tfpilot.lint.apis import is_dataset_constructor
    from tfpilot.lint.chains import Pipeline

    scope = context.scope
    for name_node in walk_nodes(target):
        if isinstance(name_node, ast.Name):
            scope.pipelines.pop(name_node.id, None)
    first = target.elts[0] if target.elts else None
    if (
        isinstance(first, ast.Name)
        and isinstance(value, ast.Call)
        and is_dataset_constructor(context.qualname(value.func))
    ):
        scope.pipelines[first.id] = Pipeline((), True, origin=value, rooted=True)


def _may_be_pipeline(call: ast.Call, context: FileContext) -> bool:
    """Cheap pre-check: the outermost call is a tf.data method or a dataset constructor name,
    or a function / class of this file that returns a dataset (``make_pipeline(paths)``)."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name in DATASET_CALL_NAMES or name.endswith(("Dataset", "_dataset_from_directory", "dataset_from_array")):
        return True
    return isinstance(func, ast.Name) and context.uses_tensorflow and context.returns_dataset(name)


def _makes_tensor(context: FileContext, call: ast.Call, qualname: str | None) -> bool:
    if qualname is not None:
        if qualname.startswith(_TENSOR_EXEMPT_PREFIXES):
            return False
        return qualname.startswith(("tensorflow.", "keras.ops."))
    callee = context.dotted(call.func)
    if callee is None:
        return False
    return is_model_name(callee.split(".")[-1])


STRUCTURAL: dict[type, Callable[[FileContext, Any], None]] = {
    ast.FunctionDef: _visit_function,
    ast.AsyncFunctionDef: _visit_function,
    ast.Lambda: _visit_lambda,
    ast.ClassDef: _visit_class,
    ast.For: _visit_loop,
    ast.AsyncFor: _visit_loop,
    ast.While: _visit_loop,
    ast.With: _visit_with,
    ast.AsyncWith: _visit_with,
    ast.If: _visit_if,
    ast.Assign: _visit_assign,
    ast.AnnAssign: _visit_assign,
}
