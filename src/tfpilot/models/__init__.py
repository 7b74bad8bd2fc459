"""Model architectures: built-ins and user factories."""

from tfpilot.models.factory import build_model, register_model

__all__ = ["build_model", "register_model"]
