"""Upgrading a file of layout 6 (the one corral 0.1 wrote) to the store of this corral.

Layout 6 kept values once in rows of their own (``{"$corral": 7}`` stands for value 7,
``{"$corral": "refs", "v": [[first, count, step], ...]}`` for a list of them; the view
``blobs`` lists every value), and a meta as the keys that changed since its parent's
(``meta_is_delta``). :func:`upgrade` reads every thread back to plain JSON trees, writes
them in the new tables with the new packing and drops the old ones, in the opener's write
transaction: a crash leaves the file as it was.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from typing import Any, Final

from corral.checkpoint import _tables
from corral.checkpoint._rows import Known, Packer
from corral.checkpoint.serde import TAG
from corral.errors import CheckpointError

_DUMPS: Final = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode

_OLD: Final = """
SELECT type, name FROM sqlite_schema
WHERE type IN ('table', 'view') AND name NOT LIKE 'corral%' AND name NOT LIKE 'sqlite%'
"""
"""Layout 6's tables and views (their triggers and indexes go with them); the new tables
are all named ``corral_*``."""

_ROWS: Final = """
SELECT k.thread, k.checkpoint_id, p.checkpoint_id, k.snapshot, k.writes, k.meta, k.meta_is_delta
FROM checkpoints AS k LEFT JOIN checkpoints AS p ON p.seq = k.parent
WHERE k.thread IS NOT NULL ORDER BY k.seq
"""
_NEWEST: Final = """
SELECT t.id, t.name, coalesce(
    (SELECT checkpoint_id FROM checkpoints WHERE seq = t.newest),
    (SELECT checkpoint_id FROM checkpoints WHERE thread = t.id ORDER BY seq DESC LIMIT 1))
FROM threads AS t ORDER BY t.id
"""
_PENDING: Final = """
SELECT t.name, k.checkpoint_id, w.task, w.record
FROM pending_writes AS w JOIN checkpoints AS k ON k.seq = w.seq JOIN threads AS t ON t.id = w.thread
"""


def upgrade(conn: sqlite3.Connection, path: str) -> None:
    """Rewrite a layout-6 file in the new tables, inside the caller's write transaction; a
    row that cannot be read raises ``CheckpointError`` (the rollback leaves the file as it
    was)."""
    try:
        _rewrite(conn)
    except sqlite3.OperationalError:
        raise
    except Exception as exc:
        msg = (
            f"cannot upgrade {path!r} from layout 6: a row cannot be read ({exc!r}); the file "
            "is left as it was: finish its threads with corral 0.1, or move it away"
        )
        raise CheckpointError(msg, path=path) from exc


def _rewrite(conn: sqlite3.Connection) -> None:
    for statement in _tables.create_tables(postgres=False):
        conn.execute(statement)
    texts: dict[int, str] = dict(conn.execute("SELECT id, data FROM blobs").fetchall())
    resolve = functools.partial(_resolve, texts)
    new_ids: dict[int, int] = {}
    for old, name, newest in conn.execute(_NEWEST).fetchall():
        if newest is not None:
            free = dict.fromkeys(("holder", "held_by", "held_until"))
            found = conn.execute(_tables.PUT_FIRST, {"thread": name, "id": newest, **free})
            new_ids[old] = int(found.fetchone()[0])
    metas: dict[tuple[int, str], Any] = {}
    known: Known = {}  # the items stored so far: a value in many snapshots is stored once
    for old, checkpoint_id, parent_id, snapshot, writes, meta, meta_is_delta in conn.execute(
        _ROWS
    ).fetchall():
        thread = new_ids[old]
        meta_tree = resolve(json.loads(meta))
        if meta_is_delta:
            delta = meta_tree if meta_tree.get(TAG) == "delta" else {"v": meta_tree}
            meta_tree = {**metas[thread, parent_id], **delta["v"]}
            for key in delta.get("del", ()):
                meta_tree.pop(key, None)
        metas[thread, checkpoint_id] = meta_tree
        packer = Packer(conn, _tables.PUT_ITEM, thread, known, _DUMPS)
        state = None if snapshot is None else packer.state(resolve(json.loads(snapshot)))
        pairs = [[node, packer.state(update)] for node, update in resolve(json.loads(writes))]
        params = {"thread": thread, "id": checkpoint_id, "parent": parent_id}
        params |= {"snapshot": None if state is None else _DUMPS(state)}
        params |= {"writes": _DUMPS(pairs), "meta": _DUMPS(meta_tree)}
        conn.execute(_tables.PUT_CHECKPOINT, params)
        known.update(packer.new)
    for name, checkpoint_id, task, record in conn.execute(_PENDING).fetchall():
        params = {"thread": name, "id": checkpoint_id, "task": task}
        conn.execute(_tables.PUT_PENDING, params | {"record": _DUMPS(resolve(json.loads(record)))})
    for kind, name in conn.execute(_OLD).fetchall():
        conn.execute(f'DROP {kind} "{name}"')


def _resolve(texts: dict[int, str], tree: Any) -> Any:
    """Return ``tree`` with every reference replaced by the value it stands for (``texts``:
    the file's values, from its view ``blobs``)."""
    if type(tree) is list:
        return [_resolve(texts, x) for x in tree]
    if type(tree) is not dict:
        return tree
    tag = tree.get(TAG)
    if type(tag) is not int and tag != "refs":
        return {key: _resolve(texts, value) for key, value in tree.items()}
    runs = [(tag, 1, 1)] if type(tag) is int else [(*run, 1)[:3] for run in tree["v"]]
    values = []
    for n in (n for first, count, step in runs for n in range(first, first + count * step, step)):
        if n not in texts:
            msg = f"value {n} is missing"
            raise ValueError(msg)
        values.append(_resolve(texts, json.loads(texts[n])))
    return values[0] if type(tag) is int else values
