#!/usr/bin/env python3
"""
layers.py SOURCE_DIR [LAYERS_FILE]: keeps steptrace's includes pointing down
(CTest layout.layers). Fails, naming each file and line, when

  1. a file of a source folder includes a header of a folder its line in
     tests/layout/layers.txt does not reach (one above it, or a sibling);
  2. a generated protobuf header (*.pb-c.h) is included where the
     "protobuf" line of layers.txt does not allow it;
  3. files of one folder depend on each other in a circle: A includes a
     header whose functions live in B, and B (directly or through others of
     the folder) includes one whose functions live in A. A header's files
     are the source file of its stem (x.h: x.c or x.cu) and every source
     file of its folder that defines a function or variable it declares, so
     a header shared by several files ties its includers to each of them.
     Circles judged fine are in ALLOWED below, each with its reason; a
     circle that grows or shrinks no longer matches and fails again;
  4. a folder with C or CUDA sources is not in layers.txt (tests/ and
     scripts/ are exempt; in a git checkout the files are git's, tracked or
     not, less those it ignores, so build trees are left out; elsewhere a
     build tree is found by its CMakeCache.txt).

Only #include "..." lines count (and <folder/...> naming a source folder);
a bare "name.h" is the file's own folder's, or a generated header.
"""
import os
import re
import subprocess
import sys

EXEMPT = {"tests", "scripts"}
SOURCE_EXT = (".c", ".cu", ".cpp")
HEADER_EXT = (".h", ".cuh")

# Circles inside one folder that stay, each with why: frozenset of
# "folder/stem" (a stem is x for x.c and x.h together).
ALLOWED = {
    frozenset({"replay/replay", "replay/project", "replay/period", "replay/run", "replay/sort"}):
        "replay's builder: replay.c's replay_load calls project.c, run.c and sort.c to finish the replay, "
        "and they fill it through replay.h and internal.h, which replay.c implements; breaking it would "
        "move replay_load out of replay.h, which every folder above includes",
    frozenset({"model/model", "model/alloc", "model/ddp", "model/pass", "model/plan"}):
        "the model's training step: model.c runs the passes, the DDP hooks and the memory plan of "
        "pass.c, ddp.c and plan.c (model/internal.h), which allocate through alloc.h on model.h's model",
    frozenset({"record/device", "record/datasheet"}):
        "one device's facts (record/device.h): datasheet.c is the part that needs no CUDA runtime "
        "(driver version, datasheet peaks), shared with the injection library; device.c the rest",
    frozenset({"record/capture", "record/activity"}):
        "CUPTI capture: the callbacks (capture.c) and the activity buffers (activity.c) share "
        "capture_internal.h's state, each calling the other's locked helpers",
    frozenset({"record/nvtx", "record/torch", "record/compiled"}):
        "NVTX ranges and PyTorch's mode share nvtx_internal.h's per-thread range stacks: nvtx.c drops "
        "torch.c's frames when a range closes under them; compiled.c places a compiled region's "
        "kernels on the modules beside its frame, which torch.c marks when it pushes one",
}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def read_layers(path):
    """{folder: [what it names]}, in file order, and the protobuf line."""
    below, protobuf = {}, []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            if ":" not in line:
                sys.exit(f"{path}:{n}: expected 'folder : what it may include'")
            name, rest = (s.strip() for s in line.split(":", 1))
            if name == "protobuf":
                protobuf = rest.split()
            else:
                below[name] = rest.split()
    for name, entries in below.items():
        for e in entries:
            if e.split("/")[0] not in below:
                sys.exit(f"{path}: {name} names {e}, whose folder is not in the list")
    return below, protobuf


def reach(below):
    """{folder: (folders it may include, single headers it may include)}: the closure downward."""
    out = {}
    for name in below:
        folders, headers, todo = set(), set(), list(below[name])
        while todo:
            e = todo.pop()
            if "/" in e:
                headers.add(e)
            elif e not in folders:
                folders.add(e)
                todo.extend(below[e])
        out[name] = (folders, headers)
    return out


def is_build_tree(path):
    return os.path.exists(os.path.join(path, "CMakeCache.txt"))


