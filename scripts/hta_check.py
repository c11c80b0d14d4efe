#!/usr/bin/env python3
"""hta_check.py STEPTRACE HTA_SRC RUN.rank0.stb RUN.rank1.stb ...

Runs Holistic Trace Analysis (github.com/facebookresearch/HolisticTraceAnalysis,
a checkout's folder HTA_SRC holding its `hta` package; it needs pandas,
plotly and networkx: Debian's python3-pandas, python3-plotly,
python3-networkx) on `steptrace export --per-rank` of a run's ranks and
compares what it finds with steptrace's own numbers:

  ranks    TraceAnalysis(trace_dir=...) finds the files' ranks, and loads
           each rank's kernels, copies and memsets (Kineto's categories
           kernel, gpu_memcpy, gpu_memset) as `steptrace summary
           --include-warmup --all` counts them
  steps    per measured step (`export --step N`: one ProfilerStep a rank,
           which HTA keeps whole) and rank, HTA's temporal breakdown against
           `steptrace steps` and `explain` of that rank's bundle:
             kernel_time           = steps' GPU Span (first GPU start to last end)
             idle_time             = GPU Span - GPU Busy
             compute + non_compute = GPU Busy (the union of its GPU work)
             compute_time          = explain's Compute (a kernel other than a
                                     collective running), where the step's GPU
                                     work ends within its host span
  totals   the measured steps together, per rank, against `steptrace comm`:
           HTA's compute time and comm's Compute (both the union of the
           non-collective kernels), HTA's communication kernels' time and
           Comm, its computation-communication overlap (each step's share
           times its communication time) and Hidden

HTA reads times in microseconds and rounds each event's start up and its
end down (trace_parser.round_down_time_stamps), so each interval it merges
can lose up to 2 us: the differences are printed, in us, with that bound.
Prints the tables; exits 1 when HTA does not find the ranks or an
interval count's bound is exceeded. Nothing of HTA is copied here: it is
imported from HTA_SRC.
"""
import json
import logging
import os
import subprocess
import sys
import tempfile
import warnings


def run(cmd):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True).stdout


def st_json(st, *args):
    return json.loads(run([st] + list(args) + ['--format', 'json']))


