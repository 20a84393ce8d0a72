"""Every route annotation form, under ``from __future__ import annotations``.

Aliases are defined after the functions that use them: annotations are read lazily.
``EXPECTED`` maps each function to ``(names, many, sends)``.
"""

from __future__ import annotations

from typing import Annotated, Literal, Optional, Union

from typing_extensions import TypeAliasType

from corral import Command, End, Send


def plain(state: dict[str, object]) -> Literal["a", "b"]:
    return "a"


def with_end(state: dict[str, object]) -> Literal["a"] | End:
    return "a"


def union_form(state: dict[str, object]) -> Union[Literal["a"], Literal["b"], End]:  # noqa: UP007
    return "a"


def annotated(state: dict[str, object]) -> Annotated[Literal["a", "b"], "why"]:
    return "a"


def nested(state: dict[str, object]) -> Literal[Literal["a"], Literal["b", End]]:  # noqa: RUF041
    return "a"


def later_alias(state: dict[str, object]) -> Targets:
    return "a"


def later_type_alias(state: dict[str, object]) -> AliasType | End:
    return "a"


def fan_out(state: dict[str, object]) -> list[Literal["a", "b"]]:
    return ["a", "b"]


def fan_out_alias(state: dict[str, object]) -> list[Targets]:
    return ["a"]


def sends(state: dict[str, object]) -> list[Send[Literal["work"]]]:
    return [Send("work", 1)]


def sends_or_end(state: dict[str, object]) -> list[Send[Literal["work"]]] | End:
    return "__end__"


def command(state: dict[str, object]) -> Command[Literal["a", "b"]]:
    return Command(goto="a")


def command_alias(state: dict[str, object]) -> Command[Targets | End]:
    return Command(goto="a")


def optional(state: dict[str, object]) -> Optional[Literal["a"]]:  # noqa: UP045
    return "a"


def no_annotation(state):  # type: ignore[no-untyped-def]
    return "a"


def str_annotation(state: dict[str, object]) -> str:
    return "a"


def unresolvable(state: dict[str, object]) -> Missing:  # type: ignore[name-defined]  # noqa: F821
    return "a"


def number_literal(state: dict[str, object]) -> Literal[1]:
    return 1


Targets = Literal["a", "b"]
AliasType = TypeAliasType("AliasType", Annotated[Literal["a"], "doc"] | Literal["b"])

EXPECTED = {
    plain: (("a", "b"), False, ()),
    with_end: (("a", "__end__"), False, ()),
    union_form: (("a", "b", "__end__"), False, ()),
    annotated: (("a", "b"), False, ()),
    nested: (("a", "b", "__end__"), False, ()),
    later_alias: (("a", "b"), False, ()),
    later_type_alias: (("a", "b", "__end__"), False, ()),
    fan_out: (("a", "b"), True, ()),
    fan_out_alias: (("a", "b"), True, ()),
    sends: (("work",), True, ("work",)),
    sends_or_end: (("work", "__end__"), True, ("work",)),
}
COMMANDS = {
    command: ("a", "b"),
    command_alias: ("a", "b", "__end__"),
}
UNREADABLE = {
    optional: "None",
    no_annotation: "no return annotation",
    str_annotation: "str",
    unresolvable: "Missing",
    number_literal: "1",
}
