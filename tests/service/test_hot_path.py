"""The fast path's cheaper pieces give what Django's own would: the body JsonResponse encodes, the record
Logger.info() makes, no record where no handler would write one."""

import json
import logging

import pytest
from django.http import JsonResponse

from django_segment_seq.service import loglines
from django_segment_seq.service.fastpath import JsonAnswer
from django_segment_seq.service.handout import block

BODIES = [
    block("order", range(1, 2)),
    block("Größe", range(2**62, 2**62 + 100)),
    block('a"b\\c\u2028', range(-5, -3)),
    block("0", range(0, 1)),
    {"label": "shop.Invoice.number", "texts": ["INV-0001", "Ünï\u2028"], "values": [1, 2]},
    {"layout": "default", "ids": [2**63 - 1, 0], "id_texts": ["9223372036854775807", "0"], "ratio": 0.5},
]


@pytest.mark.parametrize("body", BODIES)
def test_a_fast_answer_carries_the_bytes_and_headers_of_jsonresponse(body):
    answer, response = JsonAnswer(body), JsonResponse(body)
    assert answer.content == response.content and json.loads(answer.content) == body
    assert dict(answer.items()) == {"Content-Type": response["Content-Type"]}
    assert dict(answer.raw_headers) == {
        b"content-type": response["Content-Type"].encode(),
        b"content-length": str(len(response.content)).encode(),
    }


class Kept(logging.Handler):
    def __init__(self, level: int = logging.NOTSET) -> None:
        super().__init__(level)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def logger():
    """A logger of its own under the root logger, not propagating, outside logging's registry (so the test run
    attaches no handler of its own to it)."""
    made = logging.Logger("tests.service.hot_path", logging.INFO)
    made.parent, made.propagate = logging.root, False
    return made


FIELDS = ("name", "levelno", "levelname", "pathname", "filename", "module", "funcName", "msg", "args", "exc_info")


def test_the_cheaper_line_is_the_record_logger_info_makes(logger):
    kept = Kept()
    logger.addHandler(kept)
    assert loglines.writes_info(logger)
    line = logging.currentframe().f_lineno + 1
    loglines.info(logger, "ID service: %s took %d of %s: %s", "shop", 1, "order", "5-5")
    logger.info("ID service: %s took %d of %s: %s", "shop", 1, "order", "5-5")
    cheaper, stock = kept.records
    assert {field: getattr(cheaper, field) for field in FIELDS} == {field: getattr(stock, field) for field in FIELDS}
    assert (cheaper.lineno, stock.lineno) == (line, line + 1)
    assert cheaper.getMessage() == "ID service: shop took 1 of order: 5-5"


def test_no_record_is_made_where_no_handler_would_write_it(logger):
    assert loglines.writes_info(logger) is False  # no handler and no propagation: the last resort (WARNING) only
    logger.addHandler(Kept(logging.WARNING))
    assert loglines.writes_info(logger) is False
    logger.propagate = True  # the root logger's handlers, which pytest's capture adds at every level
    assert loglines.writes_info(logger) is any(handler.level <= logging.INFO for handler in logging.root.handlers)
    logger.propagate = False
    logger.addFilter(lambda record: True)  # a filter sees every record, as it would through logger.info()
    assert loglines.writes_info(logger)
    quiet = logging.Logger("tests.service.quiet", logging.WARNING)
    quiet.addHandler(Kept())
    assert not loglines.writes_info(quiet)  # a logger not enabled for INFO
