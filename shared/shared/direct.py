"""Core SELECTs run straight on the SQLite driver, below SQLAlchemy's execution layer.

SQLAlchemy's asyncio adaptation costs several greenlet switches and a cursor object per
statement, and its execution context more on top: for the small indexed reads of a request
that is much of the request's time. :func:`execute` keeps what SQLAlchemy does well
(compiling a statement, with its compiled-statement cache; binding parameters and decoding
result values with the dialect's own type processors) and does the rest itself: one call
on the driver's connection, on the event loop's thread (:mod:`shared.sqlite`), inside the
session's transaction, answered as an ordinary :class:`~sqlalchemy.engine.Result`.

Only what it can do exactly is taken: SELECTs, and INSERTs of one row with every value
given, without execution options, on a SQLite connection of :mod:`shared.sqlite`. Anything
else (PostgreSQL, updates, RETURNING, defaults to compute, a statement whose result columns
share a name) goes through SQLAlchemy as before (``None`` is returned). Listeners of
``before_cursor_execute`` are still told about each statement; driver errors are raised as
SQLAlchemy's exceptions, as the regular path raises them.
"""

from __future__ import annotations

import sqlite3
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy import Uuid, exc
from sqlalchemy.engine import Connection, Dialect, IteratorResult, Result
from sqlalchemy.engine.result import SimpleResultMetaData
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import Insert, Select
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.types import TypeEngine
from sqlalchemy.util.concurrency import await_

from shared.sqlite import InlineConnection
from shared.types import WireTimestamp, sqlite_wire_text

Processor = Callable[[Any], Any]
S = TypeVar("S")
ENABLED = True


_new = object.__new__
_set = object.__setattr__
_UNKNOWN = uuid.SafeUUID.unknown


_RECENT_UUIDS: dict[str, uuid.UUID] = {}
_RECENT_UUIDS_KEPT = 4096


def _hex_uuid(value: Any) -> uuid.UUID | None:
    """SQLite's stored form of a UUID (32 hex digits) read back: what ``uuid.UUID(value)``
    gives, without its parsing of the other spellings (several times faster).

    Values read again and again (a page's project, its creators) come back as the same
    object, from a bounded memo: UUIDs are immutable, and equal keys that are the same
    object make dict lookups by them cheaper too."""
    if value is None:
        return None
    made = _RECENT_UUIDS.get(value)
    if made is not None:
        return made
    if type(value) is not str or len(value) != 32 or not value.isalnum():
        return uuid.UUID(value)
    made = _new(uuid.UUID)
    _set(made, "int", int(value, 16))
    _set(made, "is_safe", _UNKNOWN)
    if len(_RECENT_UUIDS) >= _RECENT_UUIDS_KEPT:
        _RECENT_UUIDS.clear()
    _RECENT_UUIDS[value] = made
    return made


def _result_processor(kind: TypeEngine[Any], dialect: Dialect) -> Processor | None:
    if isinstance(kind, Uuid) and kind.as_uuid and not dialect.supports_native_uuid:
        return _hex_uuid
    if isinstance(kind, WireTimestamp) and dialect.name == "sqlite":
        return sqlite_wire_text  # the decorator's own processor, minus its wrapper
    processor: Processor | None = kind._cached_result_processor(dialect, None)
    return processor


class _Plan:
    """What one compiled SELECT needs at every execution, worked out once."""

    __slots__ = ("bind_processors", "expanding", "metadata", "positions", "sql")

    def __init__(self, compiled: SQLCompiler, connection: Connection) -> None:
        dialect = connection.dialect
        columns = compiled._result_columns
        keys = [column.keyname for column in columns]
        processors = [_result_processor(column.type, dialect) for column in columns]
        self.metadata = SimpleResultMetaData(
            keys,
            _processors=processors if any(processors) else None,  # type: ignore[arg-type]
        )
        self.sql: str = compiled.string
        self.positions: Sequence[str] = compiled.positiontup or ()
        self.bind_processors: dict[str, Processor] = {
            name: processor
            for name, processor in compiled._bind_processors.items()
            if callable(processor)  # a tuple of them: an expanding parameter, expanded below
        }
        self.expanding = bool(compiled.literal_execute_params or compiled.post_compile_params)


_plans: weakref.WeakKeyDictionary[SQLCompiler, _Plan | None] = weakref.WeakKeyDictionary()


