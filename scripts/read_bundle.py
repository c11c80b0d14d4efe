#!/usr/bin/env python3
"""read_bundle.py: a steptrace bundle as plain Python records, and steptrace's
kernel summary recomputed from them (the format: docs/FORMAT.md).

Needs protoc and two Debian packages, python3-protobuf and python3-zstandard.
The message classes are built from proto/steptrace.proto when a bundle is
opened (protoc --descriptor_set_out, then message_factory.GetMessages), so
nothing generated is kept; the bundle is decompressed as a stream and read
one tar member at a time.

    import read_bundle
    b = read_bundle.Bundle("run.stb")          # reads header.pb
    print(b.header["config"]["model"])
    for ev in b.events():                      # one dict per event, file order
        if ev["kind"] == "kernel":
            print(ev["start"], ev["end"], ev["kernel"]["name"])
    print(b.footer, b.truncated)               # known once events() has ended

An event is {"kind": "kernel", "start": ns, "end": ns, "dur": ns, "chunk": i,
"kernel": {...}}: times in ns since Header.time_base_ns, correlation ids
absolute, string ids replaced by their strings, enum values by their names
without the prefix, lower-case ("MEM_ACTIVATION" -> "activation"). Every
kind of the schema reads the same way, format 1.5's memory tags included
({"kind": "mem_tag", ..., "mem_tag": {"address", "size", "category",
"device"}}), and the footer has every field (1.5: "steps_from", how the
recorder found the steps).

Run(bundle) takes the events as steptrace's replay does (FORMAT.md section
6): sorted, launches linked, steps recorded or cut by the launch period of
a "whole run" bundle, ranges in a tree; memory(run, view) rebuilds a view's
peaks and the categories of its blocks.

    read_bundle.py summary [--include-warmup] [--by op] FILE   # = steptrace summary FILE --format csv
    read_bundle.py steps FILE                 # the steps as JSON, with the measured steps' mean
    read_bundle.py memory [--view driver] FILE   # peaks and the breakdown at the peak, JSON
    read_bundle.py events FILE                # one JSON object per event
"""
import argparse
import bisect
import io
import json
import math
import os
import subprocess
import sys
import tarfile
import tempfile

import zstandard
from google.protobuf import descriptor_pb2, message_factory

FORMAT_MAJOR = 1
DEFAULT_PROTO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "proto",
                             "steptrace.proto")

# Fields holding an id into the string table, per message.
STRING_IDS = {
    "Kernel": ("name",),
    "ApiCall": ("name",),
    "Range": ("name", "domain"),
    "Op": ("name", "path", "kind", "phase"),
}
# The kinds whose correlation field is a delta in the chunk's one chain.
CORRELATED = ("kernel", "memcpy", "memset", "api", "sync")
MAX_NS = 1 << 62
U64 = (1 << 64) - 1


class BundleError(Exception):
    """The file is not a bundle, or is damaged (not merely cut short), or the
    schema does not compile."""


