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

    read_bundle.py summary [--include-warmup] FILE   # = steptrace summary FILE --format csv
    read_bundle.py events FILE                        # one JSON object per event
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


def kernel_summary(bundle, include_warmup=False):
    """Rows of steptrace's kernel summary: (name, stats, percent), largest first."""
    kernels, steps, launch = [], [], {}
    for ev in bundle.events():
        kind = ev["kind"]
        if kind == "kernel":
            k = ev["kernel"]
            kernels.append((ev["start"], ev["end"], k["correlation"], k["name"]))
        elif kind == "api":
            c = ev["api"]["correlation"]
            if c and (c not in launch or ev["start"] < launch[c]):
                launch[c] = ev["start"]      # a repeated id keeps the earliest call
        elif kind == "step":
            steps.append((ev["start"], ev["end"], ev["step"]["warmup"]))
    steps.sort(key=lambda s: s[0])
    starts = [s[0] for s in steps]

    def counts(t):
        """Whether work launched (or, unlaunched, started) at t is in the summary."""
        if not steps or include_warmup:
            return True
        i = bisect.bisect_right(starts, t) - 1   # the latest step starting at or before t
        return i >= 0 and t <= steps[i][1] and not steps[i][2]

    groups = {}
    for start, end, corr, name in kernels:
        t = launch.get(corr, start) if corr else start
        if counts(t):
            groups.setdefault(name, []).append(end - start)
    rows = [(name, dur_stats(d)) for name, d in groups.items()]
    grand = sum(s["total"] for _, s in rows)
    rows.sort(key=lambda r: (-r[1]["total"], r[0].encode()))
    return [(name, s, 100.0 * s["total"] / grand if grand else 0.0) for name, s in rows]


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


def main(argv=None):
    p = argparse.ArgumentParser(description="Read a steptrace bundle (docs/FORMAT.md).")
    p.add_argument("--proto", default=DEFAULT_PROTO, help="the schema (default: %(default)s)")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("summary", help="the kernel summary, as steptrace summary --format csv")
    s.add_argument("--include-warmup", action="store_true",
                   help="count warm-up steps and work outside steps")
    s.add_argument("file")
    e = sub.add_parser("events", help="every event as one JSON object per line, file order")
    e.add_argument("file")
    args = p.parse_args(argv)
    try:
        b = Bundle(args.file, args.proto)
        if args.cmd == "summary":
            rows = kernel_summary(b, args.include_warmup)
            warn_truncated(b)
            print_summary(rows)
        else:
            for ev in b.events():
                sys.stdout.write(json.dumps(ev, ensure_ascii=False) + "\n")
            warn_truncated(b)
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
