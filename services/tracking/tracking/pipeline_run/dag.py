"""A run's DAG as the dashboard's run page draws it (``GET /runs/{id}/dag``): a node per
step, per artifact a step read or produced (or, before it ran, is configured to), and the
edges between them, named and shaped as the reference names them.

A static pipeline's steps are its snapshot's step configurations; a dynamic one's are the
steps that ran, each with the configuration it was compiled with. The builder is pure:
the rows it takes are read in a fixed number of queries, however many steps the run has.

It is built for a run of thousands of steps: ids stay the text PostgreSQL sends (written
as they are, hashed at C speed), a dynamic step's configuration is parsed by orjson, and
the metadata that repeats (an output's edge, a version's type) is one dict shared by every
node or edge that shows it, so the answer is a few allocations per step.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import orjson

from shared.types import naive_utc

STEP_OUTPUT = "step_output"
LAZY_LOADED = "lazy"
EXTERNAL = "external"
MANUAL = "manual"


class DagStep(NamedTuple):
    """A step that ran (retried tries left out); ``id`` as text, ``dag_config`` as the
    JSON text it is stored as."""

    id: str
    name: str
    status: str
    start_time: dt.datetime | None
    end_time: dt.datetime | None
    dag_config: str | None


class DagLink(NamedTuple):
    """An artifact version a step read (``input``) or produced (``output``)."""

    step_id: str
    direction: str
    name: str
    artifact_version_id: str
    type: str
    data_type: str
    save_type: str


class _StepView(NamedTuple):
    """What the DAG needs of a step's spec and configuration."""

    upstream: list[str]
    inputs: dict[str, list[dict[str, Any]]]
    outputs: list[str]
    substitutions: Mapping[str, str]
    config: dict[str, Any]


