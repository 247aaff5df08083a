"""YAML text → plain data, safely: no code runs (``SafeLoader``) and a small document cannot stand for a huge one.

PyYAML shares an aliased node instead of copying it, so a "billion laughs" document of a few hundred bytes loads
at once; the first copy of it (``json.dumps``, OmegaConf, ``dataclasses.asdict``) expands every alias and hangs
the tool. ``BoundedLoader`` refuses such a document while composing it, before anything is constructed.
"""

from __future__ import annotations

from typing import Any, Optional

import yaml

__all__ = ["MAX_ALIAS_NODES", "MAX_DEPTH", "YAMLBoundError", "BoundedLoader", "parse_yaml", "check_yaml_bounds"]

MAX_ALIAS_NODES = 100_000
"""Nodes that aliases may add to a document (each alias adds every node under the anchor it repeats)."""
MAX_DEPTH = 100
"""Collections nested in each other, deepest first; composing deeper ones would exhaust Python's stack."""


class YAMLBoundError(yaml.YAMLError):
    """A document past a bound: ``problem`` says which, ``fix`` how to write it instead."""

    def __init__(self, problem: str, fix: str) -> None:
        self.problem, self.fix = problem, fix
        super().__init__(problem)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [child for pair in node.value for child in pair]
    return []


def alias_growth(root: yaml.Node) -> int:
    """How many nodes aliases add under ``root``: the nodes with every alias expanded (a shared node counted once
    per reference) less the distinct ones. Iterative, each distinct node visited once; an alias inside its own
    anchor is refused."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if children_done:
            open_nodes.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes[id(child)] for child in _children(node))
        elif id(node) in open_nodes:
            raise YAMLBoundError("a YAML alias refers to a node that contains it",
                                 "write the document out without anchors and aliases")
        elif id(node) not in sizes:
            open_nodes.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in _children(node) if id(child) not in sizes)
    return sizes[id(root)] - len(sizes)


class BoundedLoader(yaml.SafeLoader):
    """``SafeLoader`` that refuses a document nested deeper than ``MAX_DEPTH`` or whose aliases add more than
    ``MAX_ALIAS_NODES`` nodes."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.depth = 0

    def compose_node(self, parent: Optional[yaml.Node], index: Any) -> Optional[yaml.Node]:
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise YAMLBoundError(f"the YAML nests deeper than {MAX_DEPTH} levels", "write a flatter document")
            node = super().compose_node(parent, index)
        finally:
            self.depth -= 1
        return node

    def compose_document(self) -> Optional[yaml.Node]:
        node = super().compose_document()
        if node is not None and alias_growth(node) > MAX_ALIAS_NODES:
            raise YAMLBoundError(f"the YAML aliases expand past {MAX_ALIAS_NODES:,} nodes",
                                 "write the document out without anchors and aliases")
        return node


def parse_yaml(text: str) -> Any:
    """The one YAML document in ``text``, or None for an empty one. Raises ``yaml.YAMLError`` (a
    ``YAMLBoundError`` past a bound)."""
    return yaml.load(text, Loader=BoundedLoader)


def check_yaml_bounds(text: str) -> None:
    """Raise ``YAMLBoundError`` when ``text`` passes a bound; a syntax error is left to the parser that reads it."""
    try:
        yaml.compose(text, Loader=BoundedLoader)
    except YAMLBoundError:
        raise
    except yaml.YAMLError:
        pass
