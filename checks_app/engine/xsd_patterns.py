"""XSD regular expressions (the xs:pattern of an IDS restriction) matched with RE2, in time linear in the value.

Python's `re` backtracks: a pattern with nested quantifiers such as `(a+)+b` takes exponential time on a value that
almost matches, so one IDS file could hold a check worker for its whole time limit. XSD patterns are regular (no
back-references, no look-around), so RE2 expresses all of them except what exceeds its limits (a repetition count
above 1000, a program above its memory budget); those are refused as errors of the IDS file, never run elsewhere.

Translation: elementpath (the XSD library ifctester itself uses) turns the XSD syntax into explicit character
classes (`\\i`, `\\c`, `\\p{IsBlock}`, `\\p{Lu}`, subtraction `[a-z-[aeiou]]`), escapes `^` and `$` (plain characters
in XSD) and anchors the whole pattern. The multi-character escapes `\\d \\D \\w \\W \\s \\S` are first written as
classes (`[\\d]`), because elementpath leaves them as they are outside a class, where RE2 reads them as ASCII (and
Python's `\\w` is not XSD's either: XSD's excludes "_" and includes symbols such as "$").
"""

from __future__ import annotations

import functools
from typing import Callable

import re2
from elementpath.regex import RegexError, translate_pattern

CLASS_ESCAPES = frozenset("dDwWsS")
# translate_pattern(anchors=False) anchors the whole expression as ^(?:...)$(?!\n\Z) (Python's $ also matches before
# a final newline); RE2's full match anchors instead.
ANCHORED_PREFIX = "^(?:"
ANCHORED_SUFFIX = r")$(?!\n\Z)"
CACHED_PATTERNS = 1024
MATCH_RANGE_LENGTH = 64  # bytes of the bounds of the strings a pattern can match (full_matcher)


class PatternUnsupported(ValueError):
    """An xs:pattern that is not an XSD regular expression, or that RE2 cannot run; the message says which and why."""


def _escapes_as_classes(pattern: str) -> str:
    """`\\d` outside a character class written as `[\\d]` (and so on for D, w, W, s, S); the rest as it is."""
    out, depth, position = [], 0, 0
    while position < len(pattern):
        char = pattern[position]
        if char == "\\" and position + 1 < len(pattern):
            escape = pattern[position:position + 2]
            out.append(f"[{escape}]" if depth == 0 and escape[1] in CLASS_ESCAPES else escape)
            position += 2
            continue
        if char == "[":
            depth += 1  # inside a class "[" only opens a subtracted class: "-["
        elif char == "]" and depth:
            depth -= 1
        out.append(char)
        position += 1
    return "".join(out)


def xsd_to_re2(pattern: str) -> str:
    """The RE2 syntax of an XSD pattern, to be matched against the whole value (full match)."""
    try:
        translated = translate_pattern(_escapes_as_classes(pattern), back_references=False, lazy_quantifiers=False, anchors=False)
    except RegexError as exc:
        raise PatternUnsupported(f"xs:pattern {pattern!r} is not an XSD regular expression: {exc}") from None
    if not (translated.startswith(ANCHORED_PREFIX) and translated.endswith(ANCHORED_SUFFIX)):
        raise RuntimeError(f"elementpath anchored {pattern!r} in an unexpected way: {translated[:80]!r}")
    return "(?:" + translated[len(ANCHORED_PREFIX):-len(ANCHORED_SUFFIX)] + ")"


def _options() -> re2.Options:
    options = re2.Options()
    options.never_capture = True  # groups of an XSD pattern only group
    options.log_errors = False  # the error comes back as the exception
    return options


@functools.lru_cache(maxsize=CACHED_PATTERNS)
def compile_xsd_pattern(pattern: str):
    """The compiled RE2 expression of an XSD pattern (once per pattern); PatternUnsupported when there is none."""
    try:
        return re2.compile(xsd_to_re2(pattern), _options())
    except re2.error as exc:
        reason = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise PatternUnsupported(f"xs:pattern {pattern!r} is beyond what the linear-time matcher (RE2) runs: {reason}") from None
    except UnicodeEncodeError:
        raise PatternUnsupported(f"xs:pattern {pattern!r} contains a surrogate code point, which no XML text can hold") from None


def xsd_pattern_matches(pattern: str, value: str) -> bool:
    """Whether the whole value matches the XSD pattern."""
    return compiled_pattern_matches(compile_xsd_pattern(pattern), value)


def full_matcher(compiled) -> Callable[[str], bool]:
    """text -> compiled_pattern_matches(compiled, text), for many texts: RE2's own match of the text's UTF-8 bytes,
    without pyre2's Python wrapper around it (~1 µs a text, which finds the match's position in characters), and
    not even that for a text outside RE2's range of the strings that can match (PossibleMatchRange: "Window .*"
    matches between b"Window " and b"Window \xf4..."), which most texts of a model are."""
    regexp = compiled._regexp
    match, both, no_match = regexp.Match, re2._Anchor.ANCHOR_BOTH, (-1, -1)
    bounded, lowest, highest = regexp.PossibleMatchRange(MATCH_RANGE_LENGTH)

    def matches(text: str) -> bool:
        try:
            encoded = text.encode()
        except UnicodeEncodeError:  # a lone surrogate in the value: not XML text, matches no pattern
            return False
        if bounded and not lowest <= encoded <= highest:
            return False
        return match(both, encoded, 0, len(encoded))[0] != no_match

    return matches


def compiled_pattern_matches(compiled, value: str) -> bool:
    """Whether the whole value matches a pattern compiled by compile_xsd_pattern."""
    try:
        return compiled.fullmatch(value) is not None
    except UnicodeEncodeError:  # a lone surrogate in the value: not XML text, matches no pattern
        return False
