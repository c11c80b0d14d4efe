#!/usr/bin/env python3
"""edge_bundle.py OUT.stb EXPECTED: writes, from docs/FORMAT.md and the schema
alone, a bundle in which each rule of the kernel summary decides whether
some kernel counts, and writes to EXPECTED the names that must be listed
(measured steps, warm-up excluded), one a line.

Every kernel with a launching call runs, on the GPU, in another step (or
outside every step) than the one its call is in, so a reader that takes
the GPU start, or finds the wrong call, counts a different set. The rules
so decided: the launching call's start places a kernel; an instant shared
by two steps goes to the later; a kernel with correlation 0, or with an id
no call has, is placed by its GPU start; a repeated id keeps the earliest
call; work outside every step does not count. The encoding, so checked:
events out of time order (negative time deltas), one correlation chain
through kernel, memcpy, memset, api and sync records (negative deltas too),
restarting at 0 in the second chunk whose kernels were launched by calls of
the first, a first event whose t is not 0, an event of a kind this schema
does not have (its t still moves the time), a second string table whose ids
continue the first, names that need CSV quoting and that tie on total time.
"""
import io
import os
import random
import sys
import tarfile

import zstandard

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import read_bundle  # noqa: E402

pb = read_bundle.load_schema()
T = 7  # the host thread
CHAIN = {"kernel", "memcpy", "memset", "api", "sync"}

# Steps: 0 warm-up [1000, 2000], 1 [2000, 3000], 2 [3000, 4000]; GPU_OUT is after them all.
GPU_OUT = 9000

# (name, launch call start or None, extra call start for a repeated id, GPU start, durations, counts)
KERNELS = [
    ("tie_kernel(float*, int)", 2000, None, GPU_OUT, [11], True),        # shared instant: step 1
    ("tie_end_kernel", 3000, None, GPU_OUT, [13], True),                 # shared instant: step 2
    ("warm_launch_kernel", 1999, None, 2500, [17], False),               # launched in the warm-up
    ("early_kernel", 999, None, 1500, [31], False),                      # launched before every step
    ("dup_kernel", 2500, 1500, GPU_OUT, [37], False),                    # id repeated: earliest call,
    ("dup2_kernel", 2600, 1600, GPU_OUT, [39], False),                   #   first or last in the file
    ("Z_kernel", 2100, None, GPU_OUT, [41], True),                       # ties on total time:
    ("a_kernel", 2200, None, GPU_OUT, [41], True),                       #   name order, by bytes
    ("\u00fcber_kernel", 2300, None, GPU_OUT, [41], True),
    ('quote"kernel', 3500, None, 1200, [43, 47], True),                  # two instances
    ("odd_kernel", 2700, None, 1300, [50, 61, 52], True),                # three
    ("late_chunk_kernel", 3900, None, 4500, [71, 73], True),             # second chunk
]
UNLAUNCHED = [
    ("unlaunched_kernel", 0, 2000, 19, True),    # correlation 0: GPU start, shared instant -> step 1
    ("orphan_kernel", 777, 4000, 23, True),      # no call has 777: GPU start, step 2's end
    ("outside_kernel", 0, 4001, 29, False),      # after every step
    ("warm_gpu_kernel", 0, 1000, 5, False),      # at the warm-up's start
]


def build_events():
    """(chunk, start, dur, kind, fields) with absolute correlation ids, and
    the repeated ids: (id, whether its earliest call comes first in the file)."""
    evs, repeated = [], []
    corr = 1000
    for name, call, extra, gpu, durs, _ in KERNELS:
        chunk = 1 if name == "late_chunk_kernel" else 0
        for i, d in enumerate(durs):
            corr += 3
            evs.append((0, call + i, 2, "api", dict(name="cudaLaunchKernel", thread=T, correlation=corr)))
            if extra is not None:
                evs.append((0, extra, 2, "api", dict(name="cudaLaunchKernel", thread=T, correlation=corr)))
                repeated.append((corr, name == "dup_kernel"))
            evs.append((chunk, gpu + 10 * i, d, "kernel", dict(name=name, stream=1, correlation=corr)))
    for name, c, gpu, d, _ in UNLAUNCHED:
        evs.append((0, gpu, d, "kernel", dict(name=name, stream=2, correlation=c)))
    # Other members of the chain, with ids far from the kernels'.
    evs.append((0, 2050, 8, "memcpy", dict(copy_kind=1, bytes=4096, stream=1, correlation=5000)))
    evs.append((0, 2060, 8, "memset", dict(bytes=1024, stream=1, correlation=9)))
    evs.append((0, 2070, 8, "sync", dict(type=1, stream=1, thread=T, correlation=70000)))
    evs.append((1, 3950, 8, "sync", dict(type=1, stream=1, thread=T, correlation=3)))
    for i, (s, e, warm) in enumerate([(1000, 2000, True), (2000, 3000, False), (3000, 4000, False)]):
        evs.append((0, s, e - s, "step", dict(index=i, warmup=warm, thread=T)))
    return evs, repeated


def main():
    out, expected = sys.argv[1], sys.argv[2]
    rnd = random.Random(13)
    events, repeated = build_events()
    rnd.shuffle(events)                      # no time order inside a chunk
    for corr, earliest_first in repeated:
        i, j = [n for n, e in enumerate(events) if e[3] == "api" and e[4]["correlation"] == corr]
        if (events[i][1] < events[j][1]) != earliest_first:
            events[i], events[j] = events[j], events[i]

    strings, tables = {"": 0}, [[], []]

    def intern(s, chunk):
        if s not in strings:
            strings[s] = len(strings)
            tables[chunk].append(s)
        return strings[s]

    chunks = []
    for c in (0, 1):
        ch = pb["EventChunk"](index=c)
        mine = [e for e in events if e[0] == c]
        ch.base_ns = mine[0][1] - 7          # the first t is 7, not 0
        t, corr = ch.base_ns, 0
        for n, (_, start, dur, kind, fields) in enumerate(mine):
            m = ch.events.add(t=start - t, dur=dur)
            t = start
            sub = getattr(m, kind)
            for k, v in fields.items():
                if k == "name":
                    v = intern(v, c)
                elif k == "correlation":
                    v, corr = v - corr, v
                setattr(sub, k, v)
            if c == 0 and n == len(mine) // 2:
                # A kind from a later schema: field 99 of Event. Its t counts.
                m = ch.events.add(t=5000, dur=1)
                m.MergeFromString(b"\x98\x06\x01")   # tag (99 << 3 | 0), varint 1
                t += 5000
        chunks.append(ch)

    header = pb["Header"](format_major=1, format_minor=1, tool_version="edge_bundle.py",
                          time_base_ns=1 << 60, clock="synthetic")
    members = [("header.pb", header.SerializeToString())]
    first = 1
    for c in (0, 1):
        members.append(("strings-%06d.pb" % c,
                        pb["StringTable"](first_id=first, strings=tables[c]).SerializeToString()))
        first += len(tables[c])
        members.append(("events-%06d.pb" % c, chunks[c].SerializeToString()))
    footer = pb["Footer"](complete=True, events=len(events) + 1, chunks=2, strings=first - 1,
                          end_reason="ok")
    members.append(("footer.pb", footer.SerializeToString()))

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with open(out, "wb") as f:
        f.write(zstandard.ZstdCompressor(write_checksum=True).compress(raw.getvalue()))
    with open(expected, "w") as f:
        names = [k[0] for k in KERNELS if k[5]] + [k[0] for k in UNLAUNCHED if k[4]]
        f.write("".join(n + "\n" for n in sorted(names)))


if __name__ == "__main__":
    main()
