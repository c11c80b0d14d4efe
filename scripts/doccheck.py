#!/usr/bin/env python3
"""scripts/doccheck.py: the quoted outputs of README.md and docs/*.md, re-run.

    python3 scripts/doccheck.py --steptrace BUILD/steptrace [--update] [--list] FILE.md...

A fenced code block whose first non-blank line starts with "$ " is a
transcript: each "$ " line is a command (a line ending in a backslash goes
on on the next), the lines after it, up to the next "$ " line or the
fence, what it printed (standard output and error together, as a terminal
shows them). Every such block is run and compared, unless the line before
its opening fence is

    <!-- doccheck: gpu -->          it needs a GPU, or a recording made on one
    <!-- doccheck: skip WHY -->     it cannot run here, and WHY says why

A block of commands other than `steptrace ...` that carries neither mark is
refused: nothing escapes the check unnoticed.

The blocks of one file run in order, in one fresh temporary folder where samples/, docs/, tests/
and scripts/ are links to the repository's own, so `samples/x.stb` reads
the shipped bundle and `-o out.html` writes there (samples/ and docs/ are
copies, so nothing a command writes reaches the repository's); `steptrace` on PATH is
the program given (and python3 one that imports google.protobuf and zstandard,
where one does: Debian's, beside another first on PATH); a `cd` and an `export` hold for the commands after it; LC_ALL=C.UTF-8, TZ=UTC, no COLUMNS; a terminal (a pty)
on standard output and error, so lines interleave as a person sees them.
A command's exit status is not compared (errors are quoted on purpose), but
one killed by a signal or running past --timeout seconds fails.

The comparison is exact, line by line, but for white space at the ends of
lines; an expected line that is "..." alone (indented or not) stands for any number
of lines.

--update writes what the commands print now into the blocks that differ,
keeping the "..." lines where the new output still fits them; a block of
one "..." that no longer fits keeps as many lines before and after it as
it had (and says so: read it), one of more is reported, not rewritten. --list prints
every transcript block: file:line, checked, gpu or skip, first command.
Exit status: 0 when every checked block matches, 1 when one does not, 2 for
bad usage or a refused file.
"""
import argparse
import errno
import os
import pty
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINKS = ("samples", "docs", "tests", "scripts", "proto")
COPIED = ("samples", "docs")   # copied (3.7 MB): zstd ignores links, and nothing reaches the repo
MARK = re.compile(r"^\s*<!--\s*doccheck:\s*(gpu|skip)\b\s*(.*?)\s*-->\s*$")
HEREDOC = re.compile(r"<<-?\s*('[^']+'|\"[^\"]+\"|[A-Za-z_][A-Za-z0-9_]*)")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")


class Block:
    def __init__(self, path, start, end, indent, mark, why):
        self.path = path      # the Markdown file
        self.start = start    # index of the opening fence's line
        self.end = end        # index of the closing fence's line
        self.indent = indent  # the fence's indentation, stripped from the lines inside
        self.mark = mark      # None (checked), "gpu" or "skip"
        self.why = why
        self.steps = []       # [(command text, [its source lines], [expected output lines])]

    def where(self):
        return f"{self.path}:{self.start + 1}"


def parse(path, lines):
    """The transcript blocks of one file, in order."""
    blocks = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence = m.group(1), m.group(2)
        j = i + 1
        while j < len(lines):
            c = FENCE.match(lines[j])
            if c and c.group(2)[0] == fence[0] and len(c.group(2)) >= len(fence) and not c.group(3).strip():
                break
            j += 1
        body = [l[len(indent):] if l.startswith(indent) else l.lstrip() for l in lines[i + 1:j]]
        first = next((l for l in body if l.strip()), "")
        if first.startswith("$ "):
            mark = why = None
            k = i - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            if k >= 0:
                mm = MARK.match(lines[k])
                if mm:
                    mark, why = mm.group(1), mm.group(2)
            b = Block(path, i, j, indent, mark, why)
            cur = None
            n = 0
            while n < len(body):
                line = body[n]
                if line.startswith("$ "):
                    src = [line]
                    cmd = line[2:]
                    while (cmd.endswith("\\") or open_quote(cmd)) and n + 1 < len(body):
                        n += 1
                        src.append(body[n])
                        cmd = cmd + "\n" + body[n]     # sh reads a backslash-newline as it should
                    for delim in HEREDOC.findall(cmd):   # a here-document's lines are the command's
                        delim = delim.strip("'\"")
                        while n + 1 < len(body):
                            n += 1
                            src.append(body[n])
                            cmd = cmd + "\n" + body[n]
                            if body[n].strip() == delim:
                                break
                    cur = (cmd, src, [])
                    b.steps.append(cur)
                elif cur is not None:
                    cur[2].append(line)
                n += 1
            for cmd, src, out in b.steps:   # blank lines before the fence are not output
                while out and not out[-1].strip():
                    out.pop()
            blocks.append(b)
        i = j + 1
    return blocks


