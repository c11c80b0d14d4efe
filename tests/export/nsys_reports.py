#!/usr/bin/env python3
"""nsys_reports.py STEPTRACE BUNDLE DB SQL_DIR [--domains 'D ...']: Nsight
Systems' cuda_gpu_kern_sum, cuda_gpu_mem_time_sum, cuda_gpu_mem_size_sum,
cuda_api_sum, nvtx_sum, cuda_gpu_trace and cuda_api_trace reports (the
queries in SQL_DIR, written from
their documentation) run on DB, BUNDLE's `steptrace export --format sqlite`,
and checked against what steptrace itself says of BUNDLE:

  cuda_gpu_kern_sum      `steptrace summary --include-warmup`, row for row
  cuda_gpu_mem_time_sum  the memcpy and memset rows of `summary --all`
  cuda_gpu_mem_size_sum  their count there; their bytes in the Chrome
                         export (each copy's args.bytes)
  cuda_api_sum           the calls of `steptrace replay --kind api`
  nvtx_sum               `steptrace ranges --include-warmup`, whose rows are
                         NVTX paths: a range name's row is its paths' rows
                         together (Med only where there is one path). The
                         report names a range "domain:name" outside the
                         default domain; ranges leaves out the steptrace.mirror
                         domain (steptrace's copies of a lead thread's ranges)
  cuda_gpu_trace         a row for each kernel, memcpy and memset of
                         `summary --include-warmup --all`, by start, each
                         name as often as summary counts it, every row's
                         Device named (TARGET_INFO_GPU through
                         TARGET_INFO_CUDA_DEVICE), a copy's Throughput its
                         Bytes over its Duration
  cuda_api_trace         a row for each call of `replay --kind api`, by
                         start, the same names as often, every row's Thread
                         Name (ThreadNames) and the Pid and Tid of its
                         globalTid

--domains: the NVTX domains the export must name (NvtxDomainCreate rows),
in any order. The aggregates median() and stdev() that nsys' report scripts
add to SQLite are added here with the meaning steptrace's statistics have
(lib/stats.c): the middle value or the mean of the two middle ones; the
sample standard deviation, 0 for one value. Prints one line per report,
or the first difference and exits 1. Standard library only.
"""
import argparse
import json
import math
import os
import sqlite3
import subprocess
import sys
import tempfile

REPORTS = ('cuda_gpu_kern_sum', 'cuda_gpu_mem_time_sum', 'cuda_gpu_mem_size_sum', 'cuda_api_sum', 'nvtx_sum',
           'cuda_gpu_trace', 'cuda_api_trace')
MIRROR = 'steptrace.mirror'


