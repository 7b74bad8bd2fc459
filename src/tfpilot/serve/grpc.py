"""TF Serving's gRPC API (PredictionService, ModelService) on grpc.aio.

Uses the servicer base classes generated in tensorflow-serving-api, so the standard
``prediction_service_pb2_grpc.PredictionServiceStub`` client works unchanged. Runs on the
same event loop and batcher as the REST API.
"""

from __future__ import annotations

from typing import Any, NoReturn

import grpc
from tensorflow_serving.apis import (
    classification_pb2,
    get_model_metadata_pb2,
    get_model_status_pb2,
    inference_pb2,
    model_service_pb2_grpc,
    predict_pb2,
    prediction_service_pb2_grpc,
    regression_pb2,
)

from tfpilot.serve.service import Call, InferenceService
from tfpilot.serve.status import RequestError
from tfpilot.serve.tensors import array_to_tensor_proto, serialized_examples, tensor_proto_to_array

__all__ = ["PredictionServicer", "ModelServicer", "add_servicers"]


def _spec(model_spec: Any) -> tuple[str, int | None, str | None]:
    if not model_spec.name:
        # TF Serving's words for a request without a ModelSpec; one with no name names nothing.
        raise RequestError.invalid("Missing ModelSpec: set model_spec.name to the model to call")
    version = model_spec.version.value if model_spec.HasField("version") else None
    label = model_spec.version_label or None
    if version is not None and label is not None:
        raise RequestError.invalid("ModelSpec sets both version and version_label; set one")
    return model_spec.name, version, label


def _timeout(context: grpc.aio.ServicerContext) -> float | None:
    remaining = context.time_remaining()
    return None if remaining is None else max(0.0, remaining)


async def _abort(context: grpc.aio.ServicerContext, call: Call) -> NoReturn:
    """Answer the RequestError the request's Call left with its gRPC status (abort raises)."""
    assert call.error is not None
    await context.abort(grpc.StatusCode[call.error.code.name], call.error.message)
    raise AssertionError("unreachable: ServicerContext.abort raises")


