"""Source of the helpers ``tfpilot migrate --mode compat`` writes into migrated files.

Each module here is real, importable Python (so tests import and exercise it directly), and the
text below its ``# --- emitted below ---`` line is what migrate copies into a migrated file that
needs it. The helpers replace TF1 APIs that TensorFlow 2.21 / Keras 3 removed outright.
"""
