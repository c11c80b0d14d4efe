#!/usr/bin/env python3
"""doc.py STEPTRACE DOC ROOT: every quoted command of a guide page prints what
the page says it prints.

In each fenced block of DOC, a line `$ steptrace ARGS` is run from ROOT (the
repository) as STEPTRACE ARGS, standard output and error together; the lines
after it, up to the next `$ ` line or the end of the block, are its output,
where a line `...` alone stands for any number of lines. Trailing blank
lines do not count.
"""
import shlex
import subprocess
import sys


def blocks(text):
    """The fenced blocks of a Markdown page, each a list of lines."""
    out, cur = [], None
    for line in text.split("\n"):
        if line.startswith("```"):
            if cur is None:
                cur = []
            else:
                out.append(cur)
                cur = None
        elif cur is not None:
            cur.append(line)
    return out


def commands(block):
    """(argv after 'steptrace', expected lines) for each `$ steptrace` line of a block."""
    out, cmd, lines = [], None, []
    for line in block:
        if line.startswith("$ "):
            if cmd is not None:
                out.append((cmd, lines))
            cmd, lines = None, []
            words = shlex.split(line[2:])
            if words and words[0] == "steptrace":
                cmd = words[1:]
        elif cmd is not None:
            lines.append(line)
    if cmd is not None:
        out.append((cmd, lines))
    return out


def trim(lines):
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


def matches(expected, got):
    """expected (with `...` lines) against got, whole."""
    parts, cur = [], []
    for line in expected:
        if line == "...":
            parts.append(cur)
            cur = []
        else:
            cur.append(line)
    parts.append(cur)
    if len(parts) == 1:
        return expected == got
    first, last = parts[0], parts[-1]
    if got[:len(first)] != first or len(got) < len(first) + len(last):
        return False
    if last and got[len(got) - len(last):] != last:
        return False
    i, end = len(first), len(got) - len(last)
    for part in parts[1:-1]:
        while i + len(part) <= end and got[i:i + len(part)] != part:
            i += 1
        if i + len(part) > end:
            return False
        i += len(part)
    return True


def main():
    st, doc, root = sys.argv[1:4]
    text = open(doc, encoding="utf-8").read()
    failures = runs = 0
    for block in blocks(text):
        for argv, expected in commands(block):
            runs += 1
            p = subprocess.run([st] + argv, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            got = trim(p.stdout.decode("utf-8").split("\n"))
            expected = trim(expected)
            if not matches(expected, got):
                failures += 1
                print("FAIL: steptrace %s prints otherwise than the page says:" % " ".join(argv), file=sys.stderr)
                for line in got[:60]:
                    print("  | " + line, file=sys.stderr)
    if not runs:
        print("FAIL: no `$ steptrace` command in %s" % doc, file=sys.stderr)
        return 1
    if failures:
        print("plan.doc: %d of %d commands differ" % (failures, runs), file=sys.stderr)
        return 1
    print("plan.doc: ok (%d commands)" % runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
