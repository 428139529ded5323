"""What psycopg_pool logs about agentrecall's pools, logged as agentrecall's instead.

psycopg_pool logs through the logger ``psycopg.pool`` and gives it no handler, so while a
server is down, each of its reconnection attempts reaches Python's last-resort handler, which
prints warnings to stderr in any program that has not configured logging. Those records are
about agentrecall's pools, whose failures reach the caller as exceptions anyway, so they are
logged instead through :data:`LOGGER` (``agentrecall.postgres.pool``), which has a
``NullHandler``: nothing is printed unless the application configures logging, and then its
handlers get them (under that name, at psycopg_pool's levels). Records about other pools of
the same program are left as they are.

A record is agentrecall's when one of its arguments names one of its pools (psycopg_pool puts
the pool's name, or a task whose text holds it, in its messages), or when the task or thread
that logs it is one of such a pool's workers (named after the pool).
"""

from __future__ import annotations

import asyncio
import logging
import threading

LOGGER = "agentrecall.postgres.pool"
"""The logger that carries what psycopg_pool logs about agentrecall's pools."""

_logger = logging.getLogger(LOGGER)
_logger.addHandler(logging.NullHandler())


class _Rerouted(logging.Filter):
    """A filter of ``psycopg.pool`` that passes agentrecall's records on to :data:`LOGGER`."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._ours(record):
            return True
        if _logger.isEnabledFor(record.levelno):
            copy = logging.makeLogRecord(record.__dict__)
            copy.name = LOGGER
            _logger.handle(copy)
        return False  # logged once, under agentrecall's name

    def _ours(self, record: logging.LogRecord) -> bool:
        names = tuple(self.names)
        arguments = record.args if isinstance(record.args, tuple) else ()
        texts = [argument for argument in arguments if isinstance(argument, str)]
        texts += [repr(argument) for argument in arguments if not isinstance(argument, str)]
        if any(name in text for name in names for text in texts):
            return True
        return _worker_name().startswith(names) if names else False


def _worker_name() -> str:
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running loop in this thread: a pool's worker thread, maybe
        task = None
    return task.get_name() if task is not None else threading.current_thread().name


_REROUTED = _Rerouted()


def adopt(name: str) -> None:
    """Log what psycopg_pool says about the pool named ``name`` through :data:`LOGGER`."""
    _REROUTED.names.add(name)
    pool_logger = logging.getLogger("psycopg.pool")
    if _REROUTED not in pool_logger.filters:
        pool_logger.addFilter(_REROUTED)
