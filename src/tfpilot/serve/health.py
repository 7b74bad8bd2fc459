"""grpc.health.v1.Health on the gRPC port (`--enable_grpc_healthcheck_service`).

Kubernetes' native gRPC probes and grpc_health_probe ask `Check(service="")`: SERVING once every
configured model has a version AVAILABLE, NOT_SERVING before (the same rule as GET /readyz).
A model's name as the service asks about that model alone; any other name is NOT_FOUND, as the
health protocol says. Watch sends the status, then each change (checked every second).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tfpilot.serve.registry import ModelRegistry

__all__ = ["HealthServicer", "add_health_servicer"]

_WATCH_INTERVAL_SECONDS = 1.0


class HealthServicer(health_pb2_grpc.HealthServicer):
    def __init__(self, registry: ModelRegistry) -> None:
        self.registry = registry

    def _status(self, service: str) -> int | None:
        ready = self.registry.readiness()
        if service == "":
            serving = bool(ready) and all(ready.values())
        elif service in ready:
            serving = ready[service]
        else:
            return None
        return int(health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING)

    async def Check(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC method name
        status = self._status(request.service)
        if status is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"unknown service: {request.service}")
        return health_pb2.HealthCheckResponse(status=status)

    async def Watch(self, request: Any, context: Any) -> AsyncIterator[Any]:  # noqa: N802
        last: int | None = -1
        while True:
            status = self._status(request.service)
            current = int(health_pb2.HealthCheckResponse.SERVICE_UNKNOWN) if status is None else status
            if current != last:
                yield health_pb2.HealthCheckResponse(status=current)
                last = current
            await asyncio.sleep(_WATCH_INTERVAL_SECONDS)


def add_health_servicer(server: grpc.aio.Server, registry: ModelRegistry) -> None:
    health_pb2_grpc.add_HealthServicer_to_server(HealthServicer(registry), server)