class PredictionServicer(prediction_service_pb2_grpc.PredictionServiceServicer):
    def __init__(self, service: InferenceService) -> None:
        self.service = service

    async def Predict(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC method name
        async with self.service.call(api="predict", protocol="grpc", model=request.model_spec.name) as call:
            name, version, label = _spec(request.model_spec)
            servable = self.service.resolve(name, version=version, label=label)
            signature = servable.predict_signature(request.model_spec.signature_name)
            inputs = {key: tensor_proto_to_array(proto, name=key) for key, proto in request.inputs.items()}
            wanted = list(request.output_filter)
            outputs = await self.service.predict(
                servable, signature, inputs, timeout=_timeout(context), output_filter=wanted
            )
            response = predict_pb2.PredictResponse()
            _answer_spec(response.model_spec, servable, signature.name)
            for key in wanted or sorted(outputs):
                array_to_tensor_proto(outputs[key], into=response.outputs[key])
            return response
        await _abort(context, call)

    async def Classify(self, request: Any, context: Any) -> Any:  # noqa: N802
        async with self.service.call(api="classify", protocol="grpc", model=request.model_spec.name) as call:
            name, version, label = _spec(request.model_spec)
            servable = self.service.resolve(name, version=version, label=label)
            examples = serialized_examples(request.input)
            signature, results = await self.service.classify(
                servable, request.model_spec.signature_name, examples, timeout=_timeout(context)
            )
            response = classification_pb2.ClassificationResponse()
            _answer_spec(response.model_spec, servable, signature.name)
            for row in results:
                classifications = response.result.classifications.add()
                for class_label, score in row:
                    classifications.classes.add(label=class_label, score=score)
            return response
        await _abort(context, call)

    async def Regress(self, request: Any, context: Any) -> Any:  # noqa: N802
        async with self.service.call(api="regress", protocol="grpc", model=request.model_spec.name) as call:
            name, version, label = _spec(request.model_spec)
            servable = self.service.resolve(name, version=version, label=label)
            examples = serialized_examples(request.input)
            signature, values = await self.service.regress(
                servable, request.model_spec.signature_name, examples, timeout=_timeout(context)
            )
            response = regression_pb2.RegressionResponse()
            _answer_spec(response.model_spec, servable, signature.name)
            for value in values:
                response.result.regressions.add(value=value)
            return response
        await _abort(context, call)

    async def GetModelMetadata(self, request: Any, context: Any) -> Any:  # noqa: N802
        async with self.service.call(api="metadata", protocol="grpc", model=request.model_spec.name) as call:
            name, version, label = _spec(request.model_spec)
            fields = list(request.metadata_field)
            if not fields:
                raise RequestError.invalid("GetModelMetadataRequest must specify at least one metadata_field")
            unsupported = [field for field in fields if field != "signature_def"]
            if unsupported:
                raise RequestError.invalid(f"Metadata field {unsupported[0]} is not supported")
            servable = self.service.resolve(name, version=version, label=label)
            response = get_model_metadata_pb2.GetModelMetadataResponse()
            response.model_spec.name = servable.name
            response.model_spec.version.value = servable.version
            response.metadata["signature_def"].Pack(servable.signature_defs)
            return response
        await _abort(context, call)

    async def MultiInference(self, request: Any, context: Any) -> Any:  # noqa: N802
        """Several classify/regress signatures of one model over the same examples (TF Serving's
        rules: at least one task, one model name, no signature twice, classify or regress)."""
        model = request.tasks[0].model_spec.name if request.tasks else ""
        async with self.service.call(api="multi_inference", protocol="grpc", model=model) as call:
            if not request.tasks:
                raise RequestError.invalid("MultiInferenceRequest must specify at least one task.")
            tasks = []
            for task in request.tasks:
                if task.model_spec.name != model:
                    raise RequestError.invalid(
                        "All ModelSpecs in a MultiInferenceRequest must access the same model name."
                    )
                tasks.append((task.model_spec.signature_name, task.method_name))
            name, version, label = _spec(request.tasks[0].model_spec)
            servable = self.service.resolve(name, version=version, label=label)
            examples = serialized_examples(request.input)
            results = await self.service.multi_inference(servable, tasks, examples, timeout=_timeout(context))
            response = inference_pb2.MultiInferenceResponse()
            for result in results:
                entry = response.results.add()
                _answer_spec(entry.model_spec, servable, result.signature.name)
                if result.classifications is not None:
                    for row in result.classifications:
                        classifications = entry.classification_result.classifications.add()
                        for class_label, score in row:
                            classifications.classes.add(label=class_label, score=score)
                else:
                    for value in result.regressions or []:
                        entry.regression_result.regressions.add(value=value)
            return response
        await _abort(context, call)


class ModelServicer(model_service_pb2_grpc.ModelServiceServicer):
    def __init__(self, service: InferenceService) -> None:
        self.service = service

    async def GetModelStatus(self, request: Any, context: Any) -> Any:  # noqa: N802
        async with self.service.call(api="status", protocol="grpc", model=request.model_spec.name) as call:
            name, version, label = _spec(request.model_spec)
            statuses = self.service.registry.status(name, version=version, label=label)
            response = get_model_status_pb2.GetModelStatusResponse()
            for status in statuses:
                entry = response.model_version_status.add()
                entry.version = status.version
                entry.state = status.state.value
                entry.status.error_code = status.error_code.number
                entry.status.error_message = status.error_message
            return response
        await _abort(context, call)

    async def HandleReloadConfigRequest(self, request: Any, context: Any) -> Any:  # noqa: N802
        # Reconfiguring over the network would let any client point the server at arbitrary
        # directories; the config file (re-read every --model_config_file_poll_wait_seconds)
        # is the operator-controlled way to change what is served.
        await context.abort(
            grpc.StatusCode.UNIMPLEMENTED,
            "HandleReloadConfigRequest is disabled; edit --model_config_file and set "
            "--model_config_file_poll_wait_seconds instead",
        )


def add_servicers(
    server: grpc.aio.Server, service: InferenceService, *, profiler: bool = True, health: bool = False
) -> None:
    prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(PredictionServicer(service), server)
    model_service_pb2_grpc.add_ModelServiceServicer_to_server(ModelServicer(service), server)
    if health:
        from tfpilot.serve.health import add_health_servicer

        add_health_servicer(server, service.registry)
    if profiler:
        from tfpilot.serve.profiler import profiler_handler

        server.add_generic_rpc_handlers((profiler_handler(),))


def _answer_spec(spec: Any, servable: Any, signature_name: str) -> None:
    """The response's model_spec names the version that actually answered, as TF Serving does."""
    spec.name = servable.name
    spec.version.value = servable.version
    spec.signature_name = signature_name
