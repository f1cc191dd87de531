"""An agent loop with Anthropic's tool use and hazmat's tools (hazmat.tools), runnable without
any vendor's network: the model here is scripted. With the real client, replace
`ScriptedAnthropic()` by `anthropic.Anthropic()`: the loop below is the same.

    python examples/agents/anthropic_tools.py

The model runs Python in one hazmat session over two turns (the first call's variables are
there in the second), one of them past its time limit: the call is interrupted, the session
and its variables stay, and the model goes on.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import hazmat
from hazmat.tools import CodeTools


def scripted_turns() -> Iterator[list[tuple[str, dict[str, Any]]]]:
    """What the model asks for, turn by turn (tool name, input); then it answers."""
    yield [("run_code", {"code": "squares = [n * n for n in range(10)]\nsum(squares)"})]
    yield [("run_code", {"code": "while True:\n    pass", "timeout": 1})]
    yield [("run_code", {"code": "max(squares)"})]


class ScriptedAnthropic:
    """A stand-in for `anthropic.Anthropic()` with the shape its messages API answers in."""

    def __init__(self) -> None:
        self.turns = scripted_turns()
        self.messages = SimpleNamespace(create=self.create)

    def create(self, *, model: str, max_tokens: int, messages: list[Any], tools: list[Any]) -> Any:
        calls = next(self.turns, None)
        if calls is None:
            text = SimpleNamespace(type="text", text="The sum is 285 and the largest square 81.")
            return SimpleNamespace(stop_reason="end_turn", content=[text])
        blocks = [
            SimpleNamespace(
                type="tool_use", id=f"toolu_{len(messages)}_{i}", name=name, input=given
            )
            for i, (name, given) in enumerate(calls)
        ]
        return SimpleNamespace(stop_reason="tool_use", content=blocks)


def main() -> None:
    client = ScriptedAnthropic()  # with the real one: anthropic.Anthropic()
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Sum the squares below 100, then tell me the largest."}
    ]
    with hazmat.Sandbox() as sandbox, CodeTools(sandbox) as tools:
        while True:
            response = client.messages.create(
                model="claude-sonnet-4-5",
                max_tokens=1024,
                messages=messages,
                tools=tools.anthropic(),
            )
            if response.stop_reason != "tool_use":
                print(response.content[0].text)
                return
            messages.append({"role": "assistant", "content": response.content})
            results = []
            for block in response.content:
                if block.type == "tool_use":
                    output = tools.handle(block.name, block.input)
                    print(f"{block.name}: {output.text}")
                    results.append(output.anthropic_block(block.id))
            messages.append({"role": "user", "content": results})


if __name__ == "__main__":
    main()
