"""What a frame the SDK cannot read is answered with, in one sentence that never echoes it.

JSON-RPC 2.0: what is not JSON is -32700, JSON that is not one message is -32600, both with id
null unless the id can be read. The SDK drops such frames on stdio without a word (and reads a
request with an object, fractional or null id as a notification), so its client waits out its
own timeout; `refusal` says which answer a line gets before the SDK sees it.

>>> refusal('{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}') is None
True
>>> refusal('{"id": 3, "method": "tools/list"}')["id"]
3
>>> refusal('{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}')["error"]["code"]
-32600
>>> refusal("{not json")["error"]["code"], refusal("{not json")["id"] is None
(-32700, True)
"""

from __future__ import annotations

import json
import sys

import pydantic_core

__all__ = ["NOT_JSON", "NOT_ONE_MESSAGE", "error_answer", "refusal"]

NOT_JSON = "Parse error: the message is not JSON, or is nested too deep to read"
NOT_ONE_MESSAGE = "Invalid Request: not one JSON-RPC 2.0 message (a batch, or a field missing or of the wrong type)"


def error_answer(code: int, message: str, request_id: str | int | None = None) -> dict:
    """A JSON-RPC error response."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def refusal(line: str | bytes) -> dict | None:
    """The error answering `line`, or None when it is a message the SDK reads (a request, a notification
    or a response to the server's own request)."""
    try:
        message = pydantic_core.from_json(line)  # the SDK's own reader, cheaper than the json module
    except ValueError:
        return _unread(line)
    if not isinstance(message, dict):
        return error_answer(-32600, NOT_ONE_MESSAGE)
    request_id = _readable_id(message)
    if "id" in message and request_id is None:
        return error_answer(-32600, NOT_ONE_MESSAGE)
    if "method" not in message and ("result" in message or "error" in message):
        return None  # a client's answer: nobody waits for a reply to it
    params = message.get("params")
    if (
        message.get("jsonrpc") != "2.0"
        or not isinstance(message.get("method"), str)
        or not (params is None or isinstance(params, dict))
    ):
        return error_answer(-32600, NOT_ONE_MESSAGE, request_id)
    return None


def _unread(line: str | bytes) -> dict:
    """The error for a line the SDK's reader refuses, told apart by Python's: -32700 for what is not JSON or
    is JSON nested deeper than the SDK reads (or with a lone surrogate), -32600 for a number past the digit
    limit; the id when it can be read."""
    too_long: list[bool] = []

    def number(text: str) -> int | float | None:  # past Python's digit limit (the SDK's too): no number
        if len(text) > sys.get_int_max_str_digits():
            too_long.append(True)
            return None
        return int(text) if text.lstrip("-").isdigit() else float(text)

    try:
        message = json.loads(line, parse_int=number, parse_float=number)
    except (ValueError, RecursionError):
        return error_answer(-32700, NOT_JSON)
    request_id = _readable_id(message) if isinstance(message, dict) else None
    if too_long or not isinstance(message, dict):
        return error_answer(-32600, NOT_ONE_MESSAGE, request_id)
    return error_answer(-32700, NOT_JSON, request_id)


def _readable_id(message: dict) -> str | int | None:
    """The message's id when it is one JSON-RPC allows in a request (a string or an integer), else None."""
    request_id = message.get("id")
    if isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool)):
        return request_id
    return None
