"""Asking the person over the wire: a call's questions (mcpgen.answer.asking) reach a client that
declared elicitation as an `input_required` result on 2026-07-28 (the client asks, then calls again
with `inputResponses` and the `requestState` it was given) or as `elicitation/create` requests
mid-call on 2025-11-25 (where the connection can carry them: stdio). A client that did not declare
elicitation is never asked, and is answered as before.

The answers so far ride in `requestState`, which the SDK's `RequestStateBoundary` seals (AES-GCM,
bound to the method, tool, arguments and caller, ten minutes) before it leaves and checks when it
comes back: a changed or foreign state is refused before anything runs.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
)
from mcp_types import CLIENT_CAPABILITIES_META_KEY, ClientCapabilities
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..answer.asking import ANSWERS, NeedsInput, Question

logger = logging.getLogger("mcpgen")

MAX_ROUNDS = 10  # questions asked of one call on 2025-11-25 before it gives up (a tool that keeps asking)
STATE_TTL = 600.0  # seconds a requestState may come back

R = TypeVar("R")


def state_boundary(name: str) -> RequestStateBoundary:
    """The middleware that seals and checks `requestState` (a key of this process's own)."""
    return RequestStateBoundary(RequestStateSecurity.ephemeral(ttl=STATE_TTL), default_audience=name)


def _declares_elicitation(ctx, params) -> bool:
    """The client declared form elicitation: for its session, or on this request's `_meta`."""
    capabilities = getattr(ctx.session, "client_capabilities", None)
    declared = (params.meta or {}).get(CLIENT_CAPABILITIES_META_KEY)
    if isinstance(declared, dict):
        try:
            capabilities = ClientCapabilities.model_validate(declared)
        except ValueError:
            return False
    elicitation = getattr(capabilities, "elicitation", None)
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


class Asking:
    """One request's way to the person, and the answers given so far (key -> the accepted content)."""

    def __init__(self, ctx, modern: bool, answers: dict[str, dict[str, Any]], refusal: str | None):
        self.ctx, self.modern, self.answers, self.refusal = ctx, modern, answers, refusal

    @classmethod
    def of(cls, ctx, params) -> Asking | None:
        """How to ask this request's client, or None when it cannot be asked."""
        if not _declares_elicitation(ctx, params):
            return None
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        if not modern and not getattr(ctx.session, "can_send_request", False):
            return None  # 2025-11-25 over stateless HTTP: no way to send the client a request
        answers: dict[str, dict[str, Any]] = {}
        state = getattr(params, "request_state", None)
        if state:  # ours, unsealed by the boundary
            try:
                answers = dict(json.loads(state)["answers"])
            except (ValueError, KeyError, TypeError):
                raise MCPError(code=INVALID_PARAMS, message="Invalid or expired requestState") from None
        asking = cls(ctx, modern, answers, None)
        for key, response in (getattr(params, "input_responses", None) or {}).items():
            asking.take(key, response)
        return asking

    def take(self, key: str, response: Any) -> None:
        """Record one answer: accepted content, or the refusal a decline or cancel makes."""
        if not isinstance(response, ElicitResult):
            return  # an answer to something mcpgen never asks (sampling, roots): ignored
        if response.action == "accept":
            self.answers[key] = dict(response.content or {})
        elif self.refusal is None:
            verb = "declined" if response.action == "decline" else "cancelled"
            self.refusal = f"Not run: the person {verb} the question '{key}'."

    async def run(
        self, questions: Callable[[dict[str, dict[str, Any]]], list[Question] | str], call: Callable[[], Awaitable[R]]
    ) -> R | InputRequiredResult | str:
        """`call()` once `questions(answers)` are all answered and the call itself asks nothing more.

        Returns the call's result, an InputRequiredResult to send (2026-07-28), or the sentence to refuse
        the call with (the person declined, cancelled or said no)."""
        for _ in range(MAX_ROUNDS):
            if self.refusal is not None:
                return self.refusal
            pending = questions(self.answers)
            if isinstance(pending, str):
                return pending
            if not pending:
                token = ANSWERS.set(self.answers)
                try:
                    return await call()
                except NeedsInput as exc:
                    pending = exc.questions
                finally:
                    ANSWERS.reset(token)
            if self.modern:
                return self._input_required(pending)
            for question in pending:
                self.take(question.key, await self._elicit(question))
        return "Not run: it kept asking questions; the details are in the server log."

    def _input_required(self, questions: list[Question]) -> InputRequiredResult:
        requests = {
            q.key: ElicitRequest(params=ElicitRequestFormParams(message=q.message, requested_schema=q.schema()))
            for q in questions
        }
        state = json.dumps({"answers": self.answers}, separators=(",", ":"))
        return InputRequiredResult(input_requests=requests, request_state=state)

    async def _elicit(self, question: Question) -> ElicitResult:
        try:
            return await self.ctx.session.elicit_form(question.message, question.schema())
        except MCPError as exc:  # the client could not show the form: as a cancel
            logger.info("elicitation '%s' not answered: %s", question.key, exc.error.message)
            return ElicitResult(action="cancel")