def main():
    if len(sys.argv) < 4:
        print(__doc__.split('\n')[0])
        return 2
    st, hta_src, bundles = sys.argv[1], sys.argv[2], sys.argv[3:]
    sys.path.insert(0, os.path.abspath(hta_src))
    warnings.simplefilter('ignore')
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis
    from hta.utils.utils import KernelType, get_kernel_type, merge_kernel_intervals
    import hta.configs.config as hta_config
    hta_config.logger.setLevel(logging.ERROR)
    ok = True

    def load(d, **kw):
        return TraceAnalysis(trace_dir=d, **kw)

    def comm_us(ta, rank):
        """HTA's communication kernels' merged time on a rank (its own classification and merge)."""
        df, sym = ta.t.traces[rank], ta.t.symbol_table.get_sym_table()
        g = df[df['stream'].ne(-1)].copy()
        kinds = g['name'].map(lambda i: get_kernel_type(sym[i]))
        comm = merge_kernel_intervals(g[kinds.eq(KernelType.COMMUNICATION.name)].copy())
        return float((comm['end'] - comm['ts']).sum())

    with tempfile.TemporaryDirectory() as tmp:
        # the whole run: ranks and GPU work
        whole = os.path.join(tmp, 'run')
        run([st, 'export', '--per-rank', whole] + bundles)
        ta = load(whole, include_last_profiler_step=True)
        got = sorted(ta.t.traces)
        print('ranks: HTA TraceAnalysis(trace_dir=...) loads ranks %s from %s' % (got, sorted(os.listdir(whole))))
        if got != list(range(len(bundles))):
            print('hta_check: expected ranks %s' % list(range(len(bundles))))
            ok = False
        sym = ta.t.symbol_table.get_sym_id_map()
        print('%-6s %-26s %-26s %-26s' % ('rank', 'kernels HTA/steptrace', 'gpu_memcpy HTA/steptrace',
                                          'gpu_memset HTA/steptrace'))
        for r, b in enumerate(bundles):
            rows = st_json(st, 'summary', b, '--include-warmup', '--all')['summary']
            want = {'kernel': sum(w['Instances'] for w in rows if not w['Name'].startswith('[CUDA mem')),
                    'gpu_memcpy': sum(w['Instances'] for w in rows if w['Name'].startswith('[CUDA memcpy')),
                    'gpu_memset': sum(w['Instances'] for w in rows if w['Name'].startswith('[CUDA memset'))}
            df = ta.t.traces.get(r)
            have = {c: int(df['cat'].eq(sym[c]).sum()) if df is not None and c in sym else 0 for c in want}
            print('%-6d %-26s %-26s %-26s' % (r, *('%d/%d' % (have[c], want[c]) for c in want)))

        # step by step
        steps = [s['Step'] for s in st_json(st, 'steps', bundles[0])['steps'] if s['Warm-up'] == 'no']
        ours = []
        for b in bundles:
            ours.append(({s['Step']: s for s in st_json(st, 'steps', b)['steps']},
                         {int(s['Step']): s for s in st_json(st, 'explain', b)['steps'] if s['Step'].isdigit()}))
        print()
        print('temporal breakdown per step and rank, us: HTA / steptrace (HTA - steptrace)')
        print('%-4s %-4s %-28s %-28s %-30s %-30s' % ('step', 'rank', 'kernel_time / GPU Span', 'idle / Span - Busy',
                                                      'compute+non_compute / Busy', 'compute / explain Compute'))
        tot = {r: dict(comm=0.0, hidden=0.0, compute=0.0, events=0) for r in range(len(bundles))}
        for k in steps:
            d = os.path.join(tmp, 'step%d' % k)
            run([st, 'export', '--per-rank', d, '--step', str(k)] + bundles)
            ta = load(d)
            tb = ta.get_temporal_breakdown(visualize=False).set_index('rank')
            ov = ta.get_comm_comp_overlap(visualize=False).set_index('rank')
            for r in range(len(bundles)):
                srow, erow = ours[r][0][k], ours[r][1][k]
                n_events = int(ta.t.traces[r]['stream'].ne(-1).sum())
                span, busy = srow['GPU Span (ms)'] * 1e3, srow['GPU Busy (ms)'] * 1e3
                h = tb.loc[r]
                pairs = [(h['kernel_time(us)'], span), (h['idle_time(us)'], span - busy),
                         (h['compute_time(us)'] + h['non_compute_time(us)'], busy)]
                cells = ['%.0f / %.3f (%+.3f)' % (a, b, a - b) for a, b in pairs]
                # explain's parts stop at the step's host span; HTA's at its GPU span
                spill = span > srow['Wall (ms)'] * 1e3
                cells.append('%.0f / %.3f (%+.3f)%s' % (h['compute_time(us)'], erow['Compute'] * 1e3,
                                                        h['compute_time(us)'] - erow['Compute'] * 1e3,
                                                        ' *' if spill else ''))
                print('%-4d %-4d %-28s %-28s %-30s %-30s' % (k, r, *cells))
                if any(abs(a - b) > 2.0 * n_events for a, b in pairs):
                    print('hta_check: step %d rank %d differs by more than 2 us for each of its %d GPU events'
                          % (k, r, n_events))
                    ok = False
                c = comm_us(ta, r)
                t = tot[r]
                t['comm'] += c
                t['hidden'] += c * ov.at[r, 'comp_comm_overlap_pctg'] / 100.0
                t['compute'] += h['compute_time(us)']
                t['events'] += n_events
        print('(* the step\'s GPU work ends after its host span, where explain\'s parts stop)')

        print()
        comm = st_json(st, 'comm', *bundles)['ranks']
        print('measured steps together, us: HTA / steptrace comm (HTA - steptrace)')
        print('%-4s %-32s %-32s %-32s %-20s' % ('rank', 'compute / Compute', 'comm / Comm', 'overlap / Hidden',
                                                'overlap % / Hidden %'))
        for row in comm:
            r, n, t = row['Rank'], len(steps), tot[row['Rank']]
            pairs = [(t['compute'], row['Compute (ms)'] * 1e3 * n), (t['comm'], row['Comm (ms)'] * 1e3 * n),
                     (t['hidden'], row['Hidden (ms)'] * 1e3 * n)]
            cells = ['%.0f / %.3f (%+.3f)' % (a, b, a - b) for a, b in pairs]
            print('%-4d %-32s %-32s %-32s %-20s' % (r, *cells, '%.2f / %.2f' % (
                100.0 * t['hidden'] / t['comm'] if t['comm'] else 0.0, row['Hidden (%)'])))
            if any(abs(a - b) > 2.0 * t['events'] for a, b in pairs):
                print('hta_check: rank %d differs by more than 2 us for each of its %d GPU events' % (r, t['events']))
                ok = False
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
