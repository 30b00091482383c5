"""YAML read with YAML 1.2's plain scalars (true/false only, 1e-4 a number, 013 thirteen), bounded, keys unique."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Union

import yaml

from kold_span.config.limits import CONFIG_BYTES, read_bounded_text
from kold_span.errors import ConfigError, KoldSpanError


class _Yaml12Loader(yaml.SafeLoader):
    """YAML 1.2's core schema for plain scalars, where PyYAML follows YAML 1.1.

    Only true/false are booleans (labels such as OFF, ON, yes, no stay strings); 1e-4 is a number
    (1.1 needs a dot: 1.0e-4); 013 is thirteen, not octal eleven; 12:30 and 2024-01-01 stay strings
    (1.1 reads a base-60 number and a date).
    """


_YAML = "tag:yaml.org,2002:"
_Yaml12Loader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag not in (f"{_YAML}bool", f"{_YAML}int",
                                                                   f"{_YAML}float", f"{_YAML}timestamp")]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Yaml12Loader.add_implicit_resolver(f"{_YAML}bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                    list("tTfF"))
# Integers before floats: PyYAML takes the first resolver whose pattern matches.
_Yaml12Loader.add_implicit_resolver(f"{_YAML}int", re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
                                    list("-+0123456789"))
_Yaml12Loader.add_implicit_resolver(
    f"{_YAML}float", re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                                r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"), list("-+.0123456789"))


def _yaml12_int(loader: yaml.SafeLoader, node: yaml.Node) -> int:
    text = loader.construct_scalar(node)
    base = {"0o": 8, "0x": 16}.get(text[:2], 10)
    return int(text[2:] if base != 10 else text, base)


def _yaml12_float(loader: yaml.SafeLoader, node: yaml.Node) -> float:
    text = loader.construct_scalar(node).lower()
    return float(text.replace(".inf", "inf").replace(".nan", "nan"))


_Yaml12Loader.add_constructor(f"{_YAML}int", _yaml12_int)
_Yaml12Loader.add_constructor(f"{_YAML}float", _yaml12_float)


# The size of a YAML document once its aliases are expanded, counted as one per value plus the characters of
# each scalar: far above any config (a few thousand), far below what an alias bomb expands to ("billion laughs",
# nine levels: 10^9 values; or one long string repeated: 5 MB × 2,000).
MAX_YAML_SIZE = 4_000_000
# Mappings and lists inside each other: a config nests five deep; PyYAML's parser recurses once per level.
MAX_YAML_DEPTH = 64


class YamlTooLargeError(yaml.YAMLError):
    """A YAML document larger than `MAX_YAML_SIZE` once its aliases are expanded, or nested past `MAX_YAML_DEPTH`."""


class DuplicateKeyError(yaml.YAMLError):
    """A mapping of a YAML document that holds one key twice (YAML forbids it; PyYAML keeps the last)."""


def yaml_load(text: str) -> Any:
    r"""Parse YAML text with YAML 1.2's plain scalars (see `_Yaml12Loader`), aliases bounded.

    A document whose aliases expand past `MAX_YAML_SIZE` (an alias bomb, which would otherwise be
    walked, copied and printed until memory runs out) or that nests deeper than `MAX_YAML_DEPTH` is
    a `YamlTooLargeError`, and a mapping holding a key twice a `DuplicateKeyError` naming both
    lines: each found on the node graph before anything is built.

    Example:
        >>> yaml_load("{lr: 1e-4, seed: 013, label: OFF, run: 2024-01-01, on: true}")
        {'lr': 0.0001, 'seed': 13, 'label': 'OFF', 'run': '2024-01-01', 'on': True}
        >>> bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        ...     f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(6))
        >>> yaml_load(bomb)
        Traceback (most recent call last):
        ...
        kold_span.config.yaml12.YamlTooLargeError: its aliases expand to more than 4000000 values and characters ...
        >>> yaml_load("trainer:\n  lr: 0.1\n  lr: 0.2\n")
        Traceback (most recent call last):
        ...
        kold_span.config.yaml12.DuplicateKeyError: key 'lr' appears twice in one mapping, on line 2 and on line 3
    """
    loader = _Yaml12Loader(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise YamlTooLargeError(f"nested deeper than {MAX_YAML_DEPTH} levels") from None
        if node is None:
            return None
        _check_node_graph(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


_MERGE = f"{_YAML}merge"


def _check_node_graph(root: yaml.Node) -> None:
    """A `YamlTooLargeError` if the node graph, aliases expanded, is larger than `MAX_YAML_SIZE` (one per value plus
    each scalar's characters) or deeper than `MAX_YAML_DEPTH`; a `DuplicateKeyError` for a key twice in a mapping.

    Counted once per distinct node (memoised): the cost is the size of the text, not of the expansion.
    """
    sizes: dict[int, int] = {}

    def size(node: yaml.Node, depth: int) -> int:
        if depth > MAX_YAML_DEPTH:
            raise YamlTooLargeError(f"nested deeper than {MAX_YAML_DEPTH} levels")
        known = sizes.get(id(node))
        if known is not None:
            return known
        sizes[id(node)] = MAX_YAML_SIZE + 1  # a node inside itself (a recursive alias) expands without end
        if isinstance(node, yaml.MappingNode):
            _check_unique_keys(node)
            total = 1 + sum(size(key, depth + 1) + size(value, depth + 1) for key, value in node.value)
        elif isinstance(node, yaml.SequenceNode):
            total = 1 + sum(size(item, depth + 1) for item in node.value)
        else:
            total = 1 + len(node.value)
        sizes[id(node)] = min(total, MAX_YAML_SIZE + 1)
        if total > MAX_YAML_SIZE:
            raise YamlTooLargeError(f"its aliases expand to more than {MAX_YAML_SIZE} values and characters "
                                    "(an alias bomb?)")
        return total

    size(root, 0)


def _check_unique_keys(node: yaml.MappingNode) -> None:
    """A `DuplicateKeyError` naming the lines of a key written twice in one mapping (`<<` merges may repeat keys)."""
    seen: dict[tuple[str, str], int] = {}
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.tag == _MERGE:
            continue
        line = key.start_mark.line + 1
        first = seen.get((key.tag, key.value))
        if first is not None:
            raise DuplicateKeyError(f"key {key.value[:60]!r} appears twice in one mapping, on line {first} "
                                    f"and on line {line}")
        seen[(key.tag, key.value)] = line


def yaml_error_text(path: Union[str, Path], err: yaml.YAMLError) -> str:
    """A YAML file's error in one line: `FILE:LINE: invalid YAML: problem`, or `FILE: invalid YAML: ...` for ours
    (a key twice, which names its lines; a document too large).

    Example:
        >>> try:
        ...     yaml_load("a: [1, 2\\n")
        ... except yaml.YAMLError as err:
        ...     print(yaml_error_text("c.yaml", err))
        c.yaml:2: invalid YAML: expected ',' or ']', but got '<stream end>' (while parsing a flow sequence, line 1)
    """
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    if mark is None:
        return f"{path}: invalid YAML: {err}"
    problem, context, context_mark = err.problem, err.context, err.context_mark  # type: ignore[attr-defined]
    if not problem:
        return f"{path}:{mark.line + 1}: invalid YAML: {context}"
    where = f" ({context}, line {context_mark.line + 1})" if context and context_mark else ""
    return f"{path}:{mark.line + 1}: invalid YAML: {problem}{where}"


def read_yaml_document(path: Union[str, Path], error: type[KoldSpanError]) -> Any:
    """One YAML file's document; more than `CONFIG_BYTES`, bytes that are not UTF-8 or invalid YAML are `error` in
    one line naming the file (and line)."""
    text = read_bounded_text(path, CONFIG_BYTES, error)
    try:
        return yaml_load(text)
    except yaml.YAMLError as err:
        raise error(yaml_error_text(path, err)) from None


def read_yaml(path: Path) -> dict[str, Any]:
    """One YAML file as a mapping; more than `CONFIG_BYTES`, bytes that are not UTF-8, invalid YAML or a non-mapping
    are a `ConfigError`."""
    raw = read_yaml_document(path, ConfigError) or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a config file must be a mapping of keys")
    return raw
