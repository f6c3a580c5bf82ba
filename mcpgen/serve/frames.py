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

__all__ = ["NOT_JSON", "NOT_ONE_MESSAGE", "error_answer", "refusal"]

NOT_JSON = "Parse error: the message is not JSON, or is nested too deep to read"
NOT_ONE_MESSAGE = "Invalid Request: not one JSON-RPC 2.0 message (a batch, or a field missing or of the wrong type)"


def error_answer(code: int, message: str, request_id: str | int | None = None) -> dict:
    """A JSON-RPC error response."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def refusal(line: str) -> dict | None:
    """The error answering `line`, or None when it is a message the SDK reads (a request, a notification
    or a response to the server's own request)."""
    too_long: list[bool] = []

    def integer(text: str) -> int | None:  # past Python's digit limit (the SDK's too), read as no number
        if len(text) > sys.get_int_max_str_digits():
            too_long.append(True)
            return None
        return int(text)

    try:
        message = json.loads(line)
    except (ValueError, RecursionError):  # not JSON, or a number past Python's digit limit: read again to tell
        try:
            message = json.loads(line, parse_int=integer)
        except (ValueError, RecursionError):
            return error_answer(-32700, NOT_JSON)
    if not isinstance(message, dict):
        return error_answer(-32600, NOT_ONE_MESSAGE)
    request_id = message.get("id")
    readable = isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool))
    if "id" in message and not readable:
        return error_answer(-32600, NOT_ONE_MESSAGE)
    if "method" not in message and ("result" in message or "error" in message):
        return None  # a client's answer: nobody waits for a reply to it
    params = message.get("params")
    if (
        too_long
        or message.get("jsonrpc") != "2.0"
        or not isinstance(message.get("method"), str)
        or not (params is None or isinstance(params, dict))
    ):
        return error_answer(-32600, NOT_ONE_MESSAGE, request_id)
    return None
