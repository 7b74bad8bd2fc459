"""tf.data iterators: one-shot and initializable iterators become TF2 iterators over the dataset.

TF1 pulled one element from ``iterator.get_next()`` at every ``sess.run`` that needed it, shared by
everything that run fetched (``sess.run([train_op, loss])`` trains and reports on one batch). In TF2
the element is an argument of the step: ``x, y = iterator.get_next()`` becomes ``x, y = batch``
inside the steps, and each call passes ``iterator.get_next()`` of a TF2 iterator (``iter(dataset)``),
so each call takes one element, as each run did; at the end it raises ``tf.errors.OutOfRangeError``
as TF1's did. An initializable iterator over a dataset built from placeholders is made where its
initializer ran, from the dataset with the values that run fed; re-running the initializer starts
a new one, as TF1 restarted it.
"""

from __future__ import annotations

import libcst as cst

from tfpilot.migrate.compat import CompatChange
from tfpilot.migrate.native.modules import ModuleHelpers
from tfpilot.migrate.native.parts import Definition, Fallback
from tfpilot.migrate.native.syntax import bound_names, descendants, names_read
from tfpilot.migrate.native.tables import V1

# Dataset methods that keep the elements' dtype (map and friends may change it).
_KEEPS_DTYPE = frozenset({"batch", "repeat", "shuffle", "prefetch", "take", "skip", "cache", "padded_batch"})
_DTYPES = {"float32": "float32", "float64": "float64", "float": "float64", "double": "float64"}
# NumPy draws that always make float64 arrays.
_FLOAT64_DRAWS = frozenset(
    {"sample", "random_sample", "random", "rand", "randn", "uniform", "normal", "standard_normal"}
)
_MAKERS = {V1 + "data.make_one_shot_iterator": "one_shot", V1 + "data.make_initializable_iterator": "initializable"}


