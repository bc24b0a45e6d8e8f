"""The service's INFO line per block, written as Logger.info() writes it for less work on the hot path: the same record
(message, arguments, caller's file, line and function) handed to the same handlers, but no record at all when no
handler would write it, and the caller's frame read directly rather than searched for."""

from __future__ import annotations

import logging
import sys

INFO = logging.INFO
UNKNOWN_CALLER = ("(unknown file)", 0, "(unknown function)")


def writes_info(logger: logging.Logger) -> bool:
    """Whether an INFO record of `logger` would reach a handler that takes it (or logging's last resort).

    A logger with filters is always given its record: a filter may count or change what it sees.
    """
    if not logger.isEnabledFor(INFO):
        return False
    if logger.filters:
        return True
    current: logging.Logger | None = logger
    found = False
    while current is not None:
        for handler in current.handlers:
            found = True
            if handler.level <= INFO:
                return True
        current = current.parent if current.propagate else None
    # No handler at all: logging falls back on its last resort (WARNING and up), or warns once when there is none.
    return not found and (logging.lastResort is None or logging.lastResort.level <= INFO)


def info(logger: logging.Logger, message: str, *args: object) -> None:
    """logger.info(message, *args) for a caller that checked writes_info(): the record its caller's line would make."""
    if type(logger) is not logging.Logger:  # a project's own logger class, which may find its caller otherwise
        logger.info(message, *args, stacklevel=2)
        return
    path, line, function = UNKNOWN_CALLER
    if logging._srcfile:  # logging's own switch for recording the caller (None: "(unknown file)")
        frame = sys._getframe(1)
        path, line, function = frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name
    logger.handle(logger.makeRecord(logger.name, INFO, path, line, message, args, None, function))