# what a checked transcript may run besides steptrace: the tools a reader of
# the guide uses on steptrace's files, all of them in CI's packages
ALLOWED = {"steptrace", "sqlite3", "head", "tail", "grep", "wc", "cat", "ls", "echo", "cd", "sort",
           "chmod", "touch", "mkdir", "printf", "cp", "ln", "sed", "awk", "diff", "cut", "tr",
           "zstd", "bsdtar", "protoc", "python3", "export", "true", "false", "test", "[", "pwd"}


def open_quote(cmd):
    """Whether CMD ends inside a quoted string (it goes on on the next line)."""
    try:
        shlex.split(cmd, comments=True)
    except ValueError:
        return True
    return False


def programs(cmd):
    """The programs a command line runs (the words in command position)."""
    kept, delims = [], []
    for line in cmd.split("\n"):        # a here-document's body is text, not commands
        if delims:
            if line.strip() == delims[0]:
                delims.pop(0)
            continue
        kept.append(line)
        delims += [d.strip("'\"") for d in HEREDOC.findall(line)]
    cmd = "\n".join(kept)
    lex = shlex.shlex(cmd.replace("\\\n", " "), posix=True, punctuation_chars=";&|()<>")
    lex.whitespace = " \t"     # a newline outside quotes ends a command
    lex.commenters = "#"
    lex.wordchars += "~-./*?[]=:,+@%^{}$"
    out, at_start, redirect = [], True, False
    try:
        tokens = list(lex)
    except ValueError:
        return ["<unbalanced quotes>"]
    for t in tokens:
        punct = t and set(t) <= set(";&|()<>")
        if punct and set(t) & set("<>") and "(" not in t:
            redirect = True                    # >, 2>&1, <: a file name or descriptor follows
        elif t == "\n" or (punct and set(t) & set(";&|(")):
            at_start, redirect = True, False   # a command starts: after |, ;, &&, ( or <(
        elif punct:
            pass
        elif redirect:
            redirect = False
        elif at_start and not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", t):
            out.append(t)
            at_start = False
    return out


def steptrace_only(block):
    """Whether every command of BLOCK runs programs of ALLOWED alone."""
    return all(p in ALLOWED for cmd, _, _ in block.steps for p in programs(cmd))


def run_pty(cmd, cwd, env, timeout):
    """Run bash -c CMD with a pty as stdout and stderr; its output, or an error string.
    The folder a command ends in (a `cd`) is where the next one starts."""
    here = os.path.join(cwd, ".doccheck-cwd")
    vars_file = os.path.join(cwd, ".doccheck-env")
    if not os.path.exists(here):
        with open(here, "w") as f:
            f.write(cwd)
    with open(here) as f:
        start = f.read().strip()
    if os.path.exists(vars_file):      # what an earlier command exported
        with open(vars_file, "rb") as f:
            for item in f.read().split(b"\0"):
                k, sep, v = item.decode("utf-8", "replace").partition("=")
                if sep and k not in ("PWD", "OLDPWD", "SHLVL", "_"):
                    env[k] = v
    script = (f"{cmd}\n__st=$?; pwd > {shlex.quote(here)}; env -0 > {shlex.quote(vars_file)};"
              f" exit $__st\n")
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(["bash", "-c", script], cwd=start, env=env, stdin=subprocess.DEVNULL,
                                stdout=slave, stderr=slave, start_new_session=True)
    finally:
        os.close(slave)
    chunks = []
    deadline = time.monotonic() + timeout
    killed = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            os.killpg(proc.pid, signal.SIGKILL)
            killed = True
            break
        r, _, _ = select.select([master], [], [], min(left, 1.0))
        if not r:
            if proc.poll() is not None:     # exited; drain what is left
                r = [master]
            else:
                continue
        try:
            data = os.read(master, 65536)
        except OSError as e:
            if e.errno == errno.EIO:        # the other side closed: done
                break
            raise
        if not data:
            break
        chunks.append(data)
    os.close(master)
    rc = proc.wait()
    text = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    out = []
    for line in text.split("\n"):    # a carriage return overwrites the line, as on a terminal
        shown = ""
        for part in line.split("\r"):
            shown = part + shown[len(part):]
        out.append(shown)
    while out and not out[-1].strip():
        out.pop()
    if killed:
        return out, f"ran past {timeout} s"
    if rc < 0:
        return out, f"killed by signal {-rc}"
    return out, None


