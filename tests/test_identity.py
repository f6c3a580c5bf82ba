"""Who is calling: claim-bound parameters, and the local user's claims over stdio."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from callers import PROJECT, write_project
from mcp import Client
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from mcpgen.errors import ArgumentError
from mcpgen.spec.models import Parameter
from mcpgen.spec.params import Arguments


def bound_arguments() -> Arguments:
    return Arguments(
        {
            "email": Parameter(type="string", description="d", from_claim="email"),
            "n": Parameter(type="integer", description="d", default=3),
        }
    )


def test_claim_bound_parameter_is_not_in_the_input_schema():
    assert list(bound_arguments().schema["properties"]) == ["n"]


def test_claim_bound_parameter_takes_the_claim_and_refuses_an_argument():
    args = bound_arguments()
    token = auth_context_var.set(
        AuthenticatedUser(AccessToken(token="", client_id="c", scopes=[], claims={"email": "a@x.org"}))
    )
    try:
        assert args.validate({"n": 1}) == {"n": 1, "email": "a@x.org"}
        with pytest.raises(
            ArgumentError, match="Argument 'email' is set from the caller's identity and cannot be passed."
        ):
            args.validate({"email": "bob@x.org"})
    finally:
        auth_context_var.reset(token)


def test_missing_claim_is_one_sentence():
    with pytest.raises(ArgumentError) as err:
        bound_arguments().validate({})
    assert str(err.value) == "This tool needs the caller's 'email' claim, and the access token does not carry it."


def test_from_claim_refuses_a_default():
    with pytest.raises(ValueError, match="from_claim parameter takes no default"):
        Parameter(type="string", description="d", from_claim="email", default="x")


@pytest.mark.slow  # a fresh interpreter
def test_stdio_user_takes_claims_from_the_config(tmp_path):
    write_project(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "mcpgen.cli", "call", "my_orders", "-s", str(tmp_path / "specs"), "--json"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert json.loads(out.stdout)["structuredContent"]["table"] == [["id", "amount"], [3, 5.0]]


@pytest.mark.slow
def test_over_stdio_claims_come_from_the_config_or_the_call_is_refused(tmp_path):
    from mcp import StdioServerParameters

    write_project(tmp_path)
    (tmp_path / "specs" / "team_orders.yaml").write_text(
        PROJECT["specs/my_orders.yaml"].replace("from_claim: email", "from_claim: team")
    )
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcpgen.cli", "serve", str(tmp_path / "specs")],
        cwd=str(tmp_path),
        env=dict(os.environ),  # this checkout's mcpgen (PYTHONPATH), not only the SDK's default variables
    )

    async def run():
        async with Client(params) as client:
            names = sorted(t.name for t in (await client.list_tools()).tools)
            return names, await client.call_tool("my_orders", {}), await client.call_tool("team_orders", {})

    names, mine, team = anyio.run(run)
    assert names == ["my_orders", "revenue", "team_orders"]  # the local user may use every tool
    assert mine.structured_content["table"] == [["id", "amount"], [3, 5.0]]  # stdio_claims: bob
    assert team.is_error
    assert (
        team.content[0].text
        == "This tool needs the caller's 'team' claim, and mcpgen.yaml's stdio_claims does not set it."
    )


def test_each_caller_keeps_its_own_identity():
    """The identity text is made once per caller: callers that take turns never get each other's."""
    from mcpgen.identity import caller_identity, local_user

    with local_user({"sub": "alice", "iat": 1}):
        alice = caller_identity()
    with local_user({"sub": "bob"}):
        bob = caller_identity()
    with local_user({"sub": "alice", "iat": 2}):  # a token's own times are not who calls
        again = caller_identity()
    assert caller_identity() is None
    assert alice == again == "('alice', 'local', [], [('sub', 'alice')])"
    assert bob == "('bob', 'local', [], [('sub', 'bob')])"
