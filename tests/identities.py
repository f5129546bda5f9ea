"""Identities for the SPEC 8 tests: hostile look-alikes, their honest twins, and a strategy.

Shared by the core, gate and schema tests, so the class list is written once
and every surface (the rule, ``decide``, leases, the schemas) sees all of it.
"""

from __future__ import annotations

from hypothesis import strategies as st

#: (test id, text): none of these is an identity.  Blank ones count as *missing*.
BLANK: list[tuple[str, str]] = [
    ("empty", ""),
    ("spaces", "   "),
    ("tab and newline", "\t\n"),
    ("NBSP", "\u00a0"),
    ("ideographic space", "\u3000"),
]
#: (test id, text, the code point the refusal names).
NOT_PLAIN: list[tuple[str, str, int]] = [
    ("NBSP+ZWSP", "\u00a0\u200b", 0x00A0),
    ("lone ZWJ U+200D", "\u200d", 0x200D),
    ("ZWSP inside", "ci\u200b-bot", 0x200B),
    ("owner with a newline", "ci-bot\nclass=flake", 0x0A),
    ("trailing newline", "ci-bot\n", 0x0A),
    ("tab inside", "ci\tbot", 0x09),
    ("NUL", "ci\x00bot", 0x00),
    ("DEL", "ci-bot\x7f", 0x7F),
    ("Cyrillic o", "c\u043eding-agent-7", 0x043E),
    ("Cyrillic a and e", "r\u0435vi\u0435w\u0435r", 0x0435),
    ("Greek omicron", "c\u03bfding-agent-7", 0x03BF),
    ("U+2010 for '-'", "coding\u2010agent-7", 0x2010),
    ("U+2011 non-breaking hyphen", "coding\u2011agent-7", 0x2011),
    ("hangul filler U+3164", "ci-bot\u3164", 0x3164),
    ("hangul choseong filler U+115F", "\u115fci-bot", 0x115F),
    ("combining grapheme joiner U+034F", "ci-\u034fbot", 0x034F),
    ("variation selector U+FE0F", "ci-bot\ufe0f", 0xFE0F),
    ("halfwidth hangul filler U+FFA0", "ci-bot\uffa0", 0xFFA0),
    ("braille blank U+2800", "ci-bot\u2800", 0x2800),
    ("byte-order mark U+FEFF", "\ufeffci-bot", 0xFEFF),
    ("right-to-left override U+202E", "ci-\u202etob", 0x202E),
    ("word joiner U+2060", "ci\u2060bot", 0x2060),
    ("Mongolian vowel separator U+180E", "ci\u180ebot", 0x180E),
    ("line separator U+2028", "ci-bot\u2028", 0x2028),
    ("combining acute", "jose\u0301", 0x0301),
    ("precomposed e-acute", "jos\u00e9", 0x00E9),
    ("fullwidth letters (NFKC folds them to ASCII)", "\uff43\uff49-bot", 0xFF43),
    ("fullwidth hyphen-minus", "ci\uff0dbot", 0xFF0D),
    ("ligature fi (NFKC folds it to 'fi')", "\ufb01x-bot", 0xFB01),
    ("Kelvin sign (NFKC folds it to 'K')", "\u212a8s-bot", 0x212A),
    ("mathematical bold a", "\U0001d41a-bot", 0x1D41A),
    ("emoji", "ci-bot\U0001f916", 0x1F916),
    ("lone surrogate", "ci-\udc80bot", 0xDC80),
]
#: Honest identities: every one must still be accepted.
HONEST: list[str] = [
    "ci-bot",
    "coding-agent-7",
    "reviewer@example.test",
    "Jane Doe",
    "team/platform:policy-job",
    "~",
    "x",
    "!\"#$%&'()*+,-./0123456789:;<=>?@ABCXYZ[\\]^_`abcxyz{|}~",
    "img:sha256:" + "a" * 64 + "+nonce:0123456789abcdef",
    "img:local-uncontainerized+nonce:fedcba9876543210",
]
#: Honest identities that are different people or runners: never "the same".
DISTINCT: list[tuple[str, str]] = [
    ("coding-agent-7", "coding-agent-8"),
    ("ci-bot", "ci_bot"),
    ("alice", "bob"),
    ("reviewer@example.test", "reviewer@example.org"),
    ("o", "0"),
    ("l", "1"),
    (
        "img:sha256:" + "a" * 64 + "+nonce:0123456789abcdef",
        "img:sha256:" + "a" * 64 + "+nonce:0123456789abcdee",
    ),
]
#: Honest spellings of one identity: case and spaces do not make a second one.
SAME: list[tuple[str, str]] = [
    ("Bot", "bot "),
    ("coding-agent-7", "CODING-AGENT-7"),
    ("Jane Doe", "jane doe"),
    (" reviewer@example.test", "Reviewer@Example.Test"),
]

#: Honest identities: printable ASCII with a non-space character.
IDENTITIES = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=40
).filter(str.strip)
