#!/usr/bin/env python3
"""check_dom.py: checks a report page as headless Chromium left it (--dump-dom),
after report.js ran and its test hooks (the URL's #fragment) wrote their
results into data-* attributes. Standard library only.

  check_dom.py PAGE.dom [--overflow] [--layout] [--decimals] [--timelines N] [--drawn-min N]
               [--sorted TABLE:COL:asc|desc ...] [--pinned] [--gestures] [--banner TEXT]
               [--ranks R,R...] [--print-drawn]

Always: report.js finished (data-ready) and no script error was collected
(data-js-errors is 0). Prints one line per failure and exits 1.
"""
import argparse
import html.parser
import sys


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = {}
        self.timelines = []     # attrs of each .tl
        self.tables = {}        # id -> rows of [data-v or text of each cell]
        self.heads = {}         # id -> the header cells' text
        self.shown = {}         # id -> rows of [the text each cell shows]
        self.text = []
        self.tip = ''           # the tooltip's text
        self._in_tip = False
        self._table = None
        self._row = None
        self._text_cell = False
        self._head = False
        self._shown = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get('class') or '').split()
        if tag == 'html':
            self.root = a
        elif a.get('id') == 'tip':
            self._in_tip = 'hidden' not in a
        elif 'tl' in classes and 'data-src' in a:
            self.timelines.append(a)
        elif tag == 'table' and a.get('id'):
            self._table = a['id']
            self.tables[self._table] = []
            self.heads[self._table] = []
            self.shown[self._table] = []
        elif tag == 'tr' and self._table:
            self._row = []
            self._shown = []
        elif tag == 'th' and self._table:
            self.heads[self._table].append('')
            self._head = True
        elif tag == 'td' and self._row is not None:
            # a number's exact value, else the cell's text
            self._row.append(a.get('data-v', ''))
            self._shown.append('')
            self._text_cell = 'data-v' not in a

    def handle_endtag(self, tag):
        if tag == 'tr' and self._table and self._row is not None:
            if self._row:
                self.tables[self._table].append(self._row)
                self.shown[self._table].append(self._shown)
            self._row = None
        elif tag == 'th':
            self._head = False
        elif tag == 'table':
            self._table = None
        elif tag == 'td':
            self._text_cell = False
        elif tag == 'div':
            self._in_tip = False

    def handle_data(self, data):
        self.text.append(data)
        if self._in_tip:
            self.tip += data
        if self._text_cell and self._row:
            self._row[-1] += data
        if self._row and self._table:
            self._shown[-1] += data
        elif self._head and self._table:
            self.heads[self._table][-1] += data


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('dom')
    ap.add_argument('--overflow', action='store_true', help='the width check ran and found nothing')
    ap.add_argument('--layout', action='store_true',
                    help='the layout check (#layout: titles under the bar, cut labels, unaligned run lists, '
                         'split words) ran and found nothing')
    ap.add_argument('--decimals', action='store_true',
                    help='every (ns) column of the tables shows one decimal in every row that has one')
    ap.add_argument('--timelines', type=int, help='this many timelines drew')
    ap.add_argument('--drawn-min', type=int, default=0, help='each timeline drew at least this many slices')
    ap.add_argument('--sorted', action='append', default=[],
                    help='TABLE:COL:asc|desc, the order the hook asked for (repeatable)')
    ap.add_argument('--pinned', action='store_true', help='a click pinned a kernel in every timeline')
    ap.add_argument('--ranks', help='the first timeline drew a lane group per rank of these (0,1), each with slices')
    ap.add_argument('--gestures', action='store_true',
                    help='the drag moved the view later by the same span, the wheel then zoomed in')
    ap.add_argument('--banner', help='text the page must show')
    ap.add_argument('--print-drawn', action='store_true', help='print the first timeline\'s drawn count')
    args = ap.parse_args()

    page = Page()
    with open(args.dom, encoding='utf-8', errors='replace') as f:
        page.feed(f.read())
    fails = []
    root = page.root
    if root.get('data-ready') != '1':
        fails.append('report.js did not finish (no data-ready on <html>)')
    if root.get('data-js-errors') != '0':
        fails.append('script errors: %s' % root.get('data-js-errors'))
    if args.overflow:
        if root.get('data-overflow') is None:
            fails.append('the width check did not run')
        elif root.get('data-overflow') != '0':
            fails.append('%s elements wider than their card: %s' % (root['data-overflow'],
                                                                    root.get('data-overflow-what')))
    if args.layout:
        if root.get('data-layout') is None:
            fails.append('the layout check did not run')
        elif root.get('data-layout') != '0':
            fails.append('%s layout faults: %s' % (root['data-layout'], root.get('data-layout-what')))
    if args.decimals:
        checked = 0
        for table, heads in page.heads.items():
            for col, head in enumerate(heads):
                if not head.endswith('(ns)'):
                    continue
                shown = [r[col] for r in page.shown[table] if col < len(r) and '.' in r[col]]
                checked += len(shown)
                wrong = [v for v in shown if len(v.split('.')[1]) != 1]
                if wrong:
                    fails.append('table %s, %s: %d of %d cells not with one decimal: %s'
                                 % (table, head, len(wrong), len(shown), wrong[:4]))
        if not checked:
            fails.append('no (ns) column with decimals to check')
    if args.timelines is not None:
        drawn = [t for t in page.timelines if 'data-drawn' in t]
        if len(drawn) != args.timelines:
            fails.append('%d timelines drew, want %d' % (len(drawn), args.timelines))
    for t in page.timelines:
        n = int(t.get('data-drawn', '-1'))
        if n < args.drawn_min:
            fails.append('timeline %s drew %d slices, want at least %d (of %s)'
                         % (t.get('data-src'), n, args.drawn_min, t.get('data-slices')))
        if args.pinned and not t.get('data-pinned'):
            fails.append('timeline %s pinned nothing' % t.get('data-src'))
        if args.pinned and t.get('data-pinned') and t['data-pinned'] not in page.tip:
            fails.append('the tooltip does not show %r: %r' % (t['data-pinned'], page.tip))
        if args.gestures:
            fit, dragged, now = ([float(v) for v in t.get(k, '0 0').split()]
                                 for k in ('data-view-fit', 'data-view-dragged', 'data-view'))
            span = fit[1] - fit[0]
            if not (dragged[0] > fit[0] and abs((dragged[1] - dragged[0]) - span) <= 0.01 * span):
                fails.append('dragging left did not pan later: %s -> %s' % (fit, dragged))
            if not (0 < now[1] - now[0] < 0.8 * (dragged[1] - dragged[0])):
                fails.append('the wheel did not zoom in: %s -> %s' % (dragged, now))
    if args.ranks is not None and page.timelines:
        groups = dict(g.split(':') for g in page.timelines[0].get('data-ranks', '').split())
        if sorted(groups) != sorted(args.ranks.split(',')):
            fails.append('the timeline drew lane groups of ranks %s, want %s' % (sorted(groups), args.ranks))
        for rank, n in groups.items():
            if int(n) < 1:
                fails.append('the lane group of rank %s drew no slice' % rank)
    for spec in args.sorted:
        table, col, direction = spec.split(':')
        col = int(col)
        if table not in root.get('data-sorted', '').split():
            fails.append('the hook did not sort %s' % table)
        rows = page.tables.get(table, [])
        values = [float(r[col]) for r in rows if col < len(r) and r[col] != '']
        want = sorted(values, reverse=direction == 'desc')
        if len(set(values)) < 3:
            fails.append('table %s has %d distinct values in column %d' % (table, len(set(values)), col))
        elif values != want:
            fails.append('table %s column %d is not %s: %s' % (table, col, direction, values[:6]))
    if args.banner and args.banner not in ' '.join(''.join(page.text).split()):
        fails.append('the page does not say %r' % args.banner)
    for f in fails:
        print('%s: %s' % (args.dom, f))
    if args.print_drawn and page.timelines:
        print(page.timelines[0].get('data-drawn', '-1'))
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