class Iterators(ModuleHelpers):
    """Datasets read through TF1 iterators, their elements as step arguments, initializer runs."""

    placeholders: dict[str, tuple[int, str]]
    definitions: list[Definition]
    reaching: dict[str, list[Definition | str]]
    binds: dict[str, int]

    def start_iterators(self) -> None:
        self.iterators: dict[str, str] = {}  # TF1 iterator name -> its TF2 name
        self.initializable: dict[str, str] = {}  # TF1 iterator name -> its dataset's name
        self.datasets: dict[str, cst.BaseExpression] = {}  # datasets built from placeholders
        self.elements: dict[str, str] = {}  # step argument -> the TF2 iterator it is pulled from
        self.structures: set[str] = set()  # names bound to a whole element (a tuple or dict when fetched)
        self.statement_codes: dict[int, str] = {}  # id(sess.run call) -> the statement it becomes
        self.expression_codes: dict[int, str] = {}  # id(sess.run call) -> the expression it becomes
        self.init_ops: dict[str, tuple[str, str]] = {}  # make_initializer(dataset) op -> (iterator, dataset)
        self.element_dtypes: dict[str, str | None] = {}  # element -> its float dtype, when the script states it
        self.iterator_sources: dict[str, cst.BaseExpression] = {}  # iterator -> the dataset it reads

    def element_dtype(self, dataset: cst.BaseExpression | None, before: int) -> str | None:
        """ "float32" / "float64" when every component of the dataset's elements has that dtype, else None.

        Read from the dataset's source: ``from_tensor_slices`` / ``from_tensors`` of placeholders (their
        declared dtype) or NumPy arrays whose dtype the script states (``np.random.sample``: float64,
        ``.astype(np.float32)``), through transformations that keep the dtype (batch, repeat, shuffle ...).
        """
        root = dataset
        for _ in range(64):  # a chain of bindings, each bound once: no cycle, but never loop on one
            if isinstance(root, cst.Name):
                root = self.binding(root.value, before)
                continue
            if not (isinstance(root, cst.Call) and isinstance(root.func, cst.Attribute)):
                return None
            method = root.func.attr.value
            if method in ("from_tensor_slices", "from_tensors"):
                break
            if method not in _KEEPS_DTYPE:
                return None
            root = root.func.value
        else:
            return None
        assert isinstance(root, cst.Call)
        source = root.args[0].value if root.args else None
        parts = [e.value for e in source.elements] if isinstance(source, (cst.Tuple, cst.List)) else [source]
        dtypes = {self.array_dtype(part, before) for part in parts}
        return dtypes.pop() if len(dtypes) == 1 else None

    def array_dtype(self, node: cst.BaseExpression | None, before: int) -> str | None:
        if isinstance(node, cst.Name):
            if node.value in self.placeholders:
                return _DTYPES.get(self.placeholders[node.value][1].rpartition(".")[2])
            return self.array_dtype(self.binding(node.value, before), before)
        if not isinstance(node, cst.Call):
            return None
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "astype" and len(node.args) == 1:
            return _DTYPES.get(self.code(node.args[0].value).rpartition(".")[2].strip("'\""))
        name = self.qualified(node.func) or ""
        if name.startswith("numpy.random.") and name.rpartition(".")[2] in _FLOAT64_DRAWS:
            return "float64"
        return None

    def binding(self, name: str, before: int) -> cst.BaseExpression | None:
        """The value ``name`` is bound to, when the script binds it once, before statement ``before`` (a tuple
        unpacked); None otherwise (a name rebound, ``dataset = dataset.batch(8)``, has no one source)."""
        found: list[tuple[int, cst.BaseExpression]] = []
        outside = self.module.body if self.scope_owner is not None else ()  # module-level names a function reads
        statements = [*((-1, statement) for statement in outside), *enumerate(self.body)]
        for position, statement in statements:
            if name not in bound_names(statement):
                continue
            small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) else None
            value: cst.BaseExpression | None = None
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target = small.targets[0].target
                if isinstance(target, cst.Name):
                    value = small.value
                elif isinstance(target, cst.Tuple) and isinstance(small.value, cst.Tuple):
                    pairs = zip(target.elements, small.value.elements, strict=False)
                    value = next((part.value for element, part in pairs if _is_name(element.value, name)), None)
            found.append((position, value) if value is not None else (position, cst.Name("None")))
        unique = {id(value): (position, value) for position, value in found}
        if len(found) != 1 or len(unique) != 1:
            return None
        position, value = found[0]
        return value if position < before and not (isinstance(value, cst.Name) and value.value == "None") else None

    def iterator_statement(
        self, index: int, statement: cst.SimpleStatementLine, targets: tuple[str, ...] | None, value: cst.BaseExpression
    ) -> bool:
        """A dataset from placeholders, an iterator made, or its ``get_next()``: recorded (True), else False."""
        line = self.line(statement)
        call_name = self.qualified(value.func) if isinstance(value, cst.Call) else None
        if call_name in _MAKERS:
            assert isinstance(value, cst.Call)
            dataset = value.args[0].value if len(value.args) == 1 else None
            if targets is None or len(targets) != 1 or not isinstance(dataset, cst.Name):
                raise Fallback(line, "an iterator made from something other than a dataset's name, or bound to several")
            name = targets[0]
            tf2_name = name if name not in ("iter", "next") else self.fresh("iterator")
            self.iterators[name] = tf2_name
            self.iterator_sources[name] = self.datasets.get(dataset.value, dataset)
            if _MAKERS[call_name] == "initializable":
                self.initializable[name] = dataset.value
                self.removed.add(id(statement))  # the iterator exists once its initializer runs
            else:
                if dataset.value in self.datasets:
                    raise Fallback(line, "a one-shot iterator over a dataset built from placeholders")
                made = cst.parse_statement(f"{tf2_name} = iter({dataset.value})\n")
                assert isinstance(made, cst.SimpleStatementLine)
                self.replacements[id(statement)] = (statement.with_changes(body=made.body),)
            self.changes.append(CompatChange(line, 1, f"{call_name[len(V1) :]} -> a TF2 iterator over the dataset"))
            return True
        if call_name == V1 + "data.Iterator.from_structure":
            # A reinitializable iterator: each make_initializer(dataset) run starts it over that dataset. Its
            # structure names the dataset the elements' dtypes come from (get_output_types(dataset)).
            assert isinstance(value, cst.Call)
            if targets is None or len(targets) != 1:
                raise Fallback(line, "an iterator bound to something other than a name")
            structure = [node.value for node in descendants(value) if isinstance(node, cst.Name)]
            name = targets[0]
            self.iterators[name] = name if name not in ("iter", "next") else self.fresh("iterator")
            self.initializable[name] = next((found for found in structure if found in self.datasets), "")
            if self.initializable[name]:
                self.iterator_sources[name] = self.datasets[self.initializable[name]]
            self.removed.add(id(statement))
            self.changes.append(CompatChange(line, 1, "Iterator.from_structure -> a TF2 iterator per initializer run"))
            return True
        if (
            targets is not None
            and len(targets) == 1
            and isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and value.func.attr.value == "make_initializer"
            and isinstance(value.func.value, cst.Name)
            and value.func.value.value in self.iterators
            and len(value.args) == 1
            and isinstance(value.args[0].value, cst.Name)
        ):
            self.init_ops[targets[0]] = (value.func.value.value, value.args[0].value.value)
            self.removed.add(id(statement))
            return True
        if (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and value.func.attr.value == "get_next"
            and isinstance(value.func.value, cst.Name)
            and value.func.value.value in self.iterators
        ):
            if targets is None or value.args:
                raise Fallback(line, "get_next() bound to something other than names")
            iterator = value.func.value.value
            element = self.fresh("batch")
            self.elements[element] = self.iterators[iterator]
            source = self.iterator_sources.get(iterator)
            self.element_dtypes[element] = self.element_dtype(source, index)
            self.placeholders[element] = (len(self.placeholders), "")
            self.reaching.setdefault(element, []).append(element)
            unpacked = cst.parse_statement(f"{self.code(statement.body[0]).split('=')[0].strip()} = {element}\n")
            assert isinstance(unpacked, cst.SimpleStatementLine)
            definition = Definition(index, statement, targets, [element], line)
            definition.function_form = statement.with_changes(body=unpacked.body)
            self.definitions.append(definition)
            for name in targets:
                self.reaching.setdefault(name, []).append(definition)
            if len(targets) == 1 and isinstance(statement.body[0], cst.Assign):
                if isinstance(statement.body[0].targets[0].target, cst.Name):
                    self.structures.add(targets[0])  # the whole element: a tuple or dict of tensors
            self.removed.add(id(statement))
            self.changes.append(
                CompatChange(line, 1, f"{iterator}.get_next() -> an argument of the steps, one element per call")
            )
            return True
        if (
            targets is not None
            and len(targets) == 1
            and isinstance(value, cst.Call)
            and any(name.startswith("tensorflow.data.") for name in self.calls_in(value))
            and names_read(value) & set(self.placeholders)
        ):
            if self.binds.get(targets[0], 0) != 1:
                raise Fallback(line, f"dataset `{targets[0]}` from placeholders is bound more than once")
            self.datasets[targets[0]] = value
            self.removed.add(id(statement))
            return True
        return False

    def iterator_run(self, call: cst.Call, fetch: cst.BaseExpression, args: list[cst.Arg], line: int) -> bool:
        """``sess.run(iterator.initializer, feed_dict=...)``: the TF2 iterator made anew (True), else False."""
        if isinstance(fetch, cst.Name) and fetch.value in self.init_ops:
            name, dataset_name = self.init_ops[fetch.value]  # a reinitializable iterator's make_initializer(ds)
        elif (
            isinstance(fetch, cst.Attribute)
            and fetch.attr.value == "initializer"
            and isinstance(fetch.value, cst.Name)
            and fetch.value.value in self.initializable
        ):
            name = fetch.value.value
            dataset_name = self.initializable[name]
        else:
            return False
        feed = args[0].value if args else None
        if len(args) > 1 or (args and args[0].keyword is not None and args[0].keyword.value != "feed_dict"):
            raise Fallback(line, "an iterator's initializer run with options")
        fed: dict[str, cst.BaseExpression] = {}
        if feed is not None:
            if not isinstance(feed, cst.Dict):
                raise Fallback(
                    line, "an iterator's initializer fed something other than a {placeholder: value} literal"
                )
            for element in feed.elements:
                if not (isinstance(element, cst.DictElement) and isinstance(element.key, cst.Name)):
                    raise Fallback(line, "an iterator's initializer fed something other than placeholders")
                fed[element.key.value] = element.value
        dataset = self.datasets.get(dataset_name)
        if dataset is None:
            expression = dataset_name
        else:
            needed = names_read(dataset) & set(self.placeholders)
            if needed - set(fed):
                raise Fallback(line, f"the initializer does not feed `{sorted(needed - set(fed))[0]}`")
            # A feed converted the value to the placeholder's dtype; the dataset gets it converted the same way.
            values = {
                key: f"{self.tf}.cast({self.code(value)}, {self.placeholders[key][1]})"
                for key, value in fed.items()
                if key in needed
            }

            class Substitute(cst.CSTTransformer):
                def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
                    return cst.parse_expression(values[original.value]) if original.value in values else updated

            substituted = dataset.visit(Substitute())
            assert isinstance(substituted, cst.BaseExpression)
            expression = cst.Module([]).code_for_node(substituted)
        self.statement_codes[id(call)] = f"{self.iterators[name]} = iter({expression})"
        self.changes.append(
            CompatChange(line, 1, f"{name}.initializer run -> a new TF2 iterator over the dataset (as the restart)")
        )
        return True

    def element_run(self, call: cst.Call, fetch: cst.BaseExpression, args: list[cst.Arg], line: int) -> bool:
        """``sess.run(iterator.get_next())``: the next element as NumPy values (True), else False."""
        if not (
            isinstance(fetch, cst.Call)
            and not fetch.args
            and isinstance(fetch.func, cst.Attribute)
            and fetch.func.attr.value == "get_next"
            and isinstance(fetch.func.value, cst.Name)
            and fetch.func.value.value in self.iterators
        ):
            return False
        if args:
            raise Fallback(line, "sess.run of get_next() with a feed or options")
        iterator = self.iterators[fetch.func.value.value]
        self.expression_codes[id(call)] = f"{self.tf}.nest.map_structure(lambda t: t.numpy(), {iterator}.get_next())"
        return True

    def layers_in_dtype(self, definition: Definition, elements: set[str]) -> tuple[cst.BaseStatement, ...]:
        """The Keras layers a definition made, in the dtype TF1's layers took from a dataset element.

        A TF1 layer took its input's dtype (float64 from NumPy data); a Keras layer computes in float32
        unless told: the layers get ``dtype="float64"`` where the element is float64. An element whose
        dtype the script does not state keeps the file on compat.
        """
        dtypes = {self.element_dtypes.get(element) for element in elements}
        dtype = dtypes.pop() if len(dtypes) == 1 else None
        if dtype is None:
            raise Fallback(
                definition.line,
                "tf.layers on a dataset element whose dtype (TF1's layer dtype) the script does not state",
            )
        if dtype == "float32":
            return definition.module_form

        dtype_arg = cst.ensure_type(cst.parse_expression(f'f(dtype="{dtype}")'), cst.Call).args[0]
        made: list[cst.BaseStatement] = []
        for statement in definition.module_form:  # `dense_1 = keras.layers.Dense(...)`: the layer's own call
            assert isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Assign)
            assign = statement.body[0]
            value = assign.value
            if isinstance(value, cst.Call):
                value = value.with_changes(
                    args=[
                        *value.args[:-1],
                        value.args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                    ]
                    + [dtype_arg]
                    if value.args
                    else [dtype_arg]
                )
            made.append(statement.with_changes(body=[assign.with_changes(value=value)]))
        self.changes.append(
            CompatChange(
                definition.line, 1, f"Keras layers in {dtype}, the dtype of the dataset element they read (as TF1)"
            )
        )
        return tuple(made)

    def check_iterators(self) -> None:
        """Iterators and placeholder datasets are only read where they were rewritten."""
        names = set(self.iterators) | set(self.datasets) | set(self.init_ops)
        if not names:
            return
        rewrite = self

        class Uses(cst.CSTVisitor):
            def visit_Call(self, node: cst.Call) -> bool:
                # an initializer run or a get_next() fetch, rewritten
                return id(node) not in rewrite.statement_codes and id(node) not in rewrite.expression_codes

            def visit_Attribute(self, node: cst.Attribute) -> bool:
                node.value.visit(self)
                return False

            def visit_Name(self, node: cst.Name) -> None:
                if node.value in names:
                    raise Fallback(rewrite.line(node), f"`{node.value}` (an iterator or its dataset) is used elsewhere")

        for statement in self.body:
            if id(statement) not in self.removed and id(statement) not in self.replacements:
                statement.visit(Uses())


def _is_name(node: cst.BaseExpression, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name
