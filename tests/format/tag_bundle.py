#!/usr/bin/env python3
"""tag_bundle.py OUT.stb EXPECTED.json: writes, from docs/FORMAT.md and the
schema alone, a format 1.5 bundle with what `steptrace record -- COMMAND`
adds for a PyTorch program: driver-level allocations, MemTag events and
the footer's steps_from; writes to EXPECTED.json what a reader must decode
and what section 6.5's rules make of it.

One step [1000, 2000] on thread 7, ranges step > forward [1100, 1500] and
backward [1500, 1900]; op 1 is the forward's, op 2 the backward's. Driver
blocks (ns, bytes, live after):
    500 P 0x100 1000 (no op)   1000  tagged parameter at 600
   1200 A 0x200 300 op 1       1300  activation: freed at 1600, after the forward
   1250 tag 0x250 10                 ignored: inside A
   1300 T 0x300 50 op 1        1350  temporary: freed at 1400, within the forward
   1550 G 0x400 200 op 2       1500  the peak; tagged gradient at 1700
"""
import io
import json
import os
import sys
import tarfile

import zstandard

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import read_bundle  # noqa: E402

pb = read_bundle.load_schema()
T = 7
STEPS_FROM = "NVTX range 'step'"
DRIVER = 1   # Alloc.source SRC_DRIVER
PARAMETER, GRADIENT = 1, 2   # MemCategory

EVENTS = [  # (start, dur, kind, fields); names and paths are strings
    (0, 0, "op", dict(id=1, name="mm", path="step/forward/mm", kind="matmul/aten::mm", phase="forward")),
    (0, 0, "op", dict(id=2, name="mm", path="step/backward/mm", kind="matmul/aten::mm", phase="backward")),
    (500, 0, "alloc", dict(address=0x100, size=1000, source=DRIVER)),
    (600, 0, "mem_tag", dict(address=0x100, size=1000, category=PARAMETER)),
    (1000, 1000, "range", dict(name="step", thread=T, depth=0)),
    (1100, 400, "range", dict(name="forward", thread=T, depth=1)),
    (1200, 0, "alloc", dict(address=0x200, size=300, op=1, source=DRIVER)),
    (1250, 0, "mem_tag", dict(address=0x250, size=10, category=PARAMETER)),
    (1300, 0, "alloc", dict(address=0x300, size=50, op=1, source=DRIVER)),
    (1400, 0, "free", dict(address=0x300, op=1, source=DRIVER)),
    (1500, 400, "range", dict(name="backward", thread=T, depth=1)),
    (1550, 0, "alloc", dict(address=0x400, size=200, op=2, source=DRIVER)),
    (1600, 0, "free", dict(address=0x200, op=2, source=DRIVER)),
    (1700, 0, "mem_tag", dict(address=0x400, size=200, category=GRADIENT)),
    (1000, 1000, "step", dict(index=0, warmup=False, thread=T)),
]
STRING_FIELDS = ("name", "path", "kind", "phase")


def main():
    out, expected = sys.argv[1], sys.argv[2]
    strings = [""]
    chunk = pb["EventChunk"](index=0, base_ns=0)
    t = 0
    for start, dur, kind, fields in EVENTS:
        m = chunk.events.add(t=start - t, dur=dur)
        t = start
        sub = getattr(m, kind)
        for k, v in fields.items():
            if k in STRING_FIELDS:
                if v not in strings:
                    strings.append(v)
                v = strings.index(v)
            setattr(sub, k, v)
    header = pb["Header"](format_major=1, format_minor=5, tool_version="tag_bundle.py",
                          time_base_ns=1 << 40, clock="synthetic")
    footer = pb["Footer"](complete=True, events=len(EVENTS), chunks=1, strings=len(strings) - 1,
                          end_reason="ok", steps_from=STEPS_FROM)
    members = [("header.pb", header.SerializeToString()),
               ("strings-000000.pb", pb["StringTable"](first_id=1, strings=strings[1:]).SerializeToString()),
               ("events-000000.pb", chunk.SerializeToString()),
               ("footer.pb", footer.SerializeToString())]
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with open(out, "wb") as f:
        f.write(zstandard.ZstdCompressor(write_checksum=True).compress(raw.getvalue()))
    names = {PARAMETER: "parameter", GRADIENT: "gradient"}
    with open(expected, "w") as f:
        json.dump({
            "steps_from": STEPS_FROM,
            "tags": [{"start": s, "address": e["address"], "size": e["size"], "category": names[e["category"]],
                      "device": 0} for s, _, k, e in EVENTS if k == "mem_tag"],
            "ignored": [1250],
            "peak": 1500,
            "at_peak": {"parameter": 1000, "activation": 300, "gradient": 200},
            "blocks": {"0x100": "parameter", "0x200": "activation", "0x300": "temporary", "0x400": "gradient"},
        }, f)


if __name__ == "__main__":
    main()