CONFIG_KEYS = ("step_type", "group", "substitutions")
NAMED_KEYS = (
    "outputs",
    "client_lazy_loaders",
    "model_artifacts_or_metadata",
    "external_input_artifacts",
)


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _sequence(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def dag_fields(configured: Mapping[str, Any]) -> dict[str, Any]:
    """What the DAG draws of a step's spec and configuration, in their shape: upstream
    steps and inputs; the step's type, group and substitutions, and the names of its
    outputs and of the artifacts it loads."""
    spec = _mapping(configured.get("spec"))
    config = _mapping(configured.get("config") or configured.get("step_config_overrides"))
    kept = {key: config[key] for key in CONFIG_KEYS if key in config}
    for key in NAMED_KEYS:
        kept[key] = dict.fromkeys(_mapping(config.get(key)))
    return {
        "spec": {"upstream_steps": spec.get("upstream_steps"), "inputs": spec.get("inputs")},
        "config": kept,
    }


def _view(configured: Any, substitutions: Mapping[str, str]) -> _StepView:
    """A step's spec and configuration (whole, or as :func:`dag_fields` keeps them) as
    the DAG reads them; whatever is not in the client's shape reads as absent, so no
    stored value breaks the DAG."""
    configured = _mapping(configured)
    spec = _mapping(configured.get("spec"))
    config = _mapping(configured.get("config") or configured.get("step_config_overrides"))
    inputs = {}
    for name, value in _mapping(spec.get("inputs")).items():
        sources = value if isinstance(value, list) else [value]
        inputs[str(name)] = [source for source in sources if isinstance(source, dict)]
    own = _mapping(config.get("substitutions"))
    return _StepView(
        upstream=[str(s) for s in _sequence(spec.get("upstream_steps"))],
        inputs=inputs,
        outputs=[str(name) for name in _mapping(config.get("outputs"))],
        # Read only: the run's own mapping is shared by every step that adds none.
        substitutions={**substitutions, **{str(k): str(v) for k, v in own.items()}}
        if own
        else substitutions,
        config=config,
    )


def _parsed(text: str | None) -> Any:
    """A stored dynamic configuration (JSON text) as data: orjson, or the standard parser
    for what orjson refuses (NaN, integers past 64 bits)."""
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _fill(template: str, substitutions: Mapping[str, str]) -> str:
    """An output's name template filled in; one that cannot be stays as written."""
    if "{" not in template and "}" not in template:
        return template  # what format() would answer, without parsing it
    try:
        return template.format(**substitutions) or template
    except (KeyError, IndexError, ValueError, AttributeError):
        return template


@functools.lru_cache(maxsize=1024)
def _import_path(data_type: str) -> str | None:
    """A Source's import path from the JSON text an artifact version keeps."""
    try:
        source = json.loads(data_type)
    except ValueError:
        return data_type
    if not isinstance(source, dict):
        return None
    module, attribute = source.get("module"), source.get("attribute")
    return f"{module}.{attribute}" if attribute else module


def _iso(value: dt.datetime) -> str:
    return naive_utc(value).isoformat()


def _clean(name: str) -> str:
    return name.replace("/", "-")


def step_node_id(name: str) -> str:
    return f"step/{_clean(name)}"


def artifact_node_id(name: str, step_name: str, io_type: str, is_input: bool) -> str:
    io = "inputs" if is_input else "outputs"
    return f"{_clean(step_name)}/{io}/{io_type}/{_clean(name)}"


class _Dag:
    def __init__(self) -> None:
        self.steps: dict[str, dict[str, Any]] = {}
        self.artifacts: dict[str, dict[str, Any]] = {}
        self.edges: list[dict[str, Any]] = []
        # Each step's regular outputs by (filled-in) name: where its readers' edges start.
        self.outputs: dict[str, dict[str, str]] = defaultdict(dict)
        # Metadata that repeats, one dict per distinct value: nothing changes a node's or
        # an edge's metadata once made, and the encoder writes a shared dict each time.
        self.shared: dict[tuple[Any, ...], dict[str, Any]] = {}

    def once(self, key: tuple[Any, ...], make: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        found = self.shared.get(key)
        if found is None:
            found = self.shared[key] = make()
        return found

    def version_metadata(self, link: DagLink) -> dict[str, Any]:
        key = ("version", link.type, link.data_type, link.save_type)
        return self.once(
            key,
            lambda: {
                "type": link.type,
                "data_type": _import_path(link.data_type),
                "save_type": link.save_type,
            },
        )

    def step(self, name: str, step_id: str | None, metadata: dict[str, Any]) -> str:
        node_id = step_node_id(name)
        self.steps[node_id] = {
            "node_id": node_id,
            "type": "step",
            "id": step_id,
            "name": name,
            "metadata": metadata,
        }
        return node_id

    def artifact(
        self,
        node_id: str,
        name: str,
        artifact_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        self.artifacts[node_id] = {
            "node_id": node_id,
            "type": "artifact",
            "id": artifact_id,
            "name": name,
            "metadata": {} if metadata is None else metadata,
        }
        return node_id

    def edge(self, source: str, target: str, metadata: dict[str, Any]) -> None:
        self.edges.append({"source": source, "target": target, "metadata": metadata})

    def output_edge(self, source: str, target: str, output: str, kind: str) -> None:
        metadata = self.once(
            ("output", output, kind), lambda: {"output_name": output, "type": kind}
        )
        self.edges.append({"source": source, "target": target, "metadata": metadata})

    def input_edge(
        self,
        source: str,
        target: str,
        name: str,
        kind: str,
        index: int | None,
        chunk_index: Any,
        chunk_size: Any,
    ) -> None:
        """An edge into a step; ``index`` ``None``: a configured input, which has none."""
        # Types in the key: 1, 1.0 and true are equal keys but not the same JSON.
        key: tuple[Any, ...] = ("input", name, kind, index, chunk_index, chunk_size)
        key += (type(chunk_index), type(chunk_size))
        try:
            metadata = self.once(
                key, lambda: _input_metadata(name, kind, index, chunk_index, chunk_size)
            )
        except TypeError:  # a chunk value stored as a list or mapping: a dict of its own
            metadata = _input_metadata(name, kind, index, chunk_index, chunk_size)
        self.edges.append({"source": source, "target": target, "metadata": metadata})

    def regular_output(self, step_name: str, output: str, substitutions: Mapping[str, str]) -> str:
        """The node of a step's regular output (made when the step has not been drawn)."""
        filled = _fill(output, substitutions)
        found = self.outputs[step_name].get(filled)
        if found is None:
            node_id = artifact_node_id(filled, step_name, STEP_OUTPUT, False)
            found = self.outputs[step_name][filled] = self.artifact(node_id, filled)
        return found


def build_dag(
    run_id: uuid.UUID,
    status: str,
    configurations: Mapping[str, Mapping[str, Any]],
    is_dynamic: bool,
    substitutions: Mapping[str, str],
    steps: Sequence[DagStep],
    links: Iterable[DagLink],
    step_metadata: Mapping[str, dict[str, Any]],
) -> dict[str, Any]:
    """The reference's ``PipelineRunDAG`` of a run. ``configurations``: the snapshot's
    step configurations by name; ``links``: those of ``steps``; ``step_metadata``: by
    step id (text)."""
    ran = {step.name: step for step in steps}
    if is_dynamic:
        views = {}
        for one in steps:
            config = _parsed(one.dag_config)
            if config is not None:
                views[one.name] = _view(config, substitutions)
    else:
        views = {name: _view(c, substitutions) for name, c in configurations.items()}
    inputs: dict[str, list[DagLink]] = defaultdict(list)
    outputs: dict[str, list[DagLink]] = defaultdict(list)
    for link in links:
        (inputs if link.direction == "input" else outputs)[link.step_id].append(link)
    dag = _Dag()
    subs = {name: view.substitutions for name, view in views.items()}
    for name in _in_order(views):
        view = views[name]
        upstream = set(view.upstream)
        step = ran.get(name)
        node = dag.step(name, step.id if step else None, _step_metadata(view, step, step_metadata))
        if step is not None:
            _ran_inputs(dag, name, node, view, inputs[step.id], subs, upstream)
            _ran_outputs(dag, name, node, view, outputs[step.id])
        else:
            _configured_inputs(dag, name, node, view, subs, upstream)
            for output in view.outputs:
                target = dag.regular_output(name, output, view.substitutions)
                dag.output_edge(node, target, output, STEP_OUTPUT)
        for upstream_name in sorted(upstream):
            source = step_node_id(upstream_name)
            if source in dag.steps:
                dag.edge(source, node, {})
    return {
        "id": run_id,
        "status": status,
        "nodes": [*dag.steps.values(), *dag.artifacts.values()],
        "edges": dag.edges,
    }


def _in_order(views: Mapping[str, _StepView]) -> list[str]:
    """The steps with each after the steps upstream of it (as given where they allow),
    so a reader's edge finds its producer's output drawn. Iterative: a dynamic run's
    chain of steps may be deeper than Python's recursion limit; a cycle is cut where it
    closes."""
    done: dict[str, None] = {}
    entered: set[str] = set()
    for first in views:
        stack = [first]
        while stack:
            name = stack[-1]
            if name in done:
                stack.pop()
                continue
            if name not in entered:
                entered.add(name)
                waiting = [u for u in views[name].upstream if u in views and u not in entered]
                stack.extend(reversed(waiting))
                continue
            stack.pop()
            done[name] = None
    return list(done)


def _input_metadata(
    name: str, kind: str, index: int | None, chunk_index: Any, chunk_size: Any
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"input_name": name, "type": kind}
    if index is not None:
        metadata["index"] = index
    if kind == STEP_OUTPUT or index is not None:
        metadata["chunk_index"] = chunk_index
        metadata["chunk_size"] = chunk_size
    return metadata


def _step_metadata(
    view: _StepView, step: DagStep | None, step_metadata: Mapping[str, dict[str, Any]]
) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    if view.config.get("step_type"):
        metadata["type"] = view.config["step_type"]
    if view.config.get("group"):
        metadata["group"] = view.config["group"]
    if step is None:
        return metadata
    metadata["status"] = step.status
    if step.start_time is not None:
        metadata["start_time"] = _iso(step.start_time)
        if step.end_time is not None:
            metadata["duration"] = (step.end_time - step.start_time).total_seconds()
    if step_metadata.get(step.id):
        metadata["run_metadata"] = step_metadata[step.id]
    return metadata


def _ran_inputs(
    dag: _Dag,
    name: str,
    node: str,
    view: _StepView,
    links: Sequence[DagLink],
    subs: Mapping[str, Mapping[str, str]],
    upstream: set[str],
) -> None:
    """The versions a step read: a regular input is the producing step's output node;
    one its spec does not name gets a node of its own."""
    seen: dict[str, int] = defaultdict(int)
    for link in links:
        index = seen[link.name]
        seen[link.name] += 1
        configured = view.inputs.get(link.name) or []
        if index < len(configured) and configured[index].get("step_name") in subs:
            source = configured[index]
            producer = str(source["step_name"])
            output = str(source.get("output_name"))
            artifact = dag.regular_output(producer, output, subs[producer])
            upstream.discard(producer)
            kind = STEP_OUTPUT
        else:
            # Loaded inside the step: its own node, named by the version (names of
            # loaded artifacts need not be unique), as the reference draws manual loads.
            source = {}
            kind = MANUAL
            artifact = dag.artifact(
                artifact_node_id(str(link.artifact_version_id), name, kind, True),
                link.name,
                link.artifact_version_id,
                dag.version_metadata(link),
            )
        dag.input_edge(
            artifact,
            node,
            link.name,
            kind,
            index,
            source.get("chunk_index"),
            source.get("chunk_size"),
        )


def _ran_outputs(
    dag: _Dag, name: str, node: str, view: _StepView, links: Sequence[DagLink]
) -> None:
    """The versions a step produced, then the configured outputs it has not (it failed
    or is running)."""
    for link in links:
        manual = link.save_type == MANUAL
        node_name = str(link.artifact_version_id) if manual else link.name
        artifact = dag.artifact(
            artifact_node_id(node_name, name, link.save_type, False),
            link.name,
            link.artifact_version_id,
            dag.version_metadata(link),
        )
        dag.output_edge(node, artifact, link.name, link.save_type)
        if link.save_type == STEP_OUTPUT:
            dag.outputs[name][link.name] = artifact
    for output in view.outputs:
        if _fill(output, view.substitutions) in dag.outputs[name]:
            continue
        artifact = dag.regular_output(name, output, view.substitutions)
        dag.output_edge(node, artifact, output, STEP_OUTPUT)


def _configured_inputs(
    dag: _Dag,
    name: str,
    node: str,
    view: _StepView,
    subs: Mapping[str, Mapping[str, str]],
    upstream: set[str],
) -> None:
    """The inputs of a step that has not run, from its spec and configuration."""
    for input_name, sources in view.inputs.items():
        for source in sources:
            producer = str(source.get("step_name"))
            artifact = dag.regular_output(
                producer, str(source.get("output_name")), subs.get(producer, {})
            )
            dag.input_edge(
                artifact,
                node,
                input_name,
                STEP_OUTPUT,
                None,
                source.get("chunk_index"),
                source.get("chunk_size"),
            )
            upstream.discard(producer)
    for key in NAMED_KEYS[1:]:
        kind = EXTERNAL if key == "external_input_artifacts" else LAZY_LOADED
        for input_name in _mapping(view.config.get(key)):
            artifact = dag.artifact(artifact_node_id(input_name, name, kind, True), input_name)
            dag.input_edge(artifact, node, input_name, kind, None, None, None)
