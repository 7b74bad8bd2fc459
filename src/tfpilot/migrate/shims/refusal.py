"""The one exception the helpers raise for a TF1 option they do not reproduce.

A helper stands in for a removed TF1 API with the options real code uses; the rarer ones (LSTM
peepholes, batch-norm renorm, an Estimator's distribution options ...) are refused by name rather
than run with other semantics. ``tfpilot migrate`` names each literal use in MIGRATION_REPORT.md
before the program runs (migrate/readiness.py, ``_SHIM_LIMITS``); at run time the refusal is this
exception, a NotImplementedError, so code that caught TF1's errors keeps working.
"""


# --- emitted below ---
class TF1OptionRefused(NotImplementedError):
    """A TF1 option this migrated helper does not reproduce (MIGRATION_REPORT.md names it)."""
