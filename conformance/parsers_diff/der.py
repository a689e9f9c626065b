"""Just enough DER to take a certificate apart, edit one element and put it back."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Node:
    """One TLV: constructed nodes hold children, primitive ones their content bytes."""

    tag: int
    content: bytes = b""
    children: list[Node] = field(default_factory=list)

    @property
    def constructed(self) -> bool:
        return bool(self.tag & 0x20)


def length_bytes(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(body)]) + body


def tlv(tag: int, content: bytes) -> bytes:
    return bytes([tag]) + length_bytes(len(content)) + content


def encode(node: Node) -> bytes:
    if node.constructed:
        return tlv(node.tag, b"".join(encode(c) for c in node.children))
    return tlv(node.tag, node.content)


def read_header(data: bytes, pos: int) -> tuple[int, int, int]:
    """(tag, content start, content end) of the TLV at pos."""
    tag, first = data[pos], data[pos + 1]
    start = pos + 2
    if first < 0x80:
        length = first
    else:
        count = first & 0x7F
        length = int.from_bytes(data[start : start + count], "big")
        start += count
    end = start + length
    if end > len(data):
        raise ValueError("DER element overruns its input")
    return tag, start, end


def decode(data: bytes) -> Node:
    """Parses one TLV tree; the whole input must be that one element."""
    node, end = _decode_at(data, 0)
    if end != len(data):
        raise ValueError("trailing bytes after the DER element")
    return node


def _decode_at(data: bytes, pos: int) -> tuple[Node, int]:
    tag, start, end = read_header(data, pos)
    if not tag & 0x20:
        return Node(tag, data[start:end]), end
    children: list[Node] = []
    inner = start
    while inner < end:
        child, inner = _decode_at(data, inner)
        children.append(child)
    return Node(tag, children=children), end
