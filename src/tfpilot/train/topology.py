"""Where this process trains: replicas, workers, chief, parameter servers, computed once.

Every part of the trainer asks these questions (does a collective need every worker, does this
process write the run directory, is the loop scheduled by a coordinator); answering them in one
place keeps the strategies from drifting apart.
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf

from tfpilot.train.step import is_default_strategy
from tfpilot.train.strategy import is_chief

__all__ = ["Topology"]


@dataclasses.dataclass(frozen=True)
class Topology:
    # Replicas that take part in every synchronous step (1 under parameter servers: each worker
    # applies its own batch's gradient).
    replicas: int
    # Several processes (multi-worker or parameter servers): evaluation and metric reads that must
    # not be collectives run locally in the chief.
    multi_worker: bool
    # This process writes checkpoints, summaries, history and exports.
    chief: bool
    # Steps are scheduled on workers by a ClusterCoordinator (asynchronous updates).
    parameter_server: bool
    # Not TensorFlow's default strategy: datasets are distributed and steps go through strategy.run.
    distributed: bool

    @classmethod
    def of(cls, strategy: tf.distribute.Strategy) -> Topology:
        parameter_server = isinstance(strategy, tf.distribute.ParameterServerStrategy)
        return cls(
            replicas=strategy.num_replicas_in_sync,
            multi_worker=parameter_server or strategy.cluster_resolver is not None,
            # Only the coordinator runs Python under parameter servers, and it is the chief.
            chief=True if parameter_server else is_chief(),
            parameter_server=parameter_server,
            distributed=not is_default_strategy(strategy),
        )
