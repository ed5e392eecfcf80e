"""What the `invlab` commands share: flags generated from param configs, integer flags with a range and the data
source's `KEY=VALUE` options."""
from __future__ import annotations

import argparse
import json
import re

import param

from ..errors import ConfigError

GROUPS = ("data", "model", "train")


# -- flags from param ----------------------------------------------------------------------------------------------
def flag_type(p: param.Parameter):
    """The argparse `type` that reads parameter `p` from its flag's text."""
    if isinstance(p, param.Integer):
        return int
    if isinstance(p, param.Number):
        def number(text: str):
            if text.lower() in ("auto", "none", ""):
                return None
            try:
                return float(text)
            except ValueError:
                raise argparse.ArgumentTypeError(f"expected a number (e.g. {p.default}), got {text!r}") from None

        return number
    if isinstance(p, param.List):
        return lambda s: [int(v) if v.strip().lstrip("-").isdigit() else v.strip() for v in s.split(",") if v.strip()]
    return str


def describe(p: param.Parameter) -> str:
    """A flag's help text: the parameter's doc, its range and its default."""
    text = (p.doc or "").strip()
    low, high = getattr(p, "bounds", None) or (None, None)
    if isinstance(p, param.List):  # a list's bounds count its items, which its doc already says
        low = high = None
    if low is not None and high is not None:
        text += f" Range {low}..{high}."
    elif low is not None:
        text += f" At least {low}."
    elif high is not None:
        text += f" At most {high}."
    default = p.default if not isinstance(p.default, list) else ",".join(map(str, p.default))
    if default in ("", None):  # nothing to show: the doc says what leaving the flag out means
        default = "none"
    return f"{text} (default: {default})".replace("%", "%%")


def add_param_flags(parser: argparse.ArgumentParser, cls: type[param.Parameterized], group: str,
                    table: dict[str, tuple[str, str]], skip=()) -> None:
    """Add one flag per parameter of `cls`; a name already taken by another group gets the group as prefix."""
    section = parser.add_argument_group(f"{group} options ({cls.__name__})")
    for name, p in cls.param.objects("existing").items():
        if name == "name" or name in skip or isinstance(p, param.Dict):
            continue
        flag = name.replace("_", "-")
        if flag in table:
            flag = f"{group}-{flag}"
        dest = f"{group}__{name}"
        table[flag] = (group, name)
        if isinstance(p, param.Boolean):
            section.add_argument(f"--{flag}", dest=dest, action=argparse.BooleanOptionalAction, default=None,
                                 help=describe(p))
        elif isinstance(p, param.Selector):
            section.add_argument(f"--{flag}", dest=dest, choices=[str(o) for o in p.objects], default=None,
                                 help=describe(p))
        else:
            section.add_argument(f"--{flag}", dest=dest, type=flag_type(p), default=None, help=describe(p),
                                 metavar=name.upper())


def collect(args: argparse.Namespace) -> dict[str, dict]:
    """The generated flags given on the command line, as {group: {parameter: value}}."""
    out: dict[str, dict] = {g: {} for g in GROUPS}
    for key, value in vars(args).items():
        if "__" in key and value is not None:
            group, name = key.split("__", 1)
            out[group][name] = value
    return out


def int_flag(flag: str, low: int = 0, high: int | None = None):
    """An argparse type: an integer in [low, high], refused with the flag and the range named."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} must be an integer, got {text!r}") from None
        if value < low or (high is not None and value > high):
            span = f"from {low} to {high}" if high is not None else f"at least {low}"
            raise argparse.ArgumentTypeError(f"{flag} must be {span}, got {value}")
        return value

    return parse



def id_flag(what: str = "run"):
    """An argparse type: a stored run's or sweep's id (`what`), refused as a usage error outside 1..2^63-1."""
    from ..ids import parse_id

    def parse(text: str) -> int:
        try:
            return parse_id(text, what)
        except ConfigError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    return parse


_SETTING = re.compile(r"invalid ([\w -]+?) setting: (\w+) ")


def in_flag_words(message: str, parser: argparse.ArgumentParser) -> str:
    """`message` with a refused setting (`invalid training setting: steps `) written as the flag the user typed
    (`--steps `); names without a flag of `parser` are left as they are."""
    flags = {a.dest: a.option_strings[0] for a in parser._actions if a.option_strings}

    def as_flag(match: re.Match) -> str:
        what, name = match.groups()
        group = {"training": "train", "data": "data"}.get(what, "model")
        found = [flag for dest, flag in flags.items() if dest.partition("__")[2] == name]
        flag = flags.get(f"{group}__{name}") or (found[0] if len(found) == 1 else None)
        return f"{flag} " if flag else match.group(0)

    return _SETTING.sub(as_flag, message)


def source_options(pairs: list[str]) -> dict:
    """The `--source-option KEY=VALUE` pairs as a dict, each value read as JSON where it is JSON (numbers, true,
    lists), else kept as text; a pair without a key or `=` is a ConfigError."""
    out = {}
    for pair in pairs:
        if "=" not in pair or not pair.split("=", 1)[0].strip():
            raise ConfigError(f"--source-option expects KEY=VALUE, got {pair!r}")
        key, value = pair.split("=", 1)
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out
