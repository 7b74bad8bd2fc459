"""Data: sources, preprocessing and the tf.data pipeline."""

from tfpilot.data.pipeline import SPLITS, Pipeline, build_pipeline, split_indices
from tfpilot.data.preprocessing import Preprocessor, fit_preprocessor
from tfpilot.data.sources import Source, arrays_source, csv_source, image_folder_source, load_source, register_source

__all__ = [
    "Pipeline",
    "build_pipeline",
    "split_indices",
    "SPLITS",
    "Preprocessor",
    "fit_preprocessor",
    "Source",
    "load_source",
    "register_source",
    "image_folder_source",
    "csv_source",
    "arrays_source",
]
