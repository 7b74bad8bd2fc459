"""Source of the helpers ``tfpilot migrate --mode compat`` writes into DEST/tf1_compat_shims.py.

Each module here is real, importable Python (so tests import and exercise it directly), and the
text below its ``# --- emitted below ---`` line is what migrate copies into the one helper module
per output folder that migrated files import from. The helpers replace TF1 APIs that TensorFlow
2.21 / Keras 3 removed outright.
"""