def source_files(root):
    """
    Every C/CUDA file under root's top-level folders, as paths relative to
    root: git's tracked and untracked files (not those it ignores, such as
    build trees) in a checkout, else every file but those under a build tree.
    """
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, check=True).stdout.decode("utf-8", "replace")
        listed = [f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        listed = None
    if listed is None:
        listed = []
        for top in sorted(os.listdir(root)):
            full = os.path.join(root, top)
            if not os.path.isdir(full) or is_build_tree(full):
                continue
            for d, dirs, names in os.walk(full):
                dirs[:] = sorted(x for x in dirs if not is_build_tree(os.path.join(d, x)))
                listed += [os.path.relpath(os.path.join(d, n), root) for n in names]
    files = []
    for f in sorted(set(listed)):
        parts = f.split("/")
        if (len(parts) < 2 or parts[0] in EXEMPT or any(p.startswith(".") for p in parts)
                or not f.endswith(SOURCE_EXT + HEADER_EXT) or not os.path.isfile(os.path.join(root, f))):
            continue
        files.append(f)
    return files


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def declared(text):
    """Names a header declares: functions (name followed by '(') and extern variables."""
    text = strip_comments(text)
    text = re.sub(r"^\s*#(?:[^\n]*\\\n)*[^\n]*", "", text, flags=re.M)   # macros
    text = re.sub(r"static\s+inline[^{;]*\{.*?\n\}", "", text, flags=re.S)   # defined here
    names = set()
    for stmt in text.split(";"):
        stmt = stmt.strip()
        if not stmt or stmt.startswith(("typedef", "struct", "enum", "union")) and "{" in stmt:
            continue
        m = re.match(r"(?:extern\s+)?[A-Za-z_][\w\s\*]*?\b([A-Za-z_]\w*)\s*\(", stmt)
        if m and "(*" not in stmt.split("(")[0]:
            names.add(m.group(1))
        m = re.match(r"extern\s+[^()]*?\b([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*$", stmt)
        if m:
            names.add(m.group(1))
    return names


def defined(text):
    """Non-static functions and variables a source file defines at file scope (column 0)."""
    text = strip_comments(text)
    names = set()
    for m in re.finditer(r"^(?!static\b|extern\b|typedef\b|#)[A-Za-z_][^;{}()=]*?\b([A-Za-z_]\w*)\s*\(([^;{]*)\)\s*\{",
                         text, flags=re.M):
        names.add(m.group(1))
    for m in re.finditer(r"^(?!static\b|extern\b|typedef\b|#|struct\b|enum\b|union\b)[A-Za-z_][^;{}()=]*?"
                         r"\b([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*=", text, flags=re.M):
        names.add(m.group(1))
    return names


def folder_of(path):
    return path.split("/", 1)[0]


def stem_of(path):
    return os.path.splitext(path)[0]


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: layers.py SOURCE_DIR [LAYERS_FILE]")
    root = sys.argv[1]
    layers_file = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "tests", "layout", "layers.txt")
    below, protobuf = read_layers(layers_file)
    may = reach(below)
    rel_layers = os.path.relpath(layers_file, root)
    files = source_files(root)
    texts = {}
    for f in files:
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            texts[f] = fh.read()
    present = set(files)
    problems = []

    # 4: every source folder is placed
    for top in sorted({folder_of(f) for f in files}):
        if top not in below:
            problems.append(f"{top}/: a folder of C or CUDA sources that {rel_layers} does not place: "
                            f"add its line (what it may include)")

    # 1, 2: each include against the layers; the includes within a folder, for 3
    inner = {}   # file -> [header of its own folder]
    for f in files:
        folder = folder_of(f)
        if folder not in below:
            continue
        folders, headers = may[folder]
        inner[f] = []
        for n, line in enumerate(texts[f].split("\n"), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            quote, inc = m.groups()
            where = f"{f}:{n}: #include {quote}{inc}{'>' if quote == '<' else chr(34)}"
            if inc.endswith(".pb-c.h"):
                if folder not in protobuf and f not in protobuf:
                    problems.append(f"{where}: a generated protobuf header, which only "
                                    f"{', '.join(protobuf)} may include ({rel_layers}, 'protobuf')")
                continue
            if "/" not in inc:
                if quote == '"' and os.path.join(os.path.dirname(f), inc) in present:
                    inner[f].append(os.path.join(os.path.dirname(f), inc))
                continue   # a system header, or one of the file's own folder
            target = folder_of(inc)
            if target not in below:
                if quote == '"':
                    problems.append(f"{where}: {target}/ is no source folder of {rel_layers}")
                continue
            if target == folder:
                if inc in present:
                    inner[f].append(inc)
                else:
                    problems.append(f"{where}: no such file")
                continue
            if target in folders or inc in headers:
                continue
            allowed = sorted(folders) + sorted(headers)
            problems.append(f"{where}: {folder}/ may include only its own folder and "
                            f"{', '.join(allowed) if allowed else 'nothing else'} ({rel_layers}): "
                            f"{target}/ is not below it")

    # 3: circles inside a folder
    edges, why = unit_edges(files, texts, inner)
    for scc in strongly_connected(edges):
        if len(scc) < 2:
            continue
        key = frozenset(scc)
        if key in ALLOWED:
            continue
        ring = sorted(scc)
        ties = [f"{a} -> {b}: {why[(a, b)]}" for a in ring for b in sorted(edges[a] & key)]
        problems.append(f"a circle in {folder_of(ring[0])}/: {', '.join(ring)}\n    " + "\n    ".join(ties) +
                        f"\n    split the shared part out, or add the circle to ALLOWED in "
                        f"tests/layout/layers.py with its reason")

    if problems:
        for p in problems:
            print(p)
        print(f"layout.layers: {len(problems)} problem(s) in {len(files)} files; the layers are {rel_layers}")
        return 1
    print(f"layout.layers: {len(files)} files of {len(below)} folders include only downward; "
          f"no circle inside a folder but the {len(ALLOWED)} allowed")
    return 0


def unit_edges(files, texts, inner):
    """
    The units of each folder (a stem: x.c and x.h together) and what each
    depends on: {unit: {unit}} and, per edge, why. A depends on B when a
    file of A includes B's header (x.h of a source x.c or x.cu), directly or
    through headers of the folder that have no source of their own
    (internal.h, commands.h); or when A uses a function or variable that a
    source of B defines and a header A includes (at any depth) declares.
    """
    present = set(files)
    sources = {stem_of(f) for f in files if f.endswith(SOURCE_EXT)}
    defines, tokens, decls = {}, {}, {}
    for f in files:
        code = re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', strip_comments(texts[f]))
        words = set(re.findall(r"[A-Za-z_]\w*", code))
        if f.endswith(SOURCE_EXT):
            defines.setdefault(stem_of(f), set()).update(defined(texts[f]))
        else:
            decls[f] = declared(texts[f])
            words -= decls[f]   # a header's own declarations are no use of them
        tokens.setdefault(stem_of(f), set()).update(words)
    owner = {}
    for unit, names in defines.items():
        for name in names:
            owner.setdefault((folder_of(unit), name), set()).add(unit)

    def reached(start, through_all):
        seen, todo = set(), list(start)
        while todo:
            h = todo.pop()
            if h in seen or h not in present:
                continue
            seen.add(h)
            if through_all or stem_of(h) not in sources:
                todo.extend(inner.get(h, ()))
        return seen

    edges, why = {}, {}
    for f, incs in inner.items():
        a = stem_of(f)
        edges.setdefault(a, set())
        for h in reached(incs, False):
            b = stem_of(h)
            if b != a and b in sources:
                edges[a].add(b)
                why.setdefault((a, b), f"{f} includes {h}")
        used = tokens[a] - defines.get(a, set())
        for h in reached(incs, True):
            for name in sorted(decls.get(h, set()) & used):
                for b in sorted(owner.get((folder_of(a), name), set()) - {a}):
                    edges[a].add(b)
                    why.setdefault((a, b), f"{f} uses {name} ({h}), defined in {b}")
    for a in list(edges):
        for b in edges[a]:
            edges.setdefault(b, set())
    return edges, why


def strongly_connected(edges):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                scc = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    scc.append(w)
                    if w == v:
                        break
                out.append(scc)
    return out


if __name__ == "__main__":
    sys.exit(main())
