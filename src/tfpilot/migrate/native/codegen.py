"""Code generation: the tf.functions, the forward helper, and the module with its sess.run sites replaced."""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

from tfpilot.migrate.compat import CompatChange
from tfpilot.migrate.native.analysis import Analysis
from tfpilot.migrate.native.parts import Definition, Fallback, Helper, Site
from tfpilot.migrate.native.syntax import bound_names, indent, names_read
from tfpilot.migrate.native.tables import RMSPROP_TF1_START


class Rewrite(Analysis):
    """The whole native rewrite: the analysis, then the steps, the helpers and the new module."""

    # --- the new module -------------------------------------------------------------------
    def with_rmsprop_class(self, body: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """The RMSprop subclass with TF1's start, once, after the module's imports."""
        at = 0
        for index, statement in enumerate(body):
            if isinstance(statement, cst.SimpleStatementLine) and any(
                isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
            ):
                at = index + 1
        keras = self.keras_name()
        definition = cst.parse_statement(RMSPROP_TF1_START.format(name=self.rmsprop_class, keras=keras))
        blank = [cst.EmptyLine(indent=False)] * 2
        following = body[at:]
        if following:
            following = [following[0].with_changes(leading_lines=blank), *following[1:]]
        return [*body[:at], definition.with_changes(leading_lines=blank), *following]

    def generate(self) -> str:
        tf = self.tf
        # `T = Adam(...).minimize(loss)`: the optimizer gets a name where T was.
        for definition in self.definitions:
            if definition.train is not None and definition.train[0] not in self.optimizers:
                target = definition.targets[0]
                name = target if "optim" in target.lower() else self.fresh("optimizer")
                definition.module_form = (cst.parse_statement(f"{name} = {definition.train[0]}\n"),)
                self.holders.append((name, definition.index))
                definition.train = (name, definition.train[1])
        for definition in self.definitions:
            if definition.module_form:
                self.module_forms[id(definition.statement)] = definition.module_form
        functions: dict[tuple[int | str, ...], tuple[str, list[str], cst.FunctionDef, int]] = {}
        call_code: dict[int, str] = dict(self.expression_codes)
        assign_targets: dict[int, str] = {}
        self.plan_forward()
        for site in self.sites:
            resolved = [self.resolve(name, site.top) for name in site.fetches]
            if all(item is None for item in resolved):  # variables and constants only: read their values
                values = [f"{name}.numpy()" for name in site.fetches]
                call_code[id(site.call)] = (
                    "{" + ", ".join(f"{key}: {value}" for key, value in zip(site.keys, values, strict=True)) + "}"
                    if site.keys
                    else values[0]
                    if site.single
                    else f"({values[0]},)"
                    if site.as_tuple and len(values) == 1
                    else f"({', '.join(values)})"
                    if site.as_tuple
                    else f"[{', '.join(values)}]"
                )
                continue
            trains = [item for item in resolved if isinstance(item, Definition) and item.train is not None]
            if trains and site.keys:
                raise Fallback(site.line, "a train op fetched in a dict")
            if len(trains) > 1:
                raise Fallback(site.line, "one sess.run with two train ops")
            train = trains[0] if trains else None
            # (train is None: a variable resolves to None too, and is fetched like any other name)
            others = [
                (name, item)
                for name, item in zip(site.fetches, resolved, strict=True)
                if train is None or item is not train
            ]
            key = self.step_key(site.fetches, resolved)
            if key not in functions:
                functions[key] = self.function(site, train, others)
            name, params, _, _ = functions[key]
            for param in params:  # one element per call from the iterator, as each sess.run pulled one
                if param in self.elements and param not in site.feeds:
                    site.feeds[param] = cst.parse_expression(f"{self.elements[param]}.get_next()")
            missing = [param for param in params if param not in site.feeds]
            if missing:
                raise Fallback(site.line, f"sess.run does not feed `{missing[0]}`, which its fetches need")
            call = f"{name}({', '.join(self.code(site.feeds[param]) for param in params)})"
            assign = self.assign_of.get(id(site.call))
            in_statement = id(site.call) in self.expression_calls
            if train is not None:
                if in_statement:
                    call_code[id(site.call)] = call
                    continue
                position = site.fetches.index(train.targets[0])
                fetched = assign.targets[0].target if assign is not None and len(assign.targets) == 1 else None
                if site.single or not isinstance(fetched, (cst.Tuple, cst.List)):
                    raise Fallback(site.line, "the result of running the train op is used")
                elements = [element.value for element in fetched.elements]
                dropped = elements[position]
                if not (isinstance(dropped, cst.Name) and dropped.value == "_"):
                    raise Fallback(site.line, "the train op's result (None) is assigned to a name")
                kept = [self.code(element) for index, element in enumerate(elements) if index != position]
                kept_fetches = [fetch for index, fetch in enumerate(site.fetches) if index != position]
                assert assign is not None
                assign_targets[id(assign)] = kept[0] if len(kept) == 1 else ", ".join(kept)
                if len(kept) == 1:
                    call_code[id(site.call)] = self.value_of(kept_fetches[0], call)
                else:
                    call_code[id(site.call)] = self.list_values(kept_fetches, call)
                continue
            if in_statement:
                call_code[id(site.call)] = call
            elif site.keys:
                listed = self.list_values(site.fetches, call)
                call_code[id(site.call)] = f"dict(zip(({', '.join(site.keys)},), {listed}))"
            elif site.single:
                # merge_all()'s dict of tensors goes to write_summaries as it is
                call_code[id(site.call)] = self.value_of(site.fetches[0], call)
            else:
                call_code[id(site.call)] = self.list_values(site.fetches, call)
        init_calls = {id(call) for call, _, kind in self.session_uses if kind in ("init", "close", "graph")}
        saver_calls = {id(call): kind for call, _, kind in self.session_uses if kind in ("save", "restore")}
        rewrite = self

        class Sites(cst.CSTTransformer):
            def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
                if id(original) in call_code:
                    return cst.parse_expression(call_code[id(original)])
                if id(original) in rewrite.summary_adds:
                    assert isinstance(updated.func, cst.Attribute)
                    return updated.with_changes(
                        func=cst.Name(rewrite.summary_writer_helper),
                        # add_summary(summary, global_step=step): the helper takes them by position
                        args=[
                            cst.Arg(updated.func.value, comma=cst.MaybeSentinel.DEFAULT),
                            *(arg.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT) for arg in updated.args),
                        ],
                    )
                kind = saver_calls.get(id(original))
                if kind is not None:
                    path = rewrite.code(original.args[1].value)
                    assert rewrite.saver is not None
                    step = next(
                        (arg.value for arg in original.args if arg.keyword and arg.keyword.value == "global_step"), None
                    )
                    if step is not None:  # TF1 appended the step to the file name
                        path = f'"{{}}-{{}}".format({path}, int({rewrite.code(step)}))'
                    if kind == "save":
                        return cst.parse_expression(f"{rewrite.saver}.write({path})")
                    return cst.parse_expression(f"{rewrite.saver}.read({path}).assert_consumed()")
                return updated

            def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:
                if id(original) in assign_targets:
                    target = cst.parse_expression(assign_targets[id(original)])
                    assert isinstance(target, (cst.Name, cst.Tuple))
                    return updated.with_changes(targets=[cst.AssignTarget(target)])
                return updated

            def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
                if not updated.body:
                    return updated.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
                return updated

            def leave_SimpleStatementLine(
                self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
            ) -> cst.BaseStatement | cst.RemovalSentinel:
                if id(original) in rewrite.feed_bindings:
                    return cst.RemoveFromParent()  # its values are passed to the step where it was fed
                if len(original.body) == 1 and isinstance(original.body[0], cst.Expr):
                    value = original.body[0].value
                    if id(value) in init_calls:
                        return cst.RemoveFromParent()
                    if id(value) in rewrite.statement_codes:
                        made = cst.parse_statement(rewrite.statement_codes[id(value)] + "\n")
                        assert isinstance(made, cst.SimpleStatementLine)
                        return updated.with_changes(body=made.body)
                return updated

        for init_call, _, kind in self.session_uses:
            if kind in ("init", "close", "graph") and id(init_call) not in self.expression_calls:
                raise Fallback(self.line(init_call), f"the {kind} call's result is used as a value")
        by_top: dict[int, list[cst.FunctionDef]] = {}
        for helper in self.helpers.values():
            first_top = min(functions[key][3] for key in helper.users)
            by_top.setdefault(first_top, []).append(self.render_helper(helper))
        for _, _, function, top in functions.values():
            by_top.setdefault(top, []).append(function)
        new_body: list[cst.BaseStatement] = []
        generated: set[int] = set()
        outside: list[cst.BaseStatement] = []  # the module's statements while new_body fills the main block
        for top, statement in enumerate(self.body):
            if id(statement) in self.in_main_block and not outside:
                outside, new_body = new_body, []
            elif id(statement) not in self.in_main_block and outside:
                new_body = self.close_main_block(outside, new_body)
                outside = []
            for function in by_top.get(top, []):
                new_body.append(function)
                generated.add(id(function))
            emitted: list[cst.BaseStatement] = []
            if id(statement) in self.removed:
                emitted += self.module_forms.get(id(statement), ())
            elif id(statement) in self.replacements:
                emitted += self.replacements[id(statement)]
            elif self.saver is not None and statement is self.saver_statement:
                holders = [name for name, index in self.holders if index < self.saver_index]
                arguments = ", ".join(f"{name}={name}" for name in holders)
                checkpoint = cst.parse_statement(f"{self.saver} = {tf}.train.Checkpoint({arguments})\n")
                assert isinstance(checkpoint, cst.SimpleStatementLine)
                emitted.append(statement.with_changes(body=checkpoint.body))
                self.changes.append(
                    CompatChange(
                        self.line(statement),
                        1,
                        f"tf.train.Saver() -> tf.train.Checkpoint over {', '.join(holders) or 'nothing'} "
                        "(what the Saver saved: every variable and optimizer slot made before it)",
                    )
                )
            else:
                visited = statement.visit(Sites())
                if isinstance(visited, cst.BaseStatement):
                    emitted.append(visited)
            definitions = (cst.FunctionDef, cst.ClassDef)
            after_function = bool(by_top.get(top)) or bool(new_body and isinstance(new_body[-1], definitions))
            if after_function and emitted and not isinstance(emitted[0], definitions):
                emitted[0] = self.after_function(emitted[0])
            for position in range(1, len(emitted)):  # a generated helper among the emitted statements
                if isinstance(emitted[position - 1], definitions) and not isinstance(emitted[position], definitions):
                    emitted[position] = self.after_function(emitted[position])
            new_body += emitted
        if outside:
            new_body = self.close_main_block(outside, new_body)
        module_body = self.splice(new_body)
        if self.keras is not None and "keras" not in self.bindings.values():
            at = next(
                index
                for index, statement in enumerate(module_body)
                if isinstance(statement, cst.SimpleStatementLine)
                and any(isinstance(small, cst.Import) for small in statement.body)
                and self.tf in set(bound_names(statement)) | {self.code(statement).split()[-1]}
            )
            module_body.insert(at + 1, cst.parse_statement(f"import {self.keras}\n"))
        if self.rmsprop_class:
            module_body = self.with_rmsprop_class(module_body)
        module_body = self.rewrite_v1_calls(self.rewrite_app(module_body))
        module = self.module.with_changes(body=module_body)
        # Nothing of the TF1 graph may be left at module level.
        left = (
            (
                set(self.placeholders)
                | self.init_names
                | {self.session_name or ""}
                | self.graph_names()
                | self.summary_ops
            )
            - set(self.optimizers)
            - self.holders_names()
            - {name for name, _, _, _ in functions.values()}  # a train op's name reused by its step
            | self.graph_objects
        )
        statements = list(new_body)
        for block in new_body:
            if isinstance(block, cst.If) and block.test is getattr(self.main_block, "test", None):
                assert isinstance(block.body, cst.IndentedBlock)
                statements += block.body.body  # the main block is checked statement by statement
                statements.remove(block)
        for statement in statements:
            if id(statement) in generated or isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                continue
            for name in names_read(statement) & left:
                raise Fallback(
                    1, f"`{name}` is still used at module level after the rewrite: {rewrite.code(statement)[:80]!r}"
                )
        return module.code

    def close_main_block(
        self, outside: list[cst.BaseStatement], inside: list[cst.BaseStatement]
    ) -> list[cst.BaseStatement]:
        """The `if __name__ == "__main__":` block back around what its statements became."""
        assert self.main_block is not None and isinstance(self.main_block.body, cst.IndentedBlock)
        if not inside:
            inside = [cst.SimpleStatementLine([cst.Pass()])]
        first = inside[0]
        if isinstance(first, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            inside = [first.with_changes(leading_lines=[]), *inside[1:]]
        block = self.main_block.with_changes(body=self.main_block.body.with_changes(body=inside))
        return [*outside, block]

    def after_function(self, statement: cst.BaseStatement) -> cst.BaseStatement:
        """PEP 8's blank lines after a function, in place of the blank lines the statement had."""
        assert isinstance(statement, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        leading: list[cst.EmptyLine] = list(statement.leading_lines)
        while leading and leading[0].comment is None:
            leading.pop(0)
        return statement.with_changes(leading_lines=[*self.blank_lines(), *leading])

    @staticmethod
    def step_key(fetches: Iterable[str], resolved: Iterable[Definition | str | None]) -> tuple[int | str, ...]:
        """The same fetches of the same definitions share a step; a variable (None) is told apart by its name."""
        return tuple(id(item) if item is not None else name for name, item in zip(fetches, resolved, strict=True))

    def list_values(self, fetches: Iterable[str], call: str) -> str:
        """What sess.run returned for a list: NumPy values, and merge_all()'s dict of tensors as it is
        (it goes to write_summaries)."""
        if set(fetches) & self.summary_names:
            return f"[value if isinstance(value, dict) else value.numpy() for value in {call}]"
        if set(fetches) & self.structures:  # a whole dataset element: a tuple or dict of tensors
            return f"[{self.tf}.nest.map_structure(lambda t: t.numpy(), value) for value in {call}]"
        return f"[value.numpy() for value in {call}]"

    def value_of(self, fetch: str, call: str) -> str:
        """What sess.run returned for one fetch: a NumPy value, each of a dataset element's, or the summaries dict."""
        if fetch in self.summary_names:
            return call  # merge_all()'s dict of tensors goes to write_summaries as it is
        if fetch in self.structures:
            return f"{self.tf}.nest.map_structure(lambda t: t.numpy(), {call})"
        return f"{call}.numpy()"

    def splice(self, new_body: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """The module's statements with the rewritten scope in place of the old one."""
        owner = self.scope_owner
        if owner is None:
            return new_body
        assert isinstance(owner.body, cst.IndentedBlock)
        if not new_body:
            new_body = [cst.SimpleStatementLine([cst.Pass()])]
        replaced = owner.with_changes(body=owner.body.with_changes(body=new_body))
        body: list[cst.BaseStatement] = []
        for statement in self.module.body:
            if statement is owner:
                body.append(replaced)
            elif id(statement) in self.module_replacements:
                kept = self.module_replacements[id(statement)]
                if kept is not None:
                    body.append(kept)
            else:
                body.append(statement)
        return body

    def parts(
        self, train: Definition | None, others: list[tuple[str, Definition | str | None]]
    ) -> tuple[list[Definition], list[Definition], set[str]]:
        """What a step computes under the tape (the loss), what after, and the placeholders it reads."""
        tape_part, tape_placeholders = self.closure(train.deps if train is not None else [])
        rest_all, rest_placeholders = self.closure(item for _, item in others if item is not None)
        in_tape = {id(definition) for definition in tape_part}
        rest = [definition for definition in rest_all if id(definition) not in in_tape]
        return tape_part, rest, tape_placeholders | rest_placeholders

    # --- one forward pass, shared by the steps that compute it ----------------------------
    def plan_forward(self) -> None:
        """Definitions that two or more steps compute become one helper function they all call.

        A helper is rooted at the last shared tensor of a step (the model's output, the loss):
        everything that tensor depends on is shared too, so each step keeps only what is its own.
        """
        self.helpers: dict[int, Helper] = {}
        self.closure_ids: dict[int, set[int]] = {}
        self.step_members: dict[tuple[int | str, ...], list[Definition]] = {}
        self.step_returns: dict[tuple[int | str, ...], set[str]] = {}
        for site in self.sites:
            resolved = [self.resolve(name, site.top) for name in site.fetches]
            if all(item is None for item in resolved):
                continue
            trains = [item for item in resolved if isinstance(item, Definition) and item.train is not None]
            train = trains[0] if len(trains) == 1 else None
            # (train is None: a variable resolves to None too, and is fetched like any other name)
            others = [
                (name, item)
                for name, item in zip(site.fetches, resolved, strict=True)
                if train is None or item is not train
            ]
            key = self.step_key(site.fetches, resolved)
            if key not in self.step_members:
                tape_part, rest, _ = self.parts(train, others)
                self.step_members[key] = tape_part + rest
                returns = {name for name, _ in others}
                if train is not None and train.train is not None:
                    returns.add(train.train[1])
                self.step_returns[key] = returns
        users: dict[int, set[tuple[int | str, ...]]] = {}
        for key, members in self.step_members.items():
            for definition in members:
                users.setdefault(id(definition), set()).add(key)
                self.closure_ids[id(definition)] = {id(d) for d in self.closure([definition])[0]}
        shared = [d for members in self.step_members.values() for d in members if len(users[id(d)]) > 1]
        shared_ids = {id(d) for d in shared}
        for key, members in self.step_members.items():
            for root in self.maximal([d for d in members if id(d) in shared_ids]):
                if len(self.closure_ids[id(root)]) == 1:
                    continue  # one shared statement (a call of the model function): a helper would only wrap it
                if id(root) not in self.helpers:
                    definitions, placeholders = self.closure([root])
                    params = sorted(placeholders, key=lambda name: self.placeholders[name][0])
                    self.helpers[id(root)] = Helper(root, definitions, params)
                self.helpers[id(root)].users.add(key)
        for helper in self.helpers.values():
            base = "forward" if len(self.helpers) == 1 else f"forward_{helper.root.targets[0]}"
            helper.name = self.fresh(base)
        for key, members in self.step_members.items():
            self.layout(members, self.step_returns[key], collect=True)

    def maximal(self, members: list[Definition]) -> list[Definition]:
        """The members no other member depends on."""
        return [d for d in members if not any(o is not d and id(d) in self.closure_ids[id(o)] for o in members)]

    def layout(
        self,
        definitions: list[Definition],
        returns: set[str],
        *,
        prefix: str = "",
        collect: bool = False,
        own: Definition | None = None,
    ) -> list[str]:
        """The lines that compute ``definitions``, with a call of a forward helper for what is shared.

        With ``collect``, only records what each helper must return: the names its caller reads.
        """
        calls = self.maximal([d for d in definitions if id(d) in self.helpers and d is not own])
        covered = set().union(*(self.closure_ids[id(d)] for d in calls)) if calls else set()
        read = set(returns)
        for definition in definitions:
            if id(definition) not in covered:
                read |= names_read(definition.function_form or definition.statement)
        lines: list[str] = []
        # A helper's call goes where the first definition it covers stood: what reads its results
        # comes after that (the loss a train step computes from the shared forward pass).
        first_covered = {
            id(call): next(d for d in definitions if id(d) in self.closure_ids[id(call)]) for call in calls
        }
        for definition in definitions:
            for call in calls:
                if first_covered[id(call)] is not definition:
                    continue
                helper = self.helpers[id(call)]
                if collect:
                    inside = {name for d in helper.definitions for name in d.targets}
                    helper.returns.update((inside & read) | set(call.targets))
                    continue
                targets = [name if name in read else "_" for name in helper.ordered_returns()]
                lines.append(f"{prefix}{', '.join(targets)} = {helper.name}({', '.join(helper.params)})\n")
            if id(definition) not in covered and not collect:
                form = definition.function_form or definition.statement
                lines.append(indent(self.code(form).lstrip("\n"), prefix))
        return lines

    def shared_into_tape(
        self, tape_part: list[Definition], rest: list[Definition]
    ) -> tuple[list[Definition], list[Definition]]:
        """A forward helper the train step shares with another step, and whose pass the loss reads too
        (`sess.run([train_op, loss, accuracy])` beside an accuracy-only run), is called once, under the
        tape: TF1 computed the loss and the accuracy from one forward pass, before the update. Called
        after the update it would compute the model a second time, on the updated weights."""
        in_tape = {id(definition) for definition in tape_part}
        moved: set[int] = set()
        for root in self.maximal([d for d in rest if id(d) in self.helpers]):
            if self.closure_ids[id(root)] & in_tape:
                moved |= self.closure_ids[id(root)]
        if not moved:
            return tape_part, rest
        tape_part = sorted([*tape_part, *(d for d in rest if id(d) in moved)], key=lambda definition: definition.index)
        return tape_part, [d for d in rest if id(d) not in moved]

    def own_reads(self, definitions: list[Definition]) -> set[str]:
        """Names read by the definitions a step computes itself (not through a forward helper)."""
        calls = self.maximal([d for d in definitions if id(d) in self.helpers])
        covered = set().union(*(self.closure_ids[id(d)] for d in calls)) if calls else set()
        read: set[str] = set()
        for definition in definitions:
            if id(definition) not in covered:
                read |= names_read(definition.function_form or definition.statement)
        return read

    def render_helper(self, helper: Helper) -> cst.FunctionDef:
        returned = helper.ordered_returns()
        lines = [
            f"def {helper.name}({', '.join(helper.params)}):\n",
            f'    """The forward pass the steps below share (it computes {", ".join(returned)})."""\n',
            *self.layout(helper.definitions, set(returned), prefix="    ", own=helper.root),
            f"    return {', '.join(returned)}\n",
        ]
        function = cst.parse_module("".join(lines)).body[0]
        assert isinstance(function, cst.FunctionDef)
        self.changes.append(
            CompatChange(helper.root.line, 1, f"the graph that several sess.run calls shared -> `{helper.name}`")
        )
        return function.with_changes(leading_lines=self.blank_lines())

    @staticmethod
    def after_gradients(definitions: list[Definition]) -> set[int]:
        """Ids of the compute_gradients definitions and of those that read them (in order)."""
        after: set[int] = set()
        for definition in definitions:
            if definition.gradients or any(isinstance(dep, Definition) and id(dep) in after for dep in definition.deps):
                after.add(id(definition))
        return after

    def function(
        self, site: Site, train: Definition | None, others: list[tuple[str, Definition | str | None]]
    ) -> tuple[str, list[str], cst.FunctionDef, int]:
        tf = self.tf
        tape_part, rest, placeholders = self.parts(train, others)
        if train is not None and train.applies is None:
            tape_part, rest = self.shared_into_tape(tape_part, rest)
        params = sorted(placeholders, key=lambda name: self.placeholders[name][0])
        if train is not None:
            # The train op's own name is free once its definition is gone (nothing else may read it).
            name = train.targets[0] if train.targets == ("train_step",) else self.fresh("train_step")
        else:
            name = self.fresh("compute_" + "_".join(site.fetches))
        lines = [f"@{tf}.function\n", f"def {name}({', '.join(params)}):\n"]
        for param in params:
            if param not in self.static and param not in self.elements:  # an element is tensors already
                lines.append(f"    {param} = {tf}.cast({param}, {self.placeholders[param][1]})\n")

        returns = {fetch for fetch, _ in others} | ({train.train[1]} if train is not None and train.train else set())
        returns |= self.own_reads(tape_part + rest)  # the part after the tape reads what the tape computed

        def body(definitions: Iterable[Definition], prefix: str) -> None:
            lines.extend(self.layout(list(definitions), returns, prefix=prefix))

        if train is None and any(d.gradients for d in rest):
            raise Fallback(site.line, "compute_gradients' pairs fetched outside the train step")
        if any(isinstance(item, Definition) and item.gradients for _, item in others):
            # The pairs hold the variables, which TF1's run read before its update and a TF2 step
            # returns after it: the printed pairs would differ (held-out round 5's Lab 3).
            raise Fallback(site.line, "compute_gradients' pairs fetched with the update")
        if train is not None and train.applies is not None:
            # `G = opt.compute_gradients(loss)` ... `opt.apply_gradients(G')`: the loss under the tape,
            # then the gradients and what the program does with them (clipping), then the update.
            after = self.after_gradients(tape_part)
            optimizer = (train.train or ("", ""))[0]
            lines.append(f"    with {tf}.GradientTape() as tape:\n")
            body([d for d in tape_part if id(d) not in after], "        ")
            body([d for d in tape_part if id(d) in after], "    ")
            lines.append(f"    {optimizer}.apply_gradients({train.applies})\n")
        elif train is not None:
            optimizer, loss = train.train or ("", "")
            lines.append(f"    with {tf}.GradientTape() as tape:\n")
            body(tape_part, "        ")
            # TF1's minimize updated its var_list, else every trainable variable the loss reads
            variables = train.train_variables or "tape.watched_variables()"
            lines.append(f"    variables = {variables}\n")
            lines.append(f"    {optimizer}.apply_gradients(zip(tape.gradient({loss}, variables), variables))\n")
            if train.train_counter is not None:
                # TF1's minimize(global_step=step) added 1 to the step with each update
                lines.append(f"    {train.train_counter}.assign_add(1)\n")
        body(rest, "    ")
        returned = [fetch for fetch, _ in others]
        if train is not None and not returned:
            returned = [train.train[1]] if train.train else []
        if returned:
            lines.append(
                f"    return {', '.join(returned)}\n"
                if len(returned) > 1 or not site.single
                else f"    return {returned[0]}\n"
            )
        text = "".join(lines)
        if len(returned) == 1 and not site.single and train is None:
            text = text.replace(f"    return {returned[0]}\n", f"    return ({returned[0]},)\n")
        function = cst.parse_module(text).body[0]
        assert isinstance(function, cst.FunctionDef)
        function = function.with_changes(leading_lines=self.blank_lines())
        what = "train step (GradientTape + Keras optimizer)" if train is not None else "direct call"
        self.changes.append(
            CompatChange(site.line, 1, f"sess.run of {', '.join(site.fetches)} -> `{name}`, a tf.function {what}")
        )
        return name, params, function, site.top