def load_schema(proto=DEFAULT_PROTO):
    """Message classes by name ("Header", "EventChunk", ...), compiled from proto."""
    proto = os.path.abspath(proto)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "steptrace.desc")
        try:
            subprocess.run(["protoc", "-I", os.path.dirname(proto), "--descriptor_set_out=" + out,
                            os.path.basename(proto)], check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            raise BundleError("cannot compile the schema '%s' with protoc: %s" % (proto, e))
        with open(out, "rb") as f:
            files = descriptor_pb2.FileDescriptorSet.FromString(f.read()).file
    classes = message_factory.GetMessages(list(files))
    return {name.rsplit(".", 1)[-1]: cls for name, cls in classes.items()}


def enum_names(field):
    """Value -> name without its prefix, lower-case: MEM_ACTIVATION -> "activation"."""
    return {v.number: (v.name.split("_", 1)[1] if "_" in v.name else v.name).lower()
            for v in field.enum_type.values}


# How to convert each message type's fields, worked out once per type.
SCALAR, REPEATED, MESSAGE, MESSAGES, ENUM, ENUMS, STRING_ID = range(7)
_plans = {}


def plan_of(desc):
    plan = _plans.get(desc.full_name)
    if plan is None:
        plan = []
        for field in desc.fields:
            if field.containing_oneof is not None:
                continue  # only Event has a oneof; its reader picks the member
            repeated = field.label == field.LABEL_REPEATED
            if field.type == field.TYPE_MESSAGE:
                plan.append((field.name, MESSAGES if repeated else MESSAGE, None))
            elif field.type == field.TYPE_ENUM:
                plan.append((field.name, ENUMS if repeated else ENUM, enum_names(field)))
            elif field.name in STRING_IDS.get(desc.name, ()):
                plan.append((field.name, STRING_ID, None))
            else:
                plan.append((field.name, REPEATED if repeated else SCALAR, None))
        _plans[desc.full_name] = plan
    return plan


def to_dict(msg, strings=None):
    """Every field of msg, defaults included; string ids resolved through strings."""
    d = {}
    for name, how, names in plan_of(msg.DESCRIPTOR):
        value = getattr(msg, name)
        if how == SCALAR:
            pass
        elif how == STRING_ID:
            if strings is not None:
                if value >= len(strings):
                    raise BundleError("an event names an undefined string")
                value = strings[value]
        elif how == ENUM:
            value = names.get(value, value)   # unknown: a newer minor version
        elif how == MESSAGE:
            value = to_dict(value, strings)
        elif how == MESSAGES:
            value = [to_dict(m, strings) for m in value]
        elif how == ENUMS:
            value = [names.get(v, v) for v in value]
        else:
            value = list(value)
        d[name] = value
    return d


class Unzstd(io.RawIOBase):
    """A zstd file's decompressed bytes as a stream, frame after frame. A cut
    file ends quietly after its last whole block; damage raises ZstdError.
    (zstandard's own stream_reader drops decodable data before a cut.)"""

    def __init__(self, f, read_size=1 << 17):
        self.f, self.read_size = f, read_size
        self.z = zstandard.ZstdDecompressor().decompressobj()
        self.out, self.pos = b"", 0

    def readable(self):
        return True

    def readinto(self, b):
        while self.pos == len(self.out):
            data = self.f.read(self.read_size)
            if not data:
                return 0
            out = []
            while data:
                out.append(self.z.decompress(data))
                data = b""
                if self.z.eof:                   # a frame ended: the next may follow
                    data = self.z.unused_data
                    self.z = zstandard.ZstdDecompressor().decompressobj()
            self.out, self.pos = b"".join(out), 0
        n = min(len(b), len(self.out) - self.pos)
        b[:n] = self.out[self.pos:self.pos + n]
        self.pos += n
        return n


def tar_members(path):
    """(name, bytes) per member; stops quietly where the file is cut short.
    Returns through StopIteration.value why it ended early (None: it did not)."""
    with open(path, "rb") as f:
        name = None
        try:
            with tarfile.open(fileobj=io.BufferedReader(Unzstd(f)), mode="r|") as tar:
                for member in tar:
                    name = member.name
                    if not member.isfile():
                        raise BundleError("member '%s' is not a regular file" % name)
                    data = tar.extractfile(member).read()
                    yield name, data
                    name = None
        except zstandard.ZstdError as e:
            raise BundleError("zstd: %s" % e)
        except tarfile.ReadError as e:
            if name is None:
                raise BundleError("%s" % e)
            return "member '%s' is cut short" % name
    return None


class Bundle:
    """One bundle: the header on construction, then events() once."""

    def __init__(self, path, proto=DEFAULT_PROTO, schema=None):
        self.path = path
        self.pb = schema or load_schema(proto)
        self.strings = [""]          # id -> string; id 0 is ""
        self.footer = None
        self.truncated = False
        self.truncation = None       # why it ended early
        self.chunks = 0
        self.events_read = 0
        self._members = tar_members(path)
        try:
            name, data = next(self._members)
        except StopIteration as stop:
            raise BundleError("'%s' is not a steptrace bundle: %s" % (path, stop.value or "no members"))
        except BundleError as e:
            raise BundleError("'%s' is not a steptrace bundle: %s" % (path, e))
        if name != "header.pb":
            raise BundleError("'%s' is not a steptrace bundle: its first member is '%s'" % (path, name))
        header = self.pb["Header"].FromString(data)
        if header.format_major == 0 or header.format_major > FORMAT_MAJOR:
            raise BundleError("'%s' has format %d.%d; this reader reads %d.x and older" %
                              (path, header.format_major, header.format_minor, FORMAT_MAJOR))
        self.header = to_dict(header)

    def _cut(self, why):
        self.truncated = True
        self.truncation = why

    def events(self):
        """Yields every event in file order (not time order), deltas undone."""
        members = self._members
        while True:
            try:
                name, data = next(members)
            except StopIteration as stop:
                if stop.value:
                    self._cut(stop.value)
                elif self.footer is None:
                    self._cut("it has no footer: the recording did not finish")
                break
            except BundleError as e:
                raise BundleError("bundle '%s' is damaged: %s" % (self.path, e))
            if self.footer is not None:
                raise BundleError("bundle '%s' is damaged: member '%s' after the footer" %
                                  (self.path, name))
            if name.startswith("strings-"):
                table = self.pb["StringTable"].FromString(data)
                if table.first_id != len(self.strings):
                    raise BundleError("bundle '%s' is damaged: %s starts at string %d, expected %d" %
                                      (self.path, name, table.first_id, len(self.strings)))
                self.strings.extend(table.strings)
            elif name.startswith("events-"):
                chunk = self.pb["EventChunk"].FromString(data)
                if chunk.index != self.chunks:
                    raise BundleError("bundle '%s' is damaged: chunk %d is missing (found '%s')" %
                                      (self.path, self.chunks, name))
                yield from self._decode_chunk(chunk)
                self.chunks += 1
            elif name == "footer.pb":
                self.footer = to_dict(self.pb["Footer"].FromString(data))
                if self.footer["chunks"] != self.chunks or self.footer["strings"] != len(self.strings) - 1:
                    raise BundleError("bundle '%s' is damaged: its footer lists %d chunks and %d strings, "
                                      "the archive holds %d and %d" %
                                      (self.path, self.footer["chunks"], self.footer["strings"],
                                       self.chunks, len(self.strings) - 1))
            elif name == "header.pb":
                raise BundleError("bundle '%s' is damaged: a second header" % self.path)
            # other members come from a newer minor version: skipped

    def _decode_chunk(self, chunk):
        t = chunk.base_ns            # the first event's t is relative to this
        correlation = 0              # the chain restarts in every chunk
        for m in chunk.events:
            t += m.t                 # every event moves the time, known kind or not
            if not 0 <= t <= MAX_NS or m.dur > MAX_NS:
                raise BundleError("bundle '%s' is damaged: an event time is out of range" % self.path)
            kind = m.WhichOneof("kind")
            if kind is None:
                continue             # a kind from a newer minor version
            fields = to_dict(getattr(m, kind), self.strings)
            if kind in CORRELATED:
                correlation = (correlation + fields["correlation"]) & U64
                fields["correlation"] = correlation
            self.events_read += 1
            yield {"kind": kind, "start": t, "end": t + m.dur, "dur": m.dur, "chunk": chunk.index,
                   kind: fields}


# ---- the kernel summary (steptrace summary, by kernel) ----------------------

def dur_stats(durs):
    """Nsight's statistics as lib/stats.c computes them."""
    v = sorted(durs)
    n = len(v)
    total = sum(v)
    median = v[n // 2] if n % 2 else v[n // 2 - 1] + (v[n // 2] - v[n // 2 - 1]) / 2.0
    stddev = 0.0
    if n >= 2:  # sample standard deviation, exact until the square root
        stddev = math.sqrt((n * sum(x * x for x in v) - total * total) / (n * (n - 1)))
    return {"n": n, "total": total, "mean": total / n, "median": median,
            "min": v[0], "max": v[-1], "stddev": stddev}


def op_group(run, op_id):
    """summary --by op's row of a kernel: "phase/kind" of its op (the path when it has no kind)."""
    op = run.ops.get(op_id) if op_id else None
    if op is None:
        return "(no op)"
    kind = op["kind"] or op["path"]
    if not op["phase"] and not kind:
        return "(no op)"
    return "%s/%s" % (op["phase"], kind) if op["phase"] else kind


def kernel_summary(run, include_warmup=False, by="kernel"):
    """Rows of steptrace's kernel summary: (name, stats, percent), largest first."""
    groups = {}
    for a in run.acts:
        if a["kind"] != "kernel" or not run.counts(a["step"], include_warmup, modules=by == "op"):
            continue
        name = a["name"] if by == "kernel" else op_group(run, a["op"])
        groups.setdefault(name, []).append(a["end"] - a["start"])
    rows = [(name, dur_stats(d)) for name, d in groups.items()]
    grand = sum(s["total"] for _, s in rows)
    rows.sort(key=lambda r: (-r[1]["total"], r[0].encode()))
    return [(name, s, 100.0 * s["total"] / grand if grand else 0.0) for name, s in rows]


def step_stats(run):
    """steps' stats row of the measured steps: their number and mean wall time (ns)."""
    walls = [s["end"] - s["start"] for s in run.measured()]
    return {"N": len(walls), "mean": sum(walls) / len(walls) if walls else None}


# ---- the timeline as steptrace rebuilds it (docs/FORMAT.md, section 6) -----

PHASES = ("forward", "backward", "optimizer", "zero_grad", "data")   # then "other"
OTHER = len(PHASES)
CATEGORIES = ("unknown", "parameter", "gradient", "optimizer", "activation", "temporary",
              "workspace", "input")
COPY_NAMES = ("Unknown", "Host-to-Device", "Device-to-Host", "Host-to-Array", "Array-to-Host",
              "Array-to-Array", "Array-to-Device", "Device-to-Array", "Device-to-Device",
              "Host-to-Host", "Peer-to-Peer")
WHOLE_RUN = "whole run"
NONE = U64 + 1                   # "never freed"


def phase_of_name(name):
    return PHASES.index(name) if name in PHASES else -1


def phase_of_path(path):
    """The first '/'-separated component naming a phase, else OTHER."""
    for word in path.split("/"):
        if word in PHASES:
            return PHASES.index(word)
    return OTHER


def activity_name(kind, fields):
    if kind == "kernel":
        return fields["name"]
    if kind == "memset":
        return "[CUDA memset]"
    k = fields["copy_kind"]
    return "[CUDA memcpy %s]" % COPY_NAMES[k if isinstance(k, int) and 0 <= k < len(COPY_NAMES) else 0]


class Run:
    """One bundle's events as steptrace's replay takes them: sorted by start
    (stably: equal starts keep their file order), GPU activities linked to
    their launching calls (6.1), ops by id (first definition kept), the range
    tree (6.3), the steps (recorded, or re-cut by the launch period: 6.2)
    and each memory event's step, range and phase (6.5)."""

    def __init__(self, bundle):
        acts, apis, ranges, steps, mem = [], [], [], [], []
        self.ops = {}
        first = None
        for ev in bundle.events():
            kind = ev["kind"]
            if kind not in ("op", "cost", "step") and (first is None or ev["start"] < first):
                first = ev["start"]      # the origin of memory's times: steps are added below
            f = ev[kind]
            if kind in ("kernel", "memcpy", "memset"):
                acts.append({"kind": kind, "start": ev["start"], "end": ev["end"], "name": activity_name(kind, f),
                             "bytes": f.get("bytes", 0), "corr": f["correlation"], "op": f["op"]})
            elif kind == "api":
                apis.append({"start": ev["start"], "end": ev["end"], "thread": f["thread"],
                             "corr": f["correlation"]})
            elif kind == "range":
                ranges.append({"start": ev["start"], "end": ev["end"], "thread": f["thread"],
                               "depth": f["depth"], "name": f["name"]})
            elif kind == "step":
                steps.append({"start": ev["start"], "end": ev["end"], "warmup": f["warmup"],
                              "thread": f["thread"], "phases_only": f.get("phases_only", False)})
            elif kind in ("alloc", "free", "oom", "mem_tag"):
                mem.append(ev)
            elif kind == "op":
                self.ops.setdefault(f["id"], f)     # an id registered twice keeps its first definition
        # sorted stably by start: Python's sort is stable
        acts.sort(key=lambda a: a["start"])
        apis.sort(key=lambda a: a["start"])
        steps.sort(key=lambda s: s["start"])
        mem.sort(key=lambda e: e["start"])
        self.acts, self.apis, self.steps, self.mem = acts, apis, steps, mem
        # 6.1: a correlation id's call is the earliest to start (the first in the file on a tie)
        call = {}
        for i, a in enumerate(apis):
            if a["corr"]:
                call.setdefault(a["corr"], i)
        for a in acts:
            a["api"] = call.get(a["corr"], -1) if a["corr"] else -1
        self.steps_from = (bundle.footer or {}).get("steps_from", "")
        self.period = None
        if self.steps_from == WHOLE_RUN and len(steps) <= 1:
            self._period_steps()
        # memory's and replay's times count from the earliest event other than an op
        # registration or a cost record, among the steps as cut (not a "whole run" step)
        starts = [first] if first is not None else []
        starts += [s["start"] for s in self.steps]
        self.t0 = min(starts) if starts else 0
        self.build_ranges(ranges)
        # the main thread: the steps', else the thread with most ranges (the lowest id on a tie)
        if self.steps:
            self.main_thread = self.steps[0]["thread"]
        else:
            count = {}
            for r in self.ranges:
                count[r["thread"]] = count.get(r["thread"], 0) + 1
            self.main_thread = min(count, key=lambda t: (-count[t], t)) if count else 0
        self.step_starts = [s["start"] for s in self.steps]
        for a in acts:
            a["step"] = self.step_at(apis[a["api"]]["start"] if a["api"] >= 0 else a["start"])
        for e in mem:
            e["step"] = self.step_at(e["start"])
            e["range"] = self.range_at(self.main_thread, e["start"])
            e["phase"] = self.mem_phase(e)

    # -- steps --------------------------------------------------------------

    def step_at(self, t):
        """The last step starting at or before t, if it has not ended before t; else -1."""
        i = bisect.bisect_right(self.step_starts, t) - 1
        return i if i >= 0 and t <= self.steps[i]["end"] else -1

    def measured(self):
        return [s for s in self.steps if not s["warmup"]]

    def counts(self, step, include_warmup, modules=False):
        """Whether an activity of this step counts (6.2); modules: a report by op or range path."""
        if not self.steps or include_warmup:
            ok = True
        else:
            ok = step >= 0 and not self.steps[step]["warmup"]
        if ok and modules and any(s["phases_only"] for s in self.steps):
            ok = step >= 0 and not self.steps[step]["phases_only"]
        return ok

    def _period_steps(self):
        """A "whole run" bundle's steps re-cut by its launch period (FORMAT.md 6.2)."""
        apis, acts = self.apis, self.acts
        launched = [0] * len(apis)
        for a in acts:
            if a["api"] >= 0:
                launched[a["api"]] += 1
        per_thread = {}
        for i, c in enumerate(apis):
            per_thread[c["thread"]] = per_thread.get(c["thread"], 0) + launched[i]
        if not per_thread or max(per_thread.values()) == 0:
            return
        thread = min(per_thread, key=lambda t: (-per_thread[t], t))
        calls = [i for i, c in enumerate(apis) if c["thread"] == thread]
        by_call = {}
        for j, a in enumerate(acts):                  # a call's activities in GPU start order
            if a["api"] >= 0 and apis[a["api"]]["thread"] == thread:
                by_call.setdefault(a["api"], []).append(j)
        seq = [j for c in calls for j in by_call.get(c, ())]
        n = len(seq)

        def key(a):
            size_class = 0 if a["kind"] == "kernel" else a["bytes"].bit_length()
            return (a["kind"], a["name"], size_class)
        keys = [key(acts[j]) for j in seq]
        # the longest suffix that is at least 3 repetitions of its smallest period
        rev = keys[::-1]
        border = [0] * n
        for i in range(1, n):
            k = border[i - 1]
            while k > 0 and rev[i] != rev[k]:
                k = border[k - 1]
            border[i] = k + (rev[i] == rev[k])
        best_len = best_p = 0
        for length in range(1, n + 1):
            p = length - border[length - 1]
            if 3 * p <= length:
                best_len, best_p = length, p
        if not best_len or 2 * best_len < n:
            return
        start, p = n - best_len, best_p
        # the cut: the rotation whose positions follow the largest host gaps, summed
        score, bad = [0] * p, [False] * p
        for i in range(start, n):
            r = (i - start) % p
            c, prev = acts[seq[i]]["api"], acts[seq[i - 1]]["api"] if i else None
            if i and prev == c:
                bad[r] = True
            elif i and apis[c]["start"] > apis[prev]["end"]:
                score[r] += apis[c]["start"] - apis[prev]["end"]
        good = [r for r in range(p) if not bad[r]]
        if not good:
            return
        rot = max(good, key=lambda r: (score[r], -r))
        first = start + rot
        m = (n - first) // p
        call_start = lambda i: apis[acts[seq[i]]["api"]]["start"]
        steps = []
        for k in range(m):
            cut, nxt = first + k * p, first + (k + 1) * p
            s = {"start": call_start(cut), "warmup": k == 0, "thread": thread, "phases_only": False}
            if nxt < n:
                s["end"] = call_start(nxt)
                if k == m - 1 and s["end"] > s["start"]:
                    s["end"] -= 1
            else:
                gpu_end = max(acts[seq[i]]["end"] for i in range(cut, n))
                last = acts[seq[n - 1]]["api"]
                end = apis[last]["end"]
                for c in calls[calls.index(last):]:
                    if apis[c]["start"] > gpu_end:
                        break
                    end = max(end, apis[c]["end"])
                s["end"] = end
            steps.append(s)
        self.steps = steps
        self.period = p

    # -- ranges -------------------------------------------------------------

    def build_ranges(self, ranges):
        """Per thread, by start then recorded depth; a range's parent is the
        nearest earlier one of smaller depth that has not ended before it starts."""
        ranges.sort(key=lambda r: (r["thread"], r["start"], r["depth"]))
        self.ranges = ranges
        self.thread_ranges = {}
        stack = []
        for i, r in enumerate(ranges):
            if stack and ranges[stack[-1]]["thread"] != r["thread"]:
                stack = []
            while stack and (ranges[stack[-1]]["depth"] >= r["depth"] or ranges[stack[-1]]["end"] < r["start"]):
                stack.pop()
            r["parent"] = stack[-1] if stack else -1
            r["path"] = (ranges[r["parent"]]["path"] + "/" if stack else "") + r["name"]
            stack.append(i)
            self.thread_ranges.setdefault(r["thread"], []).append(i)
        self.thread_starts = {t: [ranges[i]["start"] for i in v] for t, v in self.thread_ranges.items()}

    def range_at(self, thread, t):
        """The innermost range of the thread covering instant t, -1 when none."""
        idx = self.thread_ranges.get(thread)
        if not idx:
            return -1
        k = bisect.bisect_right(self.thread_starts[thread], t) - 1
        r = idx[k] if k >= 0 else -1
        while r >= 0 and self.ranges[r]["end"] < t:
            r = self.ranges[r]["parent"]
        return r

    def phase_range(self, r):
        """The outermost range at or above r named like a phase, and that phase; (-1, OTHER) when none."""
        found, phase = -1, OTHER
        while r >= 0:
            p = phase_of_name(self.ranges[r]["name"])
            if p >= 0:
                found, phase = r, p
            r = self.ranges[r]["parent"]
        return found, phase

    def phase_ranges(self):
        """(phase, range) of every range named like a phase with no such range above it."""
        for i, r in enumerate(self.ranges):
            p = phase_of_name(r["name"])
            if p >= 0 and self.phase_range(i)[0] == i:
                yield p, r

    def mem_phase(self, e):
        f = e[e["kind"]]
        op = self.ops.get(f["op"]) if f.get("op") else None
        if op is not None and phase_of_name(op["phase"]) >= 0:
            return phase_of_name(op["phase"])
        return phase_of_path(self.ranges[e["range"]]["path"]) if e["range"] >= 0 else OTHER


# ---- steptrace memory: one view's peaks and the breakdown at the peak -------

class Peak:
    def __init__(self):
        self.bytes, self.t, self.point = 0, 0, -1

    def offer(self, live, t, point):
        if self.point < 0 or live > self.bytes:
            self.bytes, self.t, self.point = live, t, point

    def offer_carried(self, live, start, before):
        """What was live when a span began, if nothing reached more within it (the earliest wins a tie)."""
        if live == 0 or (self.point >= 0 and (live < self.bytes or (live == self.bytes and start >= self.t))):
            return
        self.bytes, self.t, self.point = live, start, before


def memory(run, view):
    """One view ("model" or "driver") of FORMAT.md 6.5: {"overall": Peak,
    "phase P": Peak, "step N": Peak, "outside steps": Peak}, the category
    breakdown at the overall peak {category: bytes}, and the blocks."""
    def in_view(e):
        if e["kind"] == "oom":
            return view == "model"
        if e["kind"] == "mem_tag":
            return view == "driver"
        return e[e["kind"]]["source"] == view
    events = [e for e in run.mem if in_view(e)]
    tagged = any(e["kind"] == "mem_tag" for e in events)
    live_at = {}                 # (device, address) -> block
    blocks, points = [], []      # points: (t, live after, block or -1, delta)
    live = 0
    peaks = {"overall": Peak(), "outside steps": Peak()}
    phase_peaks = [Peak() for _ in range(OTHER + 1)]
    step_peaks = [Peak() for _ in run.steps]
    for e in events:
        kind, f = e["kind"], e[e["kind"]]
        if kind == "mem_tag":
            b = live_at.get((f["device"], f["address"]))
            cat = f["category"]
            if b is not None and b["size"] == f["size"] and cat in CATEGORIES and cat != "unknown":
                b["category"], b["tagged"] = cat, True
            continue
        block, delta = -1, 0
        if kind == "alloc":
            cat = f["category"] if f["category"] in CATEGORIES else "unknown"
            b = {"size": f["size"], "category": cat, "tagged": False, "phase": e["phase"], "mem": e,
                 "freed": NONE, "point": len(points)}
            block = len(blocks)
            blocks.append(b)
            live_at[(f["device"], f["address"])] = b     # an older block at the address stays live
            live += f["size"]
            delta = f["size"]
        elif kind == "free":
            b = live_at.pop((f["device"], f["address"]), None)
            if b is not None:
                b["freed"] = e["start"]
                b["free_point"] = len(points)
                live -= b["size"]
                block, delta = b["point"], -b["size"]
        points.append((e["start"], live, block, delta))
        if kind == "alloc":
            i = len(points) - 1
            peaks["overall"].offer(live, e["start"], i)
            phase_peaks[e["phase"]].offer(live, e["start"], i)
            (step_peaks[e["step"]] if e["step"] >= 0 else peaks["outside steps"]).offer(live, e["start"], i)
    times = [p[0] for p in points]

    def carried(peak, start, end):
        if start > end or start == 0:
            return
        before = bisect.bisect_right(times, start - 1) - 1
        if before >= 0:
            peak.offer_carried(points[before][1], start, before)
    for k, s in enumerate(run.steps):
        carried(step_peaks[k], s["start"], s["end"])
    for p, r in run.phase_ranges():
        carried(phase_peaks[p], r["start"], r["end"])
    if tagged:   # categories of untagged driver blocks (6.5)
        for b in blocks:
            if b["tagged"] or b["category"] != "unknown" or b["phase"] == OTHER:
                continue
            b["category"] = "temporary"
            if b["mem"]["step"] >= 0 and b["freed"] == NONE:
                b["category"] = "workspace"
            elif b["phase"] == PHASES.index("forward"):
                fwd, p = run.phase_range(b["mem"]["range"])
                if fwd >= 0 and p == PHASES.index("forward") and b["freed"] > run.ranges[fwd]["end"]:
                    b["category"] = "activation"
    for p, peak in enumerate(phase_peaks):
        peaks["phase " + (PHASES[p] if p < OTHER else "other")] = peak
    for k, peak in enumerate(step_peaks):
        peaks["step %d" % k] = peak
    at_peak = {}
    top = peaks["overall"].point
    if top >= 0:
        for b in blocks:
            if b["point"] <= top and b.get("free_point", len(points)) > top:
                at_peak[b["category"]] = at_peak.get(b["category"], 0) + b["size"]
    return {k: v for k, v in peaks.items() if v.point >= 0}, at_peak, blocks


COLUMNS = ("Time (%)", "Total Time (ns)", "Instances", "Avg (ns)", "Med (ns)", "Min (ns)",
           "Max (ns)", "StdDev (ns)", "Name")


def csv_field(s):
    if not any(c in s for c in ',"\r\n'):
        return s
    return '"' + s.replace('"', '""') + '"'


def print_summary(rows, out=sys.stdout):
    out.write(",".join(csv_field(c) for c in COLUMNS) + "\n")
    for name, s, pct in rows:
        cells = ("%.1f" % pct, "%d" % s["total"], "%d" % s["n"], "%.1f" % s["mean"],
                 "%.1f" % s["median"], "%d" % s["min"], "%d" % s["max"], "%.1f" % s["stddev"],
                 csv_field(name))
        out.write(",".join(cells) + "\n")
    if not rows:
        out.write("\n# no GPU work\n")


def warn_truncated(b):
    if b.truncated:
        print("warning: '%s' is truncated (%s): read %d chunks, %d events; results cover only that part"
              % (b.path, b.truncation, b.chunks, b.events_read), file=sys.stderr)


def memory_report(run, view):
    """memory's peaks and at_peak for one view, as JSON-ready dicts."""
    peaks, at_peak, _ = memory(run, view)
    return {"view": view,
            "peaks": {k: {"bytes": v.bytes, "time_ms": (v.t - run.t0) / 1e6} for k, v in peaks.items()},
            "at_peak": {c: at_peak[c] for c in CATEGORIES if at_peak.get(c)}}


def main(argv=None):
    p = argparse.ArgumentParser(description="Read a steptrace bundle (docs/FORMAT.md).")
    p.add_argument("--proto", default=DEFAULT_PROTO, help="the schema (default: %(default)s)")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("summary", help="the kernel summary, as steptrace summary --format csv")
    s.add_argument("--include-warmup", action="store_true",
                   help="count warm-up steps and work outside steps")
    s.add_argument("--by", choices=("kernel", "op"), default="kernel", help="group by kernel name or op")
    s.add_argument("file")
    t = sub.add_parser("steps", help="the steps (recorded, or cut by the launch period) as JSON")
    t.add_argument("file")
    m = sub.add_parser("memory", help="one view's peaks and the breakdown at its peak, as JSON")
    m.add_argument("--view", choices=("model", "driver"), default="model")
    m.add_argument("file")
    e = sub.add_parser("events", help="every event as one JSON object per line, file order")
    e.add_argument("file")
    args = p.parse_args(argv)
    try:
        b = Bundle(args.file, args.proto)
        if args.cmd == "events":
            for ev in b.events():
                sys.stdout.write(json.dumps(ev, ensure_ascii=False) + "\n")
            warn_truncated(b)
            return 0
        run = Run(b)
        warn_truncated(b)
        if args.cmd == "summary":
            print_summary(kernel_summary(run, args.include_warmup, args.by))
        elif args.cmd == "steps":
            json.dump({"steps": run.steps, "period": run.period, "measured": step_stats(run)}, sys.stdout)
            print()
        else:
            json.dump(memory_report(run, args.view), sys.stdout)
            print()
    except BrokenPipeError:
        return 0
    except BundleError as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    except OSError as e:
        print("error: cannot read bundle '%s': %s" % (args.file, e.strerror or e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
