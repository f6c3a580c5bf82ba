"""Hand-written tools of the conformance fixture project: the content kinds a spec's template cannot
make (an image, audio, an embedded resource), each built from the fixture table's readings the way
an analyst's Python tool would, and returned with its sources like every mcpgen tool.

The suite checks the kind of each content item (an image with data and a MIME type, ...), not its
bytes; the bytes here are real: a PNG bar chart, a WAV of one tone per reading, the CSV itself.

`test_tool_with_progress` works through the readings in three steps and reports how far it is the
way an engine reports a query's progress (`mcpgen.engines.control.attached`), so a caller who asks
gets notifications/progress (over `serve --http`, a 2026-07-28 call on an event stream in its POST).

The tools named test_input_required_result_* and test_streaming_elicitation ask the person with
`mcpgen.ask`, as a hand-written tool does (docs/asking.md): the server puts the question to a client
that declared elicitation and calls the tool again with the answer.

`slow_compute`, `failing_job` and `test_tool_with_task` are long-running, for the suite's tasks scenarios:
`@registry.tool(long_running=True)` offers a tool as a task exactly as `long_running: true` does for a
spec (docs/long-work.md). Each works through the readings for as long as it is told, reporting its
progress, and stops as soon as its call is cancelled (`tasks/cancel`), as a query stops on the database.
"""

import base64
import csv
import io
import math
import struct
import threading
import time
import wave
import zlib
from pathlib import Path
from typing import Annotated

from mcp.types import AudioContent, CallToolResult, EmbeddedResource, ImageContent, TextContent, TextResourceContents
from pydantic import Field

from mcpgen import DataToolOutput, ask, registry
from mcpgen.engines.control import attached

READINGS_CSV = Path(__file__).parent.parent / "data" / "readings.csv"
SOURCES = ["https://modelcontextprotocol.io/"]
RESOURCE_URI = "test://fixture/readings.csv"


def _readings() -> list[tuple[int, float]]:
    with READINGS_CSV.open(newline="", encoding="utf-8") as f:
        return [(int(row["hour"]), float(row["level"])) for row in csv.DictReader(f)]


def _table(readings: list[tuple[int, float]]) -> list[list]:
    return [["hour", "level"], *[[hour, level] for hour, level in readings]]


def _result(content: list, readings: list[tuple[int, float]]) -> CallToolResult:
    return CallToolResult(content=content, structured_content={"sources": SOURCES, "table": _table(readings)})