class Median:
    def __init__(self):
        self.v = []

    def step(self, x):
        if x is not None:
            self.v.append(x)

    def finalize(self):
        v, n = sorted(self.v), len(self.v)
        if not n:
            return None
        return float(v[n // 2]) if n % 2 else v[n // 2 - 1] + (v[n // 2] - v[n // 2 - 1]) / 2.0


class Stdev:
    def __init__(self):
        self.v = []

    def step(self, x):
        if x is not None:
            self.v.append(x)

    def finalize(self):
        return stats(self.v)['stddev'] if self.v else None


def stats(values):
    v, n = sorted(values), len(values)
    mean = sum(v) / n
    med = float(v[n // 2]) if n % 2 else v[n // 2 - 1] + (v[n // 2] - v[n // 2 - 1]) / 2.0
    sd = math.sqrt(sum((x - mean) ** 2 for x in v) / (n - 1)) if n > 1 else 0.0
    return {'total': sum(v), 'n': n, 'avg': mean, 'med': med, 'min': v[0], 'max': v[-1], 'stddev': sd}


class Fail(Exception):
    pass


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def compare(report, name, got, want, keys, rel=1e-9):
    """got and want: dicts of the same keys; ints equal, reals close."""
    for k in keys:
        g, w = got[k], want[k]
        if g is None or w is None or not close(float(g), float(w), rel):
            raise Fail('%s: %r: %s is %r in SQL, %r from steptrace' % (report, name[:60], k, g, w))


def run(cmd):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout


def query(db, sql_dir, report):
    with open(os.path.join(sql_dir, report + '.sql')) as f:
        cur = db.execute(f.read())
    cols = [c[0] for c in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def check_order(report, rows, total, name):
    keys = [(-r[total], r[name]) for r in rows]
    if keys != sorted(keys):
        raise Fail('%s: rows not by Total then name' % report)
    grand = sum(r[total] for r in rows)
    for r in rows:
        if 'Time (%)' in r and not close(r['Time (%)'], 100.0 * r[total] / grand):
            raise Fail('%s: %r: Time (%%) %r is not its share %r' % (report, r[name], r['Time (%)'],
                                                                     100.0 * r[total] / grand))


def sql_stats(r, total, count, unit):
    """A report row's statistics: its total and count columns, the others named "Avg (ns)" etc."""
    return {'total': r[total], 'n': r[count], 'avg': r['Avg' + unit], 'med': r['Med' + unit],
            'min': r['Min' + unit], 'max': r['Max' + unit], 'stddev': r['StdDev' + unit]}


def summary_stats(w):
    return {'total': w['Total Time (ns)'], 'n': w['Instances'], 'avg': w['Avg (ns)'], 'med': w['Med (ns)'],
            'min': w['Min (ns)'], 'max': w['Max (ns)'], 'stddev': w['StdDev (ns)']}


ALL = ('total', 'n', 'avg', 'med', 'min', 'max', 'stddev')


def by_name(report, rows, name):
    out = {}
    for r in rows:
        if r[name] in out:
            raise Fail('%s: %r twice' % (report, r[name]))
        out[r[name]] = r
    return out


def same_names(report, got, want, what):
    if set(got) != set(want):
        raise Fail('%s: names differ from %s: only in SQL %s, only in steptrace %s'
                   % (report, what, sorted(set(got) - set(want))[:3], sorted(set(want) - set(got))[:3]))


def kern_sum(rows, summary):
    want = by_name('cuda_gpu_kern_sum', [w for w in summary if not w['Name'].startswith('[CUDA mem')], 'Name')
    got = by_name('cuda_gpu_kern_sum', rows, 'Name')
    same_names('cuda_gpu_kern_sum', got, want, 'steptrace summary')
    for name, r in got.items():
        compare('cuda_gpu_kern_sum', name, sql_stats(r, 'Total Time (ns)', 'Instances', ' (ns)') | {'pct': r['Time (%)']},
                summary_stats(want[name]) | {'pct': want[name]['Time (%)']}, ALL + ('pct',))
    return 'cuda_gpu_kern_sum: %d kernel names, as steptrace summary' % len(got)


def mem_time_sum(rows, summary):
    want = by_name('cuda_gpu_mem_time_sum', [w for w in summary if w['Name'].startswith('[CUDA mem')], 'Name')
    got = by_name('cuda_gpu_mem_time_sum', rows, 'Operation')
    same_names('cuda_gpu_mem_time_sum', got, want, 'steptrace summary --all')
    for name, r in got.items():
        compare('cuda_gpu_mem_time_sum', name, sql_stats(r, 'Total Time (ns)', 'Count', ' (ns)'), summary_stats(want[name]), ALL)
    return 'cuda_gpu_mem_time_sum: %s, as steptrace summary --all' % ', '.join(
        '%s x%d' % (n, got[n]['Count']) for n in sorted(got))


def mem_size_sum(rows, summary, chrome):
    sizes = {}
    for e in chrome:
        if e.get('cat') == 'cuda' and e.get('ph') == 'X' and e.get('name', '').startswith('[CUDA mem'):
            sizes.setdefault(e['name'], []).append(e['args']['bytes'])
    counts = {w['Name']: w['Instances'] for w in summary if w['Name'].startswith('[CUDA mem')}
    got = by_name('cuda_gpu_mem_size_sum', rows, 'Operation')
    same_names('cuda_gpu_mem_size_sum', got, sizes, 'the Chrome export')
    for name, r in got.items():
        compare('cuda_gpu_mem_size_sum', name, sql_stats(r, 'Total (B)', 'Count', ' (B)'), stats(sizes[name]), ALL)
        if r['Count'] != counts.get(name):
            raise Fail('cuda_gpu_mem_size_sum: %r: Count %d, steptrace summary %r' % (name, r['Count'], counts.get(name)))
    return 'cuda_gpu_mem_size_sum: %d operations, %d bytes, as the Chrome export' % (
        len(got), sum(r['Total (B)'] for r in rows))


def api_sum(rows, calls):
    durs = {}
    for e in calls:
        durs.setdefault(e['Name'], []).append(round(e['Duration (ms)'] * 1e6))
    got = by_name('cuda_api_sum', rows, 'Name')
    same_names('cuda_api_sum', got, durs, 'steptrace replay --kind api')
    for name, r in got.items():
        compare('cuda_api_sum', name, sql_stats(r, 'Total Time (ns)', 'Num Calls', ' (ns)'), stats(durs[name]), ALL)
    return 'cuda_api_sum: %d functions, %d calls, as steptrace replay' % (len(got), len(calls))


def combined(groups):
    """One name's statistics from the rows of its paths (n, mean and sample stddev each)."""
    n = sum(g['Instances'] for g in groups)
    total = sum(g['Total Time (ns)'] for g in groups)
    mean = total / n
    sq = sum((g['Instances'] - 1) * g['StdDev (ns)'] ** 2 + g['Instances'] * g['Avg (ns)'] ** 2 for g in groups)
    return {'total': total, 'n': n, 'avg': mean, 'min': min(g['Min (ns)'] for g in groups),
            'max': max(g['Max (ns)'] for g in groups),
            'med': groups[0]['Med (ns)'] if len(groups) == 1 else None,
            'stddev': math.sqrt(max(0.0, (sq - n * mean * mean) / (n - 1))) if n > 1 else 0.0}


def nvtx_sum(rows, ranges, domains):
    want = {}
    for w in ranges:
        want.setdefault(w['Range'].rsplit('/', 1)[-1], []).append(w)
    got, mirrored = {}, 0
    for r in rows:
        domain, name = None, r['Range']
        for d in domains:
            if name.startswith(d + ':'):
                domain, name = d, name[len(d) + 1:]
        if r['Style'] != 'PushPop':
            raise Fail('nvtx_sum: %r is %r, steptrace writes push/pop ranges' % (r['Range'], r['Style']))
        if domain == MIRROR:
            mirrored += 1
            continue
        if name in got:
            raise Fail('nvtx_sum: %r in two domains' % name)
        got[name] = r
    same_names('nvtx_sum', got, want, 'steptrace ranges (their paths\' last names)')
    for name, r in got.items():
        w = combined(want[name])
        keys = ALL if w['med'] is not None else tuple(k for k in ALL if k != 'med')
        if any(g['Min (ns)'] == 0 for g in want[name]):
            raise Fail('nvtx_sum: %r has marks, which nvtx_sum leaves out' % name)
        compare('nvtx_sum', name, sql_stats(r, 'Total Time (ns)', 'Instances', ' (ns)'), w, keys, rel=1e-6)
    return 'nvtx_sum: %d range names%s as steptrace ranges%s' % (
        len(got), ' in domains %s,' % ', '.join(sorted(domains)) if domains else ',',
        ' (and %d of %s)' % (mirrored, MIRROR) if mirrored else '')


def by_start(report, rows):
    starts = [r['Start (ns)'] for r in rows]
    if starts != sorted(starts):
        raise Fail('%s: rows not by Start' % report)


def counts(names):
    out = {}
    for n in names:
        out[n] = out.get(n, 0) + 1
    return out


def gpu_trace(rows, summary):
    by_start('cuda_gpu_trace', rows)
    want = {w['Name']: w['Instances'] for w in summary}
    got = counts(r['Name'] for r in rows)
    same_names('cuda_gpu_trace', got, want, 'steptrace summary --include-warmup --all')
    for name, n in got.items():
        if n != want[name]:
            raise Fail('cuda_gpu_trace: %r: %d rows, steptrace summary %d' % (name[:60], n, want[name]))
    for r in rows:
        if not r['Device'] or not r['Device'].endswith(')'):
            raise Fail('cuda_gpu_trace: a row at %d names no device: %r' % (r['Start (ns)'], r['Device']))
        if r['Bytes (MB)'] is not None and r['Duration (ns)'] > 0 and not close(
                r['Throughput (MBps)'], r['Bytes (MB)'] / (r['Duration (ns)'] / 1e9), 1e-6):
            raise Fail('cuda_gpu_trace: a row at %d: Throughput is not Bytes over Duration' % r['Start (ns)'])
    kernels = sum(1 for r in rows if not r['Name'].startswith('[CUDA mem'))
    return 'cuda_gpu_trace: %d rows (%d kernels, %d copies and memsets) on %s, as steptrace summary' % (
        len(rows), kernels, len(rows) - kernels, ', '.join(sorted(set(r['Device'] for r in rows))))


def api_trace(rows, calls, db):
    by_start('cuda_api_trace', rows)
    got, want = counts(r['Name'] for r in rows), counts(e['Name'] for e in calls)
    same_names('cuda_api_trace', got, want, 'steptrace replay --kind api')
    for name, n in got.items():
        if n != want[name]:
            raise Fail('cuda_api_trace: %r: %d rows, steptrace replay %d' % (name, n, want[name]))
    tids = {(p, t) for (p, t) in db.execute('SELECT globalTid / 0x1000000 % 0x1000000, globalTid % 0x1000000 '
                                             'FROM CUPTI_ACTIVITY_KIND_RUNTIME')}
    for r in rows:
        if not r['Thread Name'] or (r['Pid'], r['Tid']) not in tids or str(r['Tid']) not in r['Thread Name']:
            raise Fail('cuda_api_trace: a call at %d: thread %r, Pid %r, Tid %r' % (
                r['Start (ns)'], r['Thread Name'], r['Pid'], r['Tid']))
    return 'cuda_api_trace: %d rows on %d threads, as steptrace replay' % (
        len(rows), len(set(r['Thread Name'] for r in rows)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('steptrace')
    ap.add_argument('bundle')
    ap.add_argument('db')
    ap.add_argument('sql_dir')
    ap.add_argument('--domains', help='the NVTX domains the export names, space-separated')
    a = ap.parse_args()

    db = sqlite3.connect('file:%s?mode=ro' % a.db, uri=True)
    db.create_aggregate('median', 1, Median)
    db.create_aggregate('stdev', 1, Stdev)
    try:
        rows = {r: query(db, a.sql_dir, r) for r in REPORTS}
    except sqlite3.Error as e:
        print('%s: an nsys report\'s query fails: %s' % (a.bundle, e))
        return 1
    domains = sorted(t for (t,) in db.execute('SELECT text FROM NVTX_EVENTS WHERE eventType = 75'))
    if a.domains is not None and domains != sorted(a.domains.split()):
        print('%s: the export names the domains %s, not %s' % (a.bundle, domains, sorted(a.domains.split())))
        return 1

    st = a.steptrace
    summary = json.loads(run([st, 'summary', a.bundle, '--include-warmup', '--all', '--format', 'json']))['summary']
    ranges = json.loads(run([st, 'ranges', a.bundle, '--include-warmup', '--format', 'json']))['ranges']
    calls = json.loads(run([st, 'replay', a.bundle, '--kind', 'api', '--format', 'json']))['events']
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'trace.json')
        run([st, 'export', a.bundle, '--format', 'chrome', '-o', path])
        with open(path) as f:
            chrome = json.load(f)['traceEvents']

    try:
        for report, total, name in (('cuda_gpu_kern_sum', 'Total Time (ns)', 'Name'),
                                    ('cuda_gpu_mem_time_sum', 'Total Time (ns)', 'Operation'),
                                    ('cuda_gpu_mem_size_sum', 'Total (B)', 'Operation'),
                                    ('cuda_api_sum', 'Total Time (ns)', 'Name'),
                                    ('nvtx_sum', 'Total Time (ns)', 'Range')):
            if not rows[report]:
                raise Fail('%s: no rows' % report)
            check_order(report, rows[report], total, name)
        lines = [kern_sum(rows['cuda_gpu_kern_sum'], summary),
                 mem_time_sum(rows['cuda_gpu_mem_time_sum'], summary),
                 mem_size_sum(rows['cuda_gpu_mem_size_sum'], summary, chrome),
                 api_sum(rows['cuda_api_sum'], calls),
                 nvtx_sum(rows['nvtx_sum'], ranges, domains),
                 gpu_trace(rows['cuda_gpu_trace'], summary),
                 api_trace(rows['cuda_api_trace'], calls, db)]
    except Fail as e:
        print('%s: %s' % (a.bundle, e))
        return 1
    for line in lines:
        print('%s: %s' % (os.path.basename(a.bundle), line))
    return 0


if __name__ == '__main__':
    sys.exit(main())
