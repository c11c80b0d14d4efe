#!/usr/bin/env python3
"""hta_fields.py STEPTRACE DIR BUNDLE...: the files `steptrace export
--per-rank DIR BUNDLE...` wrote have what Holistic Trace Analysis's loader
reads (github.com/facebookresearch/HolisticTraceAnalysis, read at commit
f4d0062; HTA itself is not here: scripts/hta_check.py runs it). Each rule
names the HTA code it comes from:

  hta/common/trace_file.py, create_rank_to_trace_dict_from_dir: the folder's
    files ending .json or .gz; create_rank_to_trace_dict: a file's rank is
    the first line matching '"rank":\\s+(\\d+)' (a space after the colon),
    one file per rank
  hta/common/trace_parser.py, parse_metadata_ijson / infer_gpu_type: the
    keys before traceEvents: distributedInfo {rank, world_size},
    deviceProperties (a list of maps), baseTimeNanoseconds (hta/common/
    trace.py, trace_event_timestamp_to_unixtime_ns)
  trace_parser.py, _compress_df: events without dur or cat are dropped;
    normalize_gpu_stream_numbers (hta/utils/utils.py): args.stream, -1 where
    absent: GPU work has a stream >= 0, host events none
  hta/configs/default_event_args.py: args "correlation" (correlation::cpu_gpu)
    and "cbid"; hta/common/trace.py, transform_correlation_to_index: a GPU
    event's correlation joins one host event's (no 0 or shared ids)
  hta/common/types.py: GPU categories (KERNEL_CATEGORY_PATTERN: kernel,
    gpu_mem...), runtime (DEVICE_RUNTIME_CATEGORY_PATTERN: cuda_runtime),
    CPU (CPU_OP_CATEGORY_PATTERN: user_annotation); kernel types by name
    (MemoryKernelGroupingPattern: ^Memcpy, ^Memset; CommunicateKernel...:
    ^nccl); trace.py, add_iteration: steps named 'ProfilerStep#N'

and that the GPU work is the bundle's: kernels, copies and memsets as
`steptrace summary --include-warmup --all` counts them. Prints one line,
or the first problem and exits 1. Standard library only.
"""
import json
import os
import re
import subprocess
import sys

GPU = {'kernel', 'gpu_memcpy', 'gpu_memset'}
HOST = {'cuda_runtime', 'cuda_driver', 'user_annotation'}


def fail(msg):
    print('hta_fields: ' + msg)
    sys.exit(1)


def main():
    st, d, bundles = sys.argv[1], sys.argv[2], sys.argv[3:]
    files = sorted(f for f in os.listdir(d) if f.endswith('.json') or f.endswith('.gz'))
    rank_re = re.compile(r'"rank":\s+(\d+)')
    ranks = {}
    for f in files:
        with open(os.path.join(d, f)) as fh:
            m = next((rank_re.search(line) for line in fh if rank_re.search(line)), None)
        if not m:
            fail('%s: no line matches HTA\'s rank pattern' % f)
        if int(m.group(1)) in ranks:
            fail('%s and %s both say rank %s' % (ranks[int(m.group(1))], f, m.group(1)))
        ranks[int(m.group(1))] = f
    if sorted(ranks) != list(range(len(bundles))):
        fail('ranks %s in %s, expected %s' % (sorted(ranks), files, list(range(len(bundles)))))
    total = {c: 0 for c in GPU}
    for r, b in enumerate(bundles):
        with open(os.path.join(d, ranks[r])) as fh:
            t = json.load(fh)
        di = t.get('distributedInfo', {})
        if di.get('rank') != r or di.get('world_size') != len(bundles):
            fail('%s: distributedInfo %r' % (ranks[r], di))
        if not isinstance(t.get('deviceProperties'), list) or not all(isinstance(p, dict) for p in t['deviceProperties']):
            fail('%s: deviceProperties %r' % (ranks[r], t.get('deviceProperties')))
        if not isinstance(t.get('baseTimeNanoseconds'), int):
            fail('%s: baseTimeNanoseconds %r' % (ranks[r], t.get('baseTimeNanoseconds')))
        host_corr, gpu_corr, count, steps = {}, [], {c: 0 for c in GPU}, 0
        for e in t['traceEvents']:
            if e.get('ph') != 'X':
                continue
            cat, args = e.get('cat'), e.get('args', {})
            if cat not in GPU | HOST or 'dur' not in e:
                fail('%s: a slice of category %r (dur %r)' % (ranks[r], cat, e.get('dur')))
            if cat in GPU:
                count[cat] += 1
                if not isinstance(args.get('stream'), int) or args['stream'] < 0 or 'device' not in args:
                    fail('%s: %s %r has stream %r, device %r' % (ranks[r], cat, e['name'][:40], args.get('stream'),
                                                                  args.get('device')))
                want = {'gpu_memcpy': 'Memcpy', 'gpu_memset': 'Memset'}.get(cat)
                if want and not e['name'].startswith(want):
                    fail('%s: %s named %r' % (ranks[r], cat, e['name']))
                if 'correlation' in args:
                    gpu_corr.append(args['correlation'])
            else:
                if 'stream' in args:
                    fail('%s: host event %r has a stream' % (ranks[r], e['name'][:40]))
                if 'correlation' in args:
                    if args['correlation'] <= 0 or args['correlation'] in host_corr:
                        fail('%s: host correlation %r (0 or twice)' % (ranks[r], args['correlation']))
                    host_corr[args['correlation']] = e
                if e['name'].startswith('ProfilerStep'):
                    if not re.match(r'ProfilerStep\s*#\s*(\d+)', e['name']):
                        fail('%s: step named %r' % (ranks[r], e['name']))
                    steps += 1
        unjoined = [c for c in gpu_corr if c not in host_corr]
        if unjoined:
            fail('%s: %d GPU events\' correlation joins no host call (first %r)' % (ranks[r], len(unjoined), unjoined[0]))
        rows = json.loads(subprocess.run([st, 'summary', b, '--include-warmup', '--all', '--format', 'json'], check=True,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout)['summary']
        want = {'kernel': sum(w['Instances'] for w in rows if not w['Name'].startswith('[CUDA mem')),
                'gpu_memcpy': sum(w['Instances'] for w in rows if w['Name'].startswith('[CUDA memcpy')),
                'gpu_memset': sum(w['Instances'] for w in rows if w['Name'].startswith('[CUDA memset'))}
        if count != want:
            fail('%s: GPU work %r, steptrace summary %r' % (ranks[r], count, want))
        if not steps:
            fail('%s: no ProfilerStep' % ranks[r])
        for c in GPU:
            total[c] += count[c]
    print('hta_fields: %d rank(s) as HTA finds them; %d kernels, %d copies, %d memsets with stream, device and '
          'correlation, as steptrace summary' % (len(bundles), total['kernel'], total['gpu_memcpy'], total['gpu_memset']))


if __name__ == '__main__':
    main()