def fits(expected, got):
    """Whether the lines GOT match EXPECTED, where a '...' line matches any run of lines."""
    exp = ["..." if l.strip() == "..." else l.rstrip() for l in expected]
    got = [l.rstrip() for l in got]
    # dynamic programming over (i in exp, j in got)
    memo = {}

    def ok(i, j):
        key = (i, j)
        if key in memo:
            return memo[key]
        if i == len(exp):
            r = j == len(got)
        elif exp[i] == "...":
            r = any(ok(i + 1, k) for k in range(j, len(got) + 1))
        else:
            r = j < len(got) and exp[i] == got[j] and ok(i + 1, j + 1)
        memo[key] = r
        return r

    sys.setrecursionlimit(max(10000, 4 * (len(exp) + len(got)) + 100))
    return ok(0, 0)


def first_difference(expected, got):
    """(index of the quoted line, quoted line, printed line) where the two part."""
    exp = ["..." if l.strip() == "..." else l.rstrip() for l in expected]
    got = [l.rstrip() for l in got]
    j = 0
    for i, e in enumerate(exp):
        if e == "...":      # past an elision: the next quoted line must come later
            nxt = next((x for x in exp[i + 1:] if x != "..."), None)
            if nxt is None:
                return len(exp), "<end of quoted output>", "<end of output>"
            try:
                j = got.index(nxt, j)
            except ValueError:
                return i + 1, nxt, "<not printed after the '...' line>"
            continue
        g = got[j] if j < len(got) else "<end of output>"
        if e != g:
            return i, e, g
        j += 1
    return len(exp), "<end of quoted output>", got[j] if j < len(got) else None


def make_folder(steptrace):
    """The temporary folder one file's transcripts run in, and their environment."""
    tmp = tempfile.mkdtemp(prefix="st-doccheck-")
    for name in LINKS:
        src = os.path.join(REPO, name)
        if name in COPIED:   # copies: a command writing there writes here
            for d, _, files in os.walk(src):
                rel = os.path.relpath(d, REPO)
                os.makedirs(os.path.join(tmp, rel), exist_ok=True)
                for f in files:
                    shutil.copy2(os.path.join(d, f), os.path.join(tmp, rel, f))
        else:
            os.symlink(src, os.path.join(tmp, name))
    bindir = os.path.join(tmp, ".bin")
    os.mkdir(bindir)
    os.symlink(os.path.abspath(steptrace), os.path.join(bindir, "steptrace"))
    for cand in (shutil.which("python3"), "/usr/bin/python3"):   # one that reads bundles
        if cand and subprocess.run([cand, "-c", "import google.protobuf, zstandard"],
                                   capture_output=True).returncode == 0:
            os.symlink(cand, os.path.join(bindir, "python3"))
            break
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(PATH=bindir + os.pathsep + env.get("PATH", "/usr/bin:/bin"),
               LC_ALL="C.UTF-8", TZ="UTC", TERM="dumb")
    return tmp, env


def by_counts(expected, got):
    """A quote of one '...': GOT's first and last lines as many as the quote kept before and after it."""
    marks = [i for i, l in enumerate(expected) if l.strip() == "..."]
    if len(marks) != 1:
        return None
    head, tail = marks[0], len(expected) - marks[0] - 1
    if head + tail >= len(got):
        return None
    return got[:head] + [expected[marks[0]]] + (got[len(got) - tail:] if tail else [])


