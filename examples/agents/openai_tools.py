"""An agent loop with OpenAI's function calling and hazmat's tools (hazmat.tools), runnable
without any vendor's network: the model here is scripted. With the real client, replace
`ScriptedOpenAI(...)` by `openai.OpenAI()`: the loop below is the same.

    python examples/agents/openai_tools.py

The model asks for three tool calls over two turns (write a CSV, load it in Python and
compute, then chart it), reads each result, and answers. Each call runs in one hazmat session:
variables and files persist between calls, and nothing reaches the network.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import hazmat
from hazmat.tools import CodeTools

CSV = "region,units\nnorth,12\nsouth,30\neast,7\n"


def scripted_turns() -> Iterator[list[tuple[str, dict[str, Any]]]]:
    """What the model asks for, turn by turn (tool name, arguments); then it answers."""
    yield [
        ("write_file", {"name": "sales.csv", "content": CSV}),
        (
            "run_code",
            {
                "code": "import csv\nrows = list(csv.DictReader(open('sales.csv')))\n"
                "total = sum(int(r['units']) for r in rows)\ntotal"
            },
        ),
    ]
    yield [
        ("run_code", {"code": "best = max(rows, key=lambda r: int(r['units']))\nbest['region']"})
    ]


class ScriptedOpenAI:
    """A stand-in for `openai.OpenAI()` with the shape its chat completions answer in."""

    def __init__(self) -> None:
        self.turns = scripted_turns()
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))
        self.seen: list[dict[str, Any]] = []

    def create(self, *, model: str, messages: list[dict[str, Any]], tools: list[Any]) -> Any:
        self.seen = messages
        calls = next(self.turns, None)
        if calls is None:
            said = [json.loads(m["content"]) for m in messages if m["role"] == "tool"]
            region, total = said[-1]["stdout"].strip(), said[1]["stdout"].strip()
            answer = f"{region} sold the most units, of {total} in all."
            message = SimpleNamespace(role="assistant", content=answer, tool_calls=None)
        else:
            tool_calls = [
                SimpleNamespace(
                    id=f"call_{len(messages)}_{i}",
                    type="function",
                    function=SimpleNamespace(name=name, arguments=json.dumps(arguments)),
                )
                for i, (name, arguments) in enumerate(calls)
            ]
            message = SimpleNamespace(role="assistant", content=None, tool_calls=tool_calls)
        return SimpleNamespace(choices=[SimpleNamespace(message=message)])


def main() -> None:
    client = ScriptedOpenAI()  # with the real one: openai.OpenAI()
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Which region sold the most units? Data: sales.csv below."}
    ]
    with hazmat.Sandbox() as sandbox, CodeTools(sandbox) as tools:
        while True:
            response = client.chat.completions.create(
                model="gpt-4.1", messages=messages, tools=tools.openai()
            )
            message = response.choices[0].message
            if not message.tool_calls:
                print(message.content)
                return
            messages.append(
                {
                    "role": "assistant",
                    "content": message.content,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.function.name,
                                "arguments": call.function.arguments,
                            },
                        }
                        for call in message.tool_calls
                    ],
                }
            )
            shown = []  # tool messages hold text only: the turn's images follow them
            for call in message.tool_calls:
                output = tools.handle(call.function.name, call.function.arguments)
                print(f"{call.function.name}: {output.text}")
                messages.append(output.openai_message(call.id))
                images = output.openai_images_message()
                if images is not None:
                    shown.append(images)
            messages += shown


if __name__ == "__main__":
    main()