def _plan_for(compiled: SQLCompiler, connection: Connection) -> _Plan | None:
    try:
        return _plans[compiled]
    except KeyError:
        pass
    plan: _Plan | None = None
    columns = compiled._result_columns
    if not compiled.positional or compiled.schema_translate_map:
        pass
    elif compiled.isinsert:
        # One row, every value given: nothing for SQLAlchemy to compute before or read
        # back after (defaults, RETURNING, several rows).
        if not (
            compiled.effective_returning
            or compiled.insert_prefetch
            or compiled.postfetch
            or compiled.for_executemany
            or compiled._insertmanyvalues
        ):
            plan = _Plan(compiled, connection)
    elif (
        not compiled.isupdate
        and not compiled.isdelete
        and columns
        and len({column.keyname for column in columns}) == len(columns)
    ):
        plan = _Plan(compiled, connection)
    _plans[compiled] = plan
    return plan


def _driver(connection: Connection) -> InlineConnection | None:
    adapted = connection.connection.dbapi_connection
    driver = getattr(adapted, "_connection", None)
    return driver if isinstance(driver, InlineConnection) else None


def inline_sqlite(connection: Connection) -> sqlite3.Connection | None:
    """The SQLite connection under ``connection`` when a call on it may run right here,
    on the event loop's thread: one of :mod:`shared.sqlite` with no call on its own
    thread. ``None`` otherwise."""
    driver = _driver(connection)
    if driver is None or driver._on_thread or driver._connection is None:
        return None
    return driver._conn


def begin(connection: Connection, sql: str) -> bool:
    """Run ``sql`` (a ``BEGIN``) on the driver directly, from SQLAlchemy's ``begin`` event
    (inside its greenlet), the database's lock waited for as any call's (:mod:`shared.sqlite`).
    False when the connection is not one this module takes."""
    driver = _driver(connection) if ENABLED else None
    if driver is None:
        return False
    await_(_run(connection, driver, sql, []))
    return True


def _fetchall(driver: InlineConnection, sql: str, parameters: Sequence[Any]) -> list[Any]:
    return driver._conn.execute(sql, parameters).fetchall()


async def _run(
    connection: Connection, driver: InlineConnection, sql: str, parameters: list[Any]
) -> list[Any]:
    """``sql``'s rows, as SQLAlchemy would run it: listeners told first, driver errors
    raised as SQLAlchemy's."""
    if connection.dispatch.before_cursor_execute:
        connection.dispatch.before_cursor_execute(connection, None, sql, parameters, None, False)
    try:
        rows: list[Any] = await driver._execute(_fetchall, driver, sql, parameters)
    except sqlite3.Error as error:
        raise exc.DBAPIError.instance(
            sql, parameters, error, sqlite3.Error, connection_invalidated=False
        ) from error
    return rows


Slot = tuple[str | None, int | None, Processor | None, Any]
"""Where one position of a prepared statement's SQL takes its value from: the parameter
named (``None``: the fixed value given last), the item at that index of it (an expanded
list), and the processor to apply."""


class _Bound:
    """A prepared statement run with one set of parameter names (and lengths of its
    expanded lists): its SQL, result metadata and :data:`Slot` per position."""

    __slots__ = ("metadata", "slots", "sql")

    def __init__(self, sql: str, metadata: Any, slots: list[Slot]) -> None:
        self.sql = sql
        self.metadata = metadata
        self.slots = slots


class _Prepared:
    __slots__ = ("bound", "lists", "statement")

    def __init__(self, statement: Any) -> None:
        self.statement = statement  # kept alive: the registry is keyed by its id
        self.lists: tuple[str, ...] = ()  # its expanding parameters, known after a run
        self.bound: dict[tuple[Any, ...], _Bound | None] = {}

    def key(self, params: Mapping[str, Any] | None) -> tuple[Any, ...]:
        """What a run's SQL depends on: the parameters' names, and the lengths of the
        lists it expands into the SQL (``IN``)."""
        if not params:
            return ()
        names = tuple(params)
        if not self.lists:
            return names
        return (*names, *(len(params[name]) if name in params else -1 for name in self.lists))


_PREPARED: dict[int, _Prepared] = {}
_PREPARED_KEPT = 4096
_BOUND_KEPT = 256  # per statement: its expanded lists' lengths make a key each


def prepared(statement: S) -> S:
    """Marks ``statement`` (a SELECT or INSERT built once, its changing values bound
    parameters) as run again and again: :func:`execute` then works out, once per set
    of parameter names (and lengths of expanded lists), its SQL, the order and processors
    of its parameters and the values it fixes itself, and at every later run only reads
    the parameters (no cache key, no compiled-statement cache lookup, no parameter
    assembly, no expansion of ``IN`` lists into the SQL). Returns ``statement``."""
    if id(statement) not in _PREPARED:
        if len(_PREPARED) >= _PREPARED_KEPT:  # a builder that should not mark what it builds
            _PREPARED.clear()
        _PREPARED[id(statement)] = _Prepared(statement)
    return statement


