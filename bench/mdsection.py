# SPDX-License-Identifier: GPL-2.0-only
"""One section of docs/performance.md that a bench/report_*.py script owns:
the text between its BEGIN and END markers, replaced whole, or appended at
the end the first time."""
import os


def splice(text, begin, end, sec):
    """text with sec (which starts with begin and ends with end) in place of
    the old section, or appended when there is none."""
    if begin in text and end in text:
        return text[:text.index(begin)] + sec.rstrip('\n') + text[text.index(end) + len(end):]
    return text.rstrip('\n') + '\n\n' + sec


def read_doc(docs):
    md = os.path.join(docs, 'performance.md')
    return md, (open(md).read() if os.path.exists(md) else '')