def bar_chart_png(values: list[float], height: int = 20) -> bytes:
    """A PNG bar chart, one pixel column per value, bars dark on white (8-bit greyscale)."""
    top = max(values) or 1.0
    bars = [round(v / top * height) for v in values]
    raw = b"".join(b"\x00" + bytes(0 if height - y <= bar else 255 for bar in bars) for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", len(values), height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def tones_wav(values: list[float], rate: int = 8000, seconds_each: float = 0.05) -> bytes:
    """A mono 16-bit WAV: one short tone per value, higher for larger values (200-800 Hz)."""
    low, high = min(values), max(values)
    frames = bytearray()
    for value in values:
        pitch = 200 + 600 * ((value - low) / ((high - low) or 1.0))
        for i in range(int(rate * seconds_each)):
            frames += struct.pack("<h", int(12000 * math.sin(2 * math.pi * pitch * i / rate)))
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(bytes(frames))
    return out.getvalue()


def _csv_resource(readings: list[tuple[int, float]]) -> EmbeddedResource:
    text = READINGS_CSV.read_text(encoding="utf-8")
    return EmbeddedResource(
        type="resource", resource=TextResourceContents(uri=RESOURCE_URI, mime_type="text/csv", text=text)
    )


def _png(readings: list[tuple[int, float]]) -> ImageContent:
    data = base64.b64encode(bar_chart_png([level for _, level in readings])).decode()
    return ImageContent(type="image", data=data, mime_type="image/png")


@registry.tool(app=False)
def test_image_content() -> DataToolOutput:
    """The fixture table's hourly readings as a PNG bar chart (one column per hour)."""
    readings = _readings()
    return _result([_png(readings)], readings)


@registry.tool(app=False)
def test_audio_content() -> DataToolOutput:
    """The fixture table's hourly readings as sound: a WAV of one tone per hour, higher for a higher level."""
    readings = _readings()
    data = base64.b64encode(tones_wav([level for _, level in readings])).decode()
    return _result([AudioContent(type="audio", data=data, mime_type="audio/wav")], readings)


@registry.tool(app=False)
def test_embedded_resource() -> DataToolOutput:
    """The fixture table's hourly readings as an embedded CSV resource."""
    readings = _readings()
    return _result([_csv_resource(readings)], readings)


@registry.tool(app=False)
def test_multiple_content_types() -> DataToolOutput:
    """The fixture table's hourly readings three ways: a sentence, a PNG bar chart and the CSV."""
    readings = _readings()
    peak_hour, peak = max(readings, key=lambda r: r[1])
    text = TextContent(type="text", text=f"{len(readings)} hourly readings; the highest, {peak}, at hour {peak_hour}.")
    return _result([text, _png(readings), _csv_resource(readings)], readings)


def _text(sentence: str) -> CallToolResult:
    return _result([TextContent(type="text", text=sentence)], _readings())


NAME = {"name": {"type": "string", "description": "Your name"}}
OK = {"ok": {"type": "boolean", "description": "Go ahead"}}


@registry.tool(app=False)
def test_input_required_result_elicitation() -> DataToolOutput:
    """Greets the person by the name they give, with the number of hourly readings."""
    name = ask("user_name", "What is your name?", NAME)["name"]
    return _text(f"Hello, {name}! The fixture table holds {len(_readings())} hourly readings.")


@registry.tool(app=False)
def test_input_required_result_request_state() -> DataToolOutput:
    """Asks the person to confirm, then gives the highest reading."""
    ok = ask("confirm", "Please confirm", OK)["ok"]
    hour, peak = max(_readings(), key=lambda r: r[1])
    verdict = f"the highest reading is {peak}, at hour {hour}" if ok else "nothing shown"
    return _text(f"Confirmed: {verdict} (state-ok: a changed requestState is refused before the tool runs).")


@registry.tool(app=False)
def test_input_required_result_tampered_state() -> DataToolOutput:
    """Asks the person to confirm, then gives the lowest reading; a tampered requestState is refused."""
    ask("confirm", "Please confirm", OK)
    hour, low = min(_readings(), key=lambda r: r[1])
    return _text(f"The lowest reading is {low}, at hour {hour}.")


@registry.tool(app=False)
def test_input_required_result_multi_round() -> DataToolOutput:
    """Asks two questions, one after the other (the first answer rides in requestState meanwhile)."""
    name = ask("step1", "Step 1: What is your name?", NAME)["name"]
    color = ask("step2", "Step 2: What is your favorite color?", {"color": {"type": "string"}})["color"]
    return _text(f"{name} likes {color}; the fixture table holds {len(_readings())} hourly readings.")


@registry.tool(app=False)
def test_streaming_elicitation() -> DataToolOutput:
    """Asks the person to confirm: on 2026-07-28 the question is an input_required result, never a request."""
    ask("confirm", "Show the number of readings?", OK)
    return _text(f"{len(_readings())} hourly readings.")


STEP_SECONDS = 0.6  # each of the three steps: more than two looks at its progress (every 0.25 s) apart


@registry.tool(app=False)
def test_tool_with_progress() -> DataToolOutput:
    """The mean hourly reading, worked out in three steps (0%, 50%, 100%) that report their progress."""
    readings, done, stop = _readings(), [0.0], threading.Event()
    with attached(stop.set, lambda: done[0]):
        half = len(readings) // 2
        parts = [readings[:half], readings[half:]]
        total = 0.0
        for step, part in enumerate([[], *parts]):
            total += sum(level for _, level in part)
            done[0] = 50.0 * step
            if stop.wait(STEP_SECONDS):  # cancelled: stop working
                break
    return _text(f"The mean of {len(readings)} hourly readings is {total / len(readings):.2f}.")


Seconds = Annotated[float, Field(ge=0, le=600, description="How long the work takes, in seconds")]


def _work(seconds: float) -> bool:
    """Work for `seconds`, reporting the share done; False when the call was cancelled meanwhile."""
    stop, start = threading.Event(), time.monotonic()

    def done() -> float:
        return 100.0 if seconds == 0 else min(100.0, 100.0 * (time.monotonic() - start) / seconds)

    with attached(stop.set, done):
        return not stop.wait(seconds)


@registry.tool(app=False, long_running=True)
def slow_compute(seconds: Seconds = 1.0, label: str = "") -> DataToolOutput:
    """The mean hourly reading, worked out over the given number of seconds (a stand-in for a long query)."""
    readings = _readings()
    if not _work(seconds):
        return _text("Stopped before the mean was worked out.")
    mean = sum(level for _, level in readings) / len(readings)
    return _text(f"{label or 'slow_compute'}: the mean of {len(readings)} hourly readings is {mean:.2f}.")


@registry.tool(app=False, long_running=True)
def failing_job() -> DataToolOutput:
    """Works on the readings for about a second, then fails as a query does: an isError answer of one sentence."""
    _work(1.0)
    failed = TextContent(type="text", text="The job failed on purpose after a second of work.")
    return CallToolResult(content=[failed], is_error=True)


@registry.tool(app=False, long_running=True)
def test_tool_with_task(name: Annotated[str, Field(max_length=100, description="Your name")]) -> DataToolOutput:
    """Greets the person after a second of work on the readings. Its required name, when missing, is asked of
    the person before the task starts, as any missing required argument is (docs/asking.md)."""
    _work(1.0)
    return _text(f"Hello, {name}! The fixture table holds {len(_readings())} hourly readings.")