def _bind(
    compiled: SQLCompiler,
    plan: _Plan,
    params: Mapping[str, Any],
    sql: str,
    positions: Sequence[str],
    processors: Mapping[str, Processor],
    values: Mapping[str, Any],
) -> tuple[tuple[str, ...], _Bound | None]:
    """The names of the expanding parameters of a prepared statement, and its
    :class:`_Bound`, from one run's SQL and assembled ``values`` (after expansion).
    ``None`` when the SQL or a value depends on more than what :meth:`_Prepared.key`
    holds: a parameter rendered into the SQL as a literal, a list expanded in a way not
    read back here, or a value computed at every run."""
    binds = compiled.binds
    expanded: dict[str, tuple[str, int]] = {}  # an expanded name: (parameter, index)
    lists: list[str] = []
    for rendered in compiled.literal_execute_params | compiled.post_compile_params:
        if rendered.key not in params:
            if binds.get(rendered.key) is None:
                return (), None
            continue  # the statement's own value: fixed
        if rendered in compiled.literal_execute_params or not rendered.expanding:
            return (), None
        lists.append(rendered.key)
        name = compiled.bind_names[rendered]
        for index in range(len(params[rendered.key])):
            expanded[f"{name}_{index + 1}"] = (rendered.key, index)
    slots: list[Slot] = []
    for name in positions:
        bind = binds.get(name)
        processor = processors.get(name)
        if name in expanded:
            key, index = expanded[name]
            if values[name] is not params[key][index]:
                return (), None
            slots.append((key, index, processor, None))
        elif bind is None:  # expanded from the statement's own list: fixed
            value = values[name]
            slots.append((None, None, None, processor(value) if processor else value))
        elif bind.key in params or name in params:
            slots.append((bind.key if bind.key in params else name, None, processor, None))
        elif bind.callable is not None:
            return (), None
        else:
            value = values[name]
            slots.append((None, None, None, processor(value) if processor else value))
    return tuple(sorted(lists)), _Bound(sql, plan.metadata, slots)


def _parameters(slots: list[Slot], given: Mapping[str, Any]) -> list[Any]:
    parameters = []
    for key, index, processor, fixed in slots:
        if key is None:
            parameters.append(fixed)
            continue
        value = given[key] if index is None else given[key][index]
        parameters.append(processor(value) if processor else value)
    return parameters


async def execute(
    connection: AsyncConnection, statement: Any, params: Mapping[str, Any] | None = None
) -> Result[Any] | None:
    """``statement`` (with ``params``: the values of its named bind parameters) run on
    the driver directly: a SELECT's rows, or an INSERT's empty result. ``None`` when this
    is not a statement (or a connection) it takes: the caller runs it through SQLAlchemy
    then."""
    sync = connection.sync_connection
    if not ENABLED or sync is None:
        return None
    entry = _PREPARED.get(id(statement))
    if entry is not None and entry.statement is statement:
        bound = entry.bound.get(entry.key(params))
        if bound is not None:
            driver = _driver(sync)
            if driver is not None:
                parameters = _parameters(bound.slots, params or {})
                rows = await _run(sync, driver, bound.sql, parameters)
                return IteratorResult(bound.metadata, iter(rows))
    if (
        not isinstance(statement, Select | Insert)
        or statement._execution_options
        or sync.dialect.name != "sqlite"
        or sync._execution_options.get("compiled_cache", True) is None
    ):
        return None
    driver = _driver(sync)
    if driver is None:
        return None
    dialect = sync.dialect
    compiled, extracted, collected, _hit = statement._compile_w_cache(
        dialect=dialect,
        compiled_cache=sync.engine._compiled_cache,
        column_keys=sorted(params) if params and isinstance(statement, Insert) else [],
        linting=dialect.compiler_linting,
    )
    if not isinstance(compiled, SQLCompiler):  # pragma: no cover (SQLite compiles SQL)
        return None
    plan = _plan_for(compiled, sync)
    if plan is None:
        return None
    values = compiled.construct_params(
        params, extracted_parameters=extracted, escape_names=False, _collected_params=collected
    )
    sql, positions, processors = plan.sql, plan.positions, plan.bind_processors
    if plan.expanding:
        expanded = compiled._process_parameters_for_postcompile(values)
        sql, positions = expanded.statement, expanded.positiontup or ()
        processors = {**processors, **expanded.processors}
        values = dict(expanded.parameters)
    if entry is not None and entry.statement is statement:
        lists, bound = _bind(compiled, plan, params or {}, sql, positions, processors, values)
        if lists != entry.lists:  # first learnt (or changed): what was kept keyed otherwise
            entry.lists = lists
            entry.bound.clear()
        if len(entry.bound) >= _BOUND_KEPT:
            entry.bound.clear()
        entry.bound[entry.key(params)] = bound
    parameters = [
        processors[name](values[name]) if name in processors else values[name] for name in positions
    ]
    rows = await _run(sync, driver, sql, parameters)
    return IteratorResult(plan.metadata, iter(rows))
