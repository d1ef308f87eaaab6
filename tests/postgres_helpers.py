"""Helpers for the PostgreSQL ledger tests: the local server, a schema of each test's own.

Tests use the PostgreSQL server on 127.0.0.1:5432 (database ``test``, role ``root``, no
password; CI starts one) each in a schema of its own with a unique name, dropped when the test
ends; without a server, or without psycopg, they are skipped, saying how to get one.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator

import pytest

PG_SERVER = "postgresql://root@127.0.0.1:5432/test"


def _postgres_up() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=0.5):
            pass
        import psycopg  # noqa: F401
    except (OSError, ImportError):
        return False
    return True


requires_postgres = pytest.mark.skipif(
    not _postgres_up(),
    reason="no PostgreSQL on 127.0.0.1:5432 (database 'test', role 'root', trust auth) or "
           "psycopg missing (pip install 'spendguard-llm[postgres]'); .ci/run starts one")


def fresh_schema() -> str:
    """A schema name no other test uses."""
    return f"sgtest_{uuid.uuid4().hex[:16]}"


def postgres_url(schema: str) -> str:
    """A ledger URL for ``schema``. Its commits do not wait for the server's disk flush
    (``synchronous_commit=off`` for these sessions): no test crashes the server, and waiting
    for the disk twice per call made the PostgreSQL runs several times slower; what every
    other process sees once a step has committed is the same."""
    return f"{PG_SERVER}?schema={schema}&options=-csynchronous_commit%3Doff"


def drop_schema(*schemas: str) -> None:
    """Drop tests' schemas and everything in them, in one statement."""
    import psycopg

    if not schemas:
        return
    names = ", ".join(f'"{schema}"' for schema in schemas)
    with psycopg.connect(PG_SERVER, autocommit=True, connect_timeout=5) as db:
        db.execute(f"DROP SCHEMA IF EXISTS {names} CASCADE")


@pytest.fixture(name="postgres_schema")
def fixture_postgres_schema() -> Iterator[str]:
    """A schema of this test's own on the local server, dropped afterwards."""
    schema = fresh_schema()
    yield schema
    drop_schema(schema)


@pytest.fixture(name="postgres_ledger_url")
def fixture_postgres_ledger_url(postgres_schema: str) -> str:
    """The URL of an empty PostgreSQL ledger in this test's own schema."""
    return postgres_url(postgres_schema)
