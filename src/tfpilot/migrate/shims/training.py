"""``tf.contrib.training.HParams``, the hyperparameter container of TF1 projects, for code on TF 2.21.

HParams was removed with contrib in TF 2.0 and has no TF2 home. This one keeps what programs use:
keyword construction, attribute access, ``add_hparam`` / ``set_hparam`` / ``del_hparam``, ``parse``
of TF1's ``"lr=0.1,layers=[64,32],use_bn=true"`` strings (each value converted to the type the
hyperparameter already has, as TF1 did; an unknown name or a value of the wrong kind is ValueError),
``override_from_dict``, ``values``, ``get``, ``to_json`` / ``parse_json`` and ``in``.
"""

# --- emitted below ---
import json as _json
import re as _re


class _tf1_training:
    """tf.contrib.training (removed in TF 2): HParams."""

    class HParams:
        def __init__(self, hparam_def=None, model_structure=None, **kwargs):
            if hparam_def is not None:
                raise ValueError("HParams(hparam_def=...) reads a protocol buffer the migrated HParams does not")
            self._model_structure = model_structure
            self._types = {}
            for name, value in kwargs.items():
                self.add_hparam(name, value)

        @staticmethod
        def _kind(value):
            if isinstance(value, (list, tuple)):
                return (type(value[0]) if value else str), True
            return type(value), False

        def add_hparam(self, name, value):
            if getattr(self, name, None) is not None:
                raise ValueError(f"Hyperparameter name is reserved: {name}")
            self._types[name] = self._kind(value)
            setattr(self, name, list(value) if isinstance(value, tuple) else value)

        def set_hparam(self, name, value):
            kind, is_list = self._types[name]
            if is_list:
                if not isinstance(value, (list, tuple)):
                    raise ValueError(f"Must not pass a scalar for list hyperparameter {name}")
                setattr(self, name, [self._cast(name, kind, item) for item in value])
            else:
                if isinstance(value, (list, tuple)):
                    raise ValueError(f"Must not pass a list for single-valued hyperparameter {name}")
                setattr(self, name, self._cast(name, kind, value))

        def del_hparam(self, name):
            if hasattr(self, name):
                delattr(self, name)
                del self._types[name]

        @staticmethod
        def _cast(name, kind, value):
            if kind is bool:
                if isinstance(value, str):
                    lowered = value.strip().lower()
                    if lowered in ("true", "1"):
                        return True
                    if lowered in ("false", "0"):
                        return False
                    raise ValueError(f"Could not parse {value!r} as a bool for hyperparameter {name}")
                return bool(value)
            if kind is int:
                if isinstance(value, float) and not value.is_integer():
                    raise ValueError(f"Could not convert {value!r} to int for hyperparameter {name} without loss")
                return int(value)
            if kind is float:
                return float(value)
            if kind is str:
                return str(value)
            return value

        def parse(self, values):
            """Override hyperparameters from "name=value,name=[v1,v2]": TF1's syntax and type rules."""
            for match in _re.finditer(r"\s*([A-Za-z_]\w*)\s*=\s*(\[[^\]]*\]|[^,]*)\s*(?:,|$)", values or ""):
                name, text = match.group(1), match.group(2).strip()
                if name not in self._types:
                    raise ValueError(f"Unknown hyperparameter type for {name}")
                if text.startswith("["):
                    items = [item.strip() for item in text[1:-1].split(",") if item.strip()]
                    self.set_hparam(name, items)
                else:
                    self.set_hparam(name, text)
            return self

        def override_from_dict(self, values_dict):
            for name, value in values_dict.items():
                self.set_hparam(name, value)
            return self

        def values(self):
            return {name: getattr(self, name) for name in self._types}

        def get(self, key, default=None):
            return getattr(self, key) if key in self._types else default

        def to_json(self, indent=None, separators=None, sort_keys=False):
            return _json.dumps(self.values(), indent=indent, separators=separators, sort_keys=sort_keys)

        def parse_json(self, values_json):
            return self.override_from_dict(_json.loads(values_json))

        def __contains__(self, key):
            return key in self._types

        def __str__(self):
            return str(sorted(self.values().items()))

        def __repr__(self):
            return f"HParams({self.values()!r})"
