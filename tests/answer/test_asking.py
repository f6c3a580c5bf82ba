"""The questions a call asks (mcpgen.answer.asking): which parameters a form can hold, and what is
still to ask once some answers have come."""

import pytest

from mcpgen.answer.asking import ANSWERS, NeedsInput, ask, elicitable, missing_arguments, questions_for
from mcpgen.errors import ArgumentError

SCHEMA = {
    "properties": {
        "country": {"type": "string", "enum": ["FR", "DE"]},
        "since": {"type": "integer", "minimum": 1950},
        "codes": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["country", "since"],
}


def test_only_primitive_fields_are_asked_for_and_a_form_cannot_hold_a_list():
    assert elicitable({"type": "string", "format": "date", "pattern": "^[0-9-]+$"}) == {
        "type": "string",
        "format": "date",
    }
    assert elicitable({"type": "string", "format": "uuid"}) == {"type": "string"}
    assert elicitable({"type": "array", "items": {"type": "string"}}) is None
    with_list = {**SCHEMA, "required": ["country", "codes"]}
    assert missing_arguments(with_list, {}, "t") is None  # the call is then refused as always


def test_the_answers_fill_in_only_missing_parameters_then_the_confirmation_is_asked():
    filled, pending = questions_for(SCHEMA, "t", {"country": "DE"}, {}, "Sure?")
    assert filled == {"country": "DE"} and [q.key for q in pending] == ["arguments"]
    assert pending[0].required == ["since"]
    answers = {"arguments": {"country": "FR", "since": 2000, "unknown": 1}}
    filled, pending = questions_for(SCHEMA, "t", {"country": "DE"}, answers, "Sure?")
    assert filled == {"since": 2000, "country": "DE"}  # the argument given wins; unknown fields are dropped
    assert [q.key for q in pending] == ["confirm"]
    assert questions_for(SCHEMA, "t", filled, {"confirm": {"confirm": True}}, "Sure?") == (filled, [])


def test_ask_raises_until_answered_and_an_answer_without_its_fields_is_refused():
    with pytest.raises(NeedsInput) as err:
        ask("who", "Name?", {"name": {"type": "string"}})
    assert err.value.questions[0].schema() == {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
    }
    token = ANSWERS.set({"who": {}})  # accepted without the field: asking again would ask forever
    try:
        with pytest.raises(ArgumentError, match=r"^The person's answer to 'who' left out name\.$"):
            ask("who", "Name?", {"name": {"type": "string"}})
    finally:
        ANSWERS.reset(token)