def merge_elisions(expected, got):
    """GOT with EXPECTED's '...' lines kept where they still fit, else None."""
    if "..." not in [l.strip() for l in expected]:
        return got
    # keep the expected lines that are still printed, in order, and a '...' in
    # place of each run of lines the quote had left out
    exp = ["..." if l.strip() == "..." else l.rstrip() for l in expected]
    g = [l.rstrip() for l in got]
    out, j = [], 0
    for i, e in enumerate(exp):
        if e != "...":
            if j < len(g) and g[j] == e:
                out.append(got[j])
                j += 1
                continue
            return None
        # the next quoted line that is not '...': skip to its next occurrence
        nxt = next((x for x in exp[i + 1:] if x != "..."), None)
        if nxt is None:
            j = len(g)
        else:
            try:
                j = g.index(nxt, j)
            except ValueError:
                return None
        out.append(expected[i])
    if j != len(g):
        return None
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steptrace", required=True, help="the steptrace program to run")
    ap.add_argument("--update", action="store_true", help="write what the commands print now")
    ap.add_argument("--list", action="store_true", help="list the transcript blocks")
    ap.add_argument("--timeout", type=float, default=60, help="seconds a command may run (60)")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    if not a.list and not os.access(a.steptrace, os.X_OK):
        print(f"doccheck: {a.steptrace}: not an executable program", file=sys.stderr)
        return 2

    bad = checked = skipped = 0
    folders = []
    refused = False
    for path in a.files:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        blocks = parse(path, lines)
        for b in blocks:
            if b.mark is None and not steptrace_only(b):
                print(f"{b.where()}: a transcript of commands other than steptrace's: mark it "
                      f"<!-- doccheck: gpu --> or <!-- doccheck: skip WHY -->", file=sys.stderr)
                refused = True
            if b.mark == "skip" and not b.why:
                print(f"{b.where()}: <!-- doccheck: skip --> needs a reason", file=sys.stderr)
                refused = True
        if a.list:
            for b in blocks:
                state = b.mark or "checked"
                print(f"{b.where()}\t{state}\t{b.steps[0][0].splitlines()[0]}")
            continue
        edits = []   # (start, end, new lines) of the file, in order
        tmp, env = make_folder(a.steptrace)   # one folder a file: a later block may read
        folders.append(tmp)                   # what an earlier one wrote
        for b in blocks:
            if b.mark is not None:
                skipped += 1
                continue
            if not steptrace_only(b):
                continue
            checked += 1
            results = [run_pty(cmd, tmp, env, a.timeout) for cmd, _, _ in b.steps]
            new_body = []
            block_ok = True
            for (cmd, src, exp), (got, err) in zip(b.steps, results):
                first = cmd.splitlines()[0]
                if err:
                    print(f"{b.where()}: $ {first}: {err}")
                    block_ok = False
                    bad += 1
                    new_body += src + exp
                    continue
                if fits(exp, got):
                    new_body += src + exp
                    continue
                block_ok = False
                i, e, g = first_difference(exp, got)
                merged = merge_elisions(exp, got)
                if a.update and merged is not None:
                    print(f"{b.where()}: $ {first}: updated")
                    new_body += src + merged
                    continue
                merged = by_counts(exp, got) if a.update else None
                if merged is not None:
                    print(f"{b.where()}: $ {first}: updated, its '...' kept by the lines around it "
                          f"(read it: the lines it keeps may not be the ones the text speaks of)")
                    new_body += src + merged
                    continue
                bad += 1
                print(f"{b.where()}: $ {first}: output differs at its line {i + 1}:\n"
                      f"  quoted:  {e}\n  printed: {g}")
                if a.update:
                    print(f"  (not updated: its '...' lines no longer fit the output)")
                new_body += src + exp
            if not block_ok and a.update:
                edits.append((b.start + 1, b.end, [b.indent + l if l else l for l in new_body]))
        if a.update and edits:
            for start, end, new in reversed(edits):
                lines[start:end] = new
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(lines))
    for tmp in folders:
        shutil.rmtree(tmp, ignore_errors=True)
    if refused:
        return 2
    if a.list:
        return 0
    print(f"doccheck: {checked} blocks checked, {skipped} marked gpu or skip, "
          f"{bad} commands {'not updated' if a.update else 'differ'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
