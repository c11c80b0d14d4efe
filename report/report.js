/*
 * report.js: the interactive parts of `steptrace report`, written for this
 * page alone and compiled into the program (analyze/embed.cmake):
 *
 *   - a tooltip for every element with a data-tip attribute (chart bars);
 *   - sortable tables: a click on a header sorts by that column, a second
 *     click reverses; "Show all" unfolds long tables;
 *   - the timeline of one step on a <canvas>, from the JSON that
 *     analyze/report_timeline.c writes: GPU streams, NVTX ranges per
 *     thread, the memory counter, one lane group per rank of a multi-GPU
 *     run; wheel or +/- zoom, drag pans, hover shows a slice, click pins
 *     it, double-click fits the step;
 *   - hooks for the tests, read from the URL's fragment, e.g.
 *     report.html#sort=kernels-table:3:asc&zoom=4&probe=longest&check
 *     (results land in data-* attributes of <html>, see testHooks below).
 *
 * Without JavaScript the page still shows every table and chart; only the
 * timeline needs it.
 */
(function () {
  'use strict';

  var root = document.documentElement;

  /* ---- formatting ---------------------------------------------------- */

  function digits3(v) {
    var a = Math.abs(v);
    return a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : v.toFixed(2);
  }

  function fmtTime(ns) {
    var a = Math.abs(ns);
    if (a < 1e3) return ns.toFixed(0) + ' ns';
    if (a < 1e6) return digits3(ns / 1e3) + ' \u00b5s';
    if (a < 1e9) return digits3(ns / 1e6) + ' ms';
    return digits3(ns / 1e9) + ' s';
  }

  function fmtBytes(b) {
    var units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;
    while (Math.abs(b) >= 1024 && i < units.length - 1) {
      b /= 1024;
      i++;
    }
    return (i ? digits3(b) : b.toFixed(0)) + ' ' + units[i];
  }

  /* ---- one tooltip for the whole page --------------------------------- */

  var tip = document.createElement('div');
  tip.id = 'tip';
  tip.hidden = true;
  document.body.appendChild(tip);

  function showTip(text, x, y) {
    tip.textContent = text;
    tip.hidden = false;
    var w = tip.offsetWidth, h = tip.offsetHeight;
    var left = x + 14 + w > window.innerWidth ? Math.max(4, x - 14 - w) : x + 14;
    var top = y + 16 + h > window.innerHeight ? Math.max(4, y - 12 - h) : y + 16;
    tip.style.left = left + 'px';
    tip.style.top = top + 'px';
  }

  function hideTip() {
    tip.hidden = true;
  }

  document.addEventListener('mousemove', function (e) {
    var el = e.target.closest ? e.target.closest('[data-tip]') : null;
    if (el)
      showTip(el.getAttribute('data-tip'), e.clientX, e.clientY);
    else if (!e.target.closest || !e.target.closest('.tl-wrap'))
      hideTip();
  });
  document.addEventListener('scroll', hideTip, true);

  /* ---- sortable tables ------------------------------------------------ */

  function cellValue(td, numeric) {
    if (!td) return numeric ? NaN : '';
    if (!numeric) return td.textContent;
    var v = td.getAttribute('data-v');
    return v !== null ? parseFloat(v) : parseFloat(td.textContent.replace(/,/g, ''));
  }

  /* Rows past the table's data-visible count fold behind "Show all". */
  function foldRows(table) {
    var visible = parseInt(table.getAttribute('data-visible') || '0', 10);
    Array.prototype.forEach.call(table.tBodies[0].rows, function (tr, i) {
      tr.classList.toggle('more', visible > 0 && i >= visible);
    });
  }

  /* Sorts by column col; dir 'asc' or 'desc'. Empty cells go last either way. */
  function sortTable(table, col, dir) {
    var th = table.tHead.rows[0].cells[col];
    if (!th) return false;
    var numeric = th.classList.contains('num'), sign = dir === 'asc' ? 1 : -1;
    var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
    var keyed = rows.map(function (tr) { return { tr: tr, v: cellValue(tr.cells[col], numeric) }; });
    keyed.sort(function (a, b) {
      if (numeric) {
        var an = isNaN(a.v), bn = isNaN(b.v);
        if (an || bn) return an - bn;
        return sign * (a.v - b.v);
      }
      return sign * a.v.localeCompare(b.v, undefined, { numeric: true });
    });
    keyed.forEach(function (k) { body.appendChild(k.tr); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', dir === 'asc' ? 'ascending' : 'descending');
    foldRows(table);
    return true;
  }

  function initTables() {
    document.querySelectorAll('table.sortable').forEach(function (table) {
      if (!table.tHead || !table.tBodies[0]) return;
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
        th.title = 'Sort by ' + th.textContent;
        th.addEventListener('click', function () {
          var now = th.getAttribute('aria-sort');
          var dir = now ? (now === 'ascending' ? 'desc' : 'asc') : th.classList.contains('num') ? 'desc' : 'asc';
          sortTable(table, col, dir);
        });
      });
    });
    document.querySelectorAll('button.more').forEach(function (button) {
      var table = button.closest('.tbl').querySelector('table');
      var label = button.textContent;
      button.addEventListener('click', function () {
        var open = table.classList.toggle('expanded');
        button.textContent = open ? 'Show fewer' : label;
      });
    });
  }

  /* ---- the timeline --------------------------------------------------- */

  var GUTTER = 150, AXIS_H = 24, GPU_H = 22, RANGE_H = 17, MEM_H = 56, RANK_H = 20, GAP = 6;
  var MIN_SPAN = 200;   /* ns: the deepest zoom */

  function lowerBound(arr, v) {
    var lo = 0, hi = arr.length;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (arr[mid] < v) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  /* A pastel colour per range name, stable across pages. */
  function nameColor(name) {
    var h = 0;
    for (var i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    return 'hsl(' + (h % 360) + ',48%,' + (74 + (h >> 9) % 8) + '%)';
  }

  function shortName(name) {
    var s = name.replace(/^void /, '');
    var p = s.indexOf('(');
    return p > 0 ? s.slice(0, p) : s;
  }

  /* One row of slices: starts sorted, durations, and a reference back to the data. */
  function Lane(kind, label, height) {
    this.kind = kind;
    this.label = label;
    this.h = height;
    this.starts = [];
    this.durs = [];
    this.refs = [];
    this.maxDur = 0;
  }

  Lane.prototype.add = function (start, dur, ref) {
    this.starts.push(start);
    this.durs.push(dur);
    this.refs.push(ref);
    if (dur > this.maxDur) this.maxDur = dur;
  };

  /* Indices of the slices that overlap [t0, t1], in start order. */
  Lane.prototype.each = function (t0, t1, fn) {
    for (var i = lowerBound(this.starts, t0 - this.maxDur); i < this.starts.length && this.starts[i] <= t1; i++)
      if (this.starts[i] + this.durs[i] >= t0) fn(i);
  };

  function Timeline(el, data) {
    this.el = el;
    this.d = data;
    this.str = data.strings;
    this.lanes = [];
    this.hover = null;
    this.pinned = null;
    this.buildLanes();
    this.buildDom();
    this.end = 0;
    var self = this;
    this.lanes.forEach(function (lane) {
      for (var i = 0; i < lane.starts.length; i++) self.end = Math.max(self.end, lane.starts[i] + lane.durs[i]);
    });
    data.steps.forEach(function (s) { self.end = Math.max(self.end, s[3]); });
    this.fitStep(data.steps.length ? data.first : -1);
  }

  /* Lane groups: one per rank of a run (under a "rank R" lane), the only one of a bundle of its own. */
  Timeline.prototype.buildLanes = function () {
    var d = this.d, self = this, groups = Math.max(1, d.ranks.length);
    for (var g = 0; g < groups; g++) {
      if (d.ranks.length > 1) {
        var head = new Lane('rank', 'rank ' + d.ranks[g], RANK_H);
        head.rank = g;
        this.lanes.push(head);
      }
      this.buildGroup(g);
    }
    var y = AXIS_H, prev = null;
    this.lanes.forEach(function (lane) {
      if (prev && (prev.kind !== lane.kind || (lane.kind === 'range' && lane.first))) y += GAP;
      if (prev && lane.kind === 'rank') y += GAP;
      lane.y = y;
      y += lane.h;
      prev = lane;
    });
    this.height = y + 4;
    this.slices = this.lanes.reduce(function (n, l) { return n + l.starts.length; }, 0);
  };

  /* Group g's lanes: its GPU streams, its threads' ranges by depth, its memory counter. */
  Timeline.prototype.buildGroup = function (g) {
    var d = this.d, self = this;
    d.streams.forEach(function (s, k) {
      if ((s.rank || 0) !== g) return;
      var lane = new Lane('gpu', s.name, GPU_H);
      lane.stream = k;
      lane.rank = g;
      for (var i = 0; i + 4 < s.s.length; i += 5) lane.add(s.s[i], s.s[i + 1], i);
      self.lanes.push(lane);
    });
    d.threads.forEach(function (t, k) {
      if ((t.rank || 0) !== g) return;
      var depths = [];
      for (var i = 0; i + 5 < t.r.length; i += 6) {
        var depth = t.r[i + 2];
        if (!depths[depth]) depths[depth] = new Lane('range', depth === 0 ? t.name : '', RANGE_H);
        depths[depth].add(t.r[i], t.r[i + 1], i);
      }
      for (var dd = 0; dd < depths.length; dd++) {
        var lane = depths[dd] || new Lane('range', '', RANGE_H);
        lane.thread = k;
        lane.rank = g;
        lane.first = dd === 0;
        self.lanes.push(lane);
      }
    });
    var mem = d.mem[g] ? d.mem[g].p : [];
    if (mem.length >= 2) {
      var lane = new Lane('mem', 'memory', MEM_H);
      lane.rank = g;
      lane.t = [];
      lane.v = [];
      lane.max = 0;
      lane.min = Infinity;
      for (var i = 0; i + 1 < mem.length; i += 2) {
        lane.t.push(mem[i]);
        lane.v.push(mem[i + 1]);
        lane.max = Math.max(lane.max, mem[i + 1]);
        lane.min = Math.min(lane.min, mem[i + 1]);
      }
      self.lanes.push(lane);
    }
  };

  Timeline.prototype.buildDom = function () {
    var self = this, d = this.d;
    var bar = document.createElement('div');
    bar.className = 'tl-bar';
    var select = document.createElement('select');
    select.setAttribute('aria-label', 'step');
    d.steps.forEach(function (s, k) {
      var o = document.createElement('option');
      o.value = String(k);
      o.textContent = 'step ' + s[0] + (s[1] ? ' (warm-up)' : '') + ', ' + fmtTime(s[3] - s[2]);
      select.appendChild(o);
    });
    if (d.steps.length > 1) {
      var all = document.createElement('option');
      all.value = '-1';
      all.textContent = 'all ' + d.steps.length + ' steps';
      select.appendChild(all);
    }
    select.value = String(d.first);
    select.addEventListener('change', function () { self.fitStep(parseInt(select.value, 10)); });
    if (d.steps.length) bar.appendChild(select);
    [['Fit', function () { self.fitStep(self.step); }], ['\u2212', function () { self.zoom(2); }],
     ['+', function () { self.zoom(0.5); }]].forEach(function (b) {
      var button = document.createElement('button');
      button.type = 'button';
      button.textContent = b[0];
      button.title = b[0] === 'Fit' ? 'Fit the step (double-click)' : b[0] === '+' ? 'Zoom in (+)' : 'Zoom out (\u2212)';
      button.addEventListener('click', b[1]);
      bar.appendChild(button);
    });
    this.info = document.createElement('span');
    this.info.className = 'muted';
    bar.appendChild(this.info);
    var hint = document.createElement('span');
    hint.className = 'hint';
    hint.textContent = 'wheel: zoom \u00b7 drag: pan \u00b7 click: pin';
    bar.appendChild(hint);

    var wrap = document.createElement('div');
    wrap.className = 'tl-wrap';
    this.canvas = document.createElement('canvas');
    this.canvas.tabIndex = 0;
    this.canvas.setAttribute('role', 'img');
    this.canvas.setAttribute('aria-label', 'timeline of the step');
    wrap.appendChild(this.canvas);
    this.details = document.createElement('div');
    this.details.className = 'tl-details';
    this.clearDetails();
    this.el.appendChild(bar);
    this.el.appendChild(wrap);
    this.el.appendChild(this.details);
    if (d.omitted) {
      var note = document.createElement('p');
      note.className = 'footnote';
      note.textContent = d.omitted;
      this.el.appendChild(note);
    }
    this.select = select;
    this.bindEvents();
    if (window.ResizeObserver)
      new ResizeObserver(function () { self.draw(); }).observe(wrap);
  };

  Timeline.prototype.clearDetails = function () {
    this.details.innerHTML = '';
    var span = document.createElement('span');
    span.className = 'muted';
    span.textContent = 'Click a slice to pin its details here.';
    this.details.appendChild(span);
  };

  /* The view shows the step at position k of data.steps (-1: all of them). */
  Timeline.prototype.fitStep = function (k) {
    var s = this.d.steps;
    this.step = k;
    if (k >= 0 && s[k]) {
      this.origin = s[k][2];
      this.setView(s[k][2], s[k][3], true);
    } else {
      this.origin = 0;
      this.setView(s.length ? s[0][2] : 0, this.end, true);
    }
    if (this.select) this.select.value = String(k);
  };

  Timeline.prototype.setView = function (v0, v1, pad) {
    var span = Math.max(v1 - v0, MIN_SPAN);
    if (pad) {
      v0 -= span * 0.01;
      v1 = v0 + span * 1.02;
    } else {
      v1 = v0 + span;
    }
    var limit = Math.max(this.end * 1.5, MIN_SPAN * 10);
    if (v1 - v0 > limit) v1 = v0 + limit;
    this.v0 = v0;
    this.v1 = v1;
    this.draw();
  };

  /* factor < 1 zooms in, around time t (the middle by default). */
  Timeline.prototype.zoom = function (factor, t) {
    if (t === undefined) t = (this.v0 + this.v1) / 2;
    this.setView(t - (t - this.v0) * factor, t + (this.v1 - t) * factor, false);
  };

  Timeline.prototype.xOf = function (t) {
    return GUTTER + (t - this.v0) / (this.v1 - this.v0) * (this.w - GUTTER);
  };

  Timeline.prototype.tOf = function (x) {
    return this.v0 + (x - GUTTER) / (this.w - GUTTER) * (this.v1 - this.v0);
  };

  Timeline.prototype.laneAt = function (y) {
    for (var i = 0; i < this.lanes.length; i++)
      if (y >= this.lanes[i].y && y < this.lanes[i].y + this.lanes[i].h) return this.lanes[i];
    return null;
  };

  Timeline.prototype.color = function (lane, i) {
    if (lane.kind === 'gpu') {
      var cat = this.d.cats[this.d.streams[lane.stream].s[lane.refs[i] + 3]];
      return cat ? cat[1] : '#999';
    }
    return nameColor(this.str[this.d.threads[lane.thread].r[lane.refs[i] + 3]] || '');
  };

  Timeline.prototype.name = function (lane, i) {
    var src = lane.kind === 'gpu' ? this.d.streams[lane.stream].s : this.d.threads[lane.thread].r;
    return this.str[src[lane.refs[i] + (lane.kind === 'gpu' ? 2 : 3)]] || '';
  };

  /*
   * Ticks with their labels right of them; a label that would pass the
   * canvas' right edge moves left of it, and one that would then touch its
   * neighbour is left out. data-axis: the last label's right edge and the
   * canvas' width (px).
   */
  Timeline.prototype.drawAxis = function (ctx) {
    var span = this.v1 - this.v0, target = span / Math.max(2, (this.w - GUTTER) / 110);
    var step = Math.pow(10, Math.floor(Math.log10(target)));
    var right = GUTTER - 8, edge = this.w - 4;
    if (target / step > 5) step *= 5; else if (target / step > 2) step *= 2;
    ctx.font = '11px system-ui, sans-serif';
    ctx.textAlign = 'left';
    ctx.textBaseline = 'middle';
    for (var t = Math.ceil((this.v0 - this.origin) / step) * step + this.origin; t <= this.v1; t += step) {
      var x = Math.round(this.xOf(t)) + 0.5;
      if (x < GUTTER) continue;
      ctx.fillStyle = '#eaecf0';
      ctx.fillRect(x, AXIS_H - 4, 1, this.height - AXIS_H);
      var label = Math.abs(t - this.origin) < step / 2 ? '0' : fmtTime(t - this.origin);
      var w = ctx.measureText(label).width, left = Math.min(x + 3, edge - w);
      if (left < right + 8) continue;
      ctx.fillStyle = '#667085';
      ctx.fillText(label, left, AXIS_H / 2);
      right = left + w;
    }
    this.el.setAttribute('data-axis', right.toFixed(1) + ' ' + this.w);
  };

  Timeline.prototype.drawLane = function (ctx, lane) {
    var self = this, n = 0, pend = null, h = lane.h - 3, y = lane.y + 1;
    function flush() {
      if (!pend) return;
      ctx.fillStyle = pend.c;
      ctx.fillRect(pend.x0, y, Math.max(1, pend.x1 - pend.x0), h);
      pend = null;
    }
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    ctx.textAlign = 'left';
    lane.each(this.v0, this.v1, function (i) {
      var x0 = Math.max(GUTTER, self.xOf(lane.starts[i])), x1 = Math.min(self.w, self.xOf(lane.starts[i] + lane.durs[i]));
      n++;
      if (x1 - x0 < 1) {   /* merge runs of sub-pixel slices into one mark */
        if (pend && x0 <= pend.x1 + 0.5) {
          pend.x1 = Math.max(pend.x1, x1);
          return;
        }
        flush();
        pend = { x0: x0, x1: x1, c: self.color(lane, i) };
        return;
      }
      flush();
      ctx.fillStyle = self.color(lane, i);
      ctx.fillRect(x0, y, x1 - x0 - (x1 - x0 > 3 ? 0.5 : 0), h);
      if (x1 - x0 > 36) {
        var label = lane.kind === 'gpu' ? shortName(self.name(lane, i)) : self.name(lane, i);
        var room = Math.floor((x1 - x0 - 6) / 6.2);
        if (label.length > room) label = label.slice(0, Math.max(0, room - 1)) + '\u2026';
        ctx.fillStyle = lane.kind === 'gpu' ? '#fff' : '#1d2330';
        ctx.fillText(label, x0 + 3, y + h / 2 + 0.5);
      }
    });
    flush();
    return n;
  };

  /* The counter between its lowest and highest value, so that what changes shows. */
  Timeline.prototype.drawMemory = function (ctx, lane) {
    var top = lane.y + 4, h = lane.h - 8, self = this;
    var base = lane.max > lane.min ? lane.min : 0, range = lane.max - base || 1;
    function y(v) { return top + h - h * (0.1 + 0.9 * (v - base) / range); }
    var i = Math.max(0, lowerBound(lane.t, this.v0) - 1);
    ctx.beginPath();
    ctx.moveTo(GUTTER, top + h);
    var prev = lane.v[i];
    ctx.lineTo(GUTTER, y(prev));
    for (i++; i < lane.t.length && lane.t[i] <= this.v1; i++) {
      var x = Math.max(GUTTER, self.xOf(lane.t[i]));
      ctx.lineTo(x, y(prev));
      ctx.lineTo(x, y(lane.v[i]));
      prev = lane.v[i];
    }
    ctx.lineTo(this.w, y(prev));
    ctx.lineTo(this.w, top + h);
    ctx.closePath();
    ctx.fillStyle = 'rgba(89,161,79,.35)';
    ctx.fill();
    ctx.strokeStyle = '#2f7d32';
    ctx.lineWidth = 1;
    ctx.stroke();
    ctx.fillStyle = '#475467';
    ctx.font = '10.5px system-ui, sans-serif';
    ctx.textAlign = 'right';
    ctx.fillText(fmtBytes(base) + ' \u2013 ' + fmtBytes(lane.max), this.w - 4, top + 6);
  };

  Timeline.prototype.draw = function () {
    var wrap = this.canvas.parentNode, w = wrap.clientWidth;
    if (!w) return;   /* folded away (a closed <details>): drawn when it opens */
    var dpr = window.devicePixelRatio || 1, c = this.canvas, ctx = c.getContext('2d'), self = this;
    this.w = w;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(this.height * dpr)) {
      c.width = Math.round(w * dpr);
      c.height = Math.round(this.height * dpr);
      c.style.height = this.height + 'px';
    }
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, this.height);
    this.drawAxis(ctx);
    var drawn = 0;
    this.d.steps.forEach(function (s) {   /* step boundaries */
      var x = self.xOf(s[2]);
      if (x >= GUTTER && x <= w) {
        ctx.fillStyle = '#98a2b3';
        ctx.fillRect(Math.round(x), AXIS_H - 4, 1, self.height - AXIS_H);
      }
    });
    var byRank = [];   /* slices drawn per lane group, for the tests */
    this.lanes.forEach(function (lane, k) {
      if (lane.kind === 'rank') {   /* a rank's group opens with a band */
        ctx.fillStyle = '#eef1f6';
        ctx.fillRect(0, lane.y, w, lane.h);
        ctx.fillStyle = '#98a2b3';
        ctx.fillRect(0, lane.y, w, 1);
        byRank[lane.rank] = 0;
        return;
      }
      if (k % 2) {
        ctx.fillStyle = '#fafbfc';
        ctx.fillRect(0, lane.y, w, lane.h);
      }
      if (lane.kind === 'mem') {
        self.drawMemory(ctx, lane);
        return;
      }
      var n = self.drawLane(ctx, lane);
      drawn += n;
      if (byRank[lane.rank] !== undefined) byRank[lane.rank] += n;
    });
    [this.pinned, this.hover].forEach(function (hit, k) {
      if (!hit || hit.lane.kind === 'mem') return;
      var x0 = Math.max(GUTTER, self.xOf(hit.lane.starts[hit.i]));
      var x1 = Math.min(w, self.xOf(hit.lane.starts[hit.i] + hit.lane.durs[hit.i]));
      ctx.strokeStyle = k ? '#1d2330' : '#c92a2a';
      ctx.lineWidth = k ? 1 : 2;
      ctx.strokeRect(x0 - 1, hit.lane.y, Math.max(2, x1 - x0) + 2, hit.lane.h - 1);
    });
    ctx.fillStyle = '#fff';   /* the gutter with the lane names */
    ctx.fillRect(0, 0, GUTTER - 2, this.height);
    ctx.fillStyle = '#344054';
    ctx.font = '12px system-ui, sans-serif';
    ctx.textAlign = 'left';
    ctx.textBaseline = 'middle';
    this.lanes.forEach(function (lane) {
      var label = lane.kind === 'mem' ? 'live memory' : lane.label;
      if (!label) return;
      ctx.font = lane.kind === 'rank' ? 'bold 12px system-ui, sans-serif' : '12px system-ui, sans-serif';
      while (label.length > 3 && ctx.measureText(label).width > GUTTER - 12) label = label.slice(0, -2) + '\u2026';
      ctx.fillText(label, 6, lane.y + Math.min(lane.h, GPU_H) / 2);
    });
    ctx.fillStyle = '#e4e7ec';
    ctx.fillRect(GUTTER - 2, 0, 1, this.height);
    this.el.setAttribute('data-drawn', String(drawn));
    this.el.setAttribute('data-view', Math.round(this.v0) + ' ' + Math.round(this.v1));
    this.el.setAttribute('data-slices', String(this.slices));
    this.el.setAttribute('data-lanes', String(this.lanes.length));
    this.el.setAttribute('data-ranks', byRank.map(function (n, g) { return self.d.ranks[g] + ':' + n; }).join(' '));
    this.info.textContent = 'showing ' + fmtTime(this.v1 - this.v0) + ' from ' + fmtTime(this.v0 - this.origin) +
      ', ' + drawn + ' of ' + this.slices + ' slices';
  };

  /* The slice (or memory value) under canvas point (x, y), or null. */
  Timeline.prototype.hit = function (x, y) {
    var lane = this.laneAt(y);
    if (!lane || x < GUTTER || lane.kind === 'rank') return null;
    var t = this.tOf(x);
    if (lane.kind === 'mem') {
      var i = lowerBound(lane.t, t + 1) - 1;
      return i >= 0 ? { lane: lane, t: t, v: lane.v[i] } : null;
    }
    var slack = 3 * (this.v1 - this.v0) / (this.w - GUTTER), best = null, bestDist = Infinity;
    lane.each(t - slack, t + slack, function (i) {
      var s = lane.starts[i], e = s + lane.durs[i];
      var dist = t < s ? s - t : t > e ? t - e : -1 / (1 + lane.durs[i]);   /* inside: the shortest wins */
      if (dist < bestDist) {
        bestDist = dist;
        best = i;
      }
    });
    return best === null ? null : { lane: lane, i: best };
  };

  /* [label, value] pairs describing a hit; its rank last on a page of several. */
  Timeline.prototype.describe = function (hit) {
    var kv = this.describeSlice(hit), d = this.d;
    if (d.ranks.length > 1) kv.push(['rank', String(d.ranks[hit.lane.rank])]);
    return kv;
  };

  Timeline.prototype.describeSlice = function (hit) {
    var lane = hit.lane, d = this.d;
    if (lane.kind === 'mem')
      return [['live memory', fmtBytes(hit.v)], ['at', fmtTime(hit.t - this.origin)], ['view', d.mem[lane.rank].view]];
    var start = lane.starts[hit.i], dur = lane.durs[hit.i];
    if (lane.kind === 'gpu') {
      var s = d.streams[lane.stream].s, r = lane.refs[hit.i], cat = d.cats[s[r + 3]];
      return [['kernel', this.str[s[r + 2]] || '?'], ['op path', this.str[s[r + 4]] || '(none)'],
              ['category', cat ? cat[0] : '?'], ['duration', fmtTime(dur)],
              ['start', fmtTime(start - this.origin) + ' into the step'], ['stream', d.streams[lane.stream].name]];
    }
    var t = d.threads[lane.thread].r, k = lane.refs[hit.i];
    return [['range', this.str[t[k + 3]] || '?'], ['path', this.str[t[k + 4]] || ''],
            ['duration', fmtTime(dur) + ' on the host'], ['GPU busy', fmtTime(t[k + 5])],
            ['start', fmtTime(start - this.origin) + ' into the step'], ['thread', d.threads[lane.thread].name]];
  };

  Timeline.prototype.pin = function (hit) {
    this.pinned = hit;
    if (!hit) {
      this.clearDetails();
    } else {
      this.details.innerHTML = '';
      this.describe(hit).forEach(function (kv, k) {
        if (k) this.details.appendChild(document.createTextNode(' \u00b7 '));
        this.details.appendChild(document.createTextNode(kv[0] + ': '));
        var b = document.createElement('b');
        b.textContent = kv[1];
        this.details.appendChild(b);
      }, this);
    }
    this.el.setAttribute('data-pinned', hit ? this.describe(hit)[0][1] : '');
    this.draw();
  };

  Timeline.prototype.bindEvents = function () {
    var self = this, c = this.canvas, drag = null;
    function point(e) {
      var r = c.getBoundingClientRect();
      return { x: e.clientX - r.left, y: e.clientY - r.top };
    }
    c.addEventListener('wheel', function (e) {
      e.preventDefault();
      var p = point(e), dy = e.deltaMode === 1 ? e.deltaY * 16 : e.deltaY;
      self.zoom(Math.exp(dy * 0.0015), p.x > GUTTER ? self.tOf(p.x) : undefined);
    }, { passive: false });
    c.addEventListener('pointerdown', function (e) {
      if (e.button !== 0) return;
      var p = point(e);
      drag = { x: p.x, v0: self.v0, moved: false };
      if (c.setPointerCapture && e.pointerId !== undefined) {
        try { c.setPointerCapture(e.pointerId); } catch (err) { /* synthetic events have no capture */ }
      }
    });
    c.addEventListener('pointermove', function (e) {
      var p = point(e);
      if (drag) {
        var dx = p.x - drag.x;
        if (Math.abs(dx) > 3) drag.moved = true;
        if (drag.moved) {
          c.classList.add('dragging');
          var span = self.v1 - self.v0, v0 = drag.v0 - dx / (self.w - GUTTER) * span;
          self.setView(v0, v0 + span, false);
          hideTip();
        }
        return;
      }
      var hit = self.hit(p.x, p.y);
      var same = hit && self.hover && hit.lane === self.hover.lane && hit.i === self.hover.i;
      if (hit) showTip(self.describe(hit).map(function (kv) { return kv[0] + ': ' + kv[1]; }).join('\n'),
                       e.clientX, e.clientY);
      else hideTip();
      if (!same) {
        self.hover = hit && hit.lane.kind !== 'mem' ? hit : null;
        self.draw();
      }
    });
    function up(e) {
      if (!drag) return;
      var p = point(e), moved = drag.moved;
      drag = null;
      c.classList.remove('dragging');
      if (!moved) self.pin(self.hit(p.x, p.y));
    }
    c.addEventListener('pointerup', up);
    c.addEventListener('pointercancel', function () { drag = null; });
    c.addEventListener('pointerleave', function () {
      hideTip();
      if (self.hover) {
        self.hover = null;
        self.draw();
      }
    });
    c.addEventListener('dblclick', function () { self.fitStep(self.step); });
    c.addEventListener('keydown', function (e) {
      var span = self.v1 - self.v0;
      if (e.key === '+' || e.key === '=') self.zoom(0.5);
      else if (e.key === '-' || e.key === '_') self.zoom(2);
      else if (e.key === 'ArrowLeft') self.setView(self.v0 - span / 5, self.v1 - span / 5, false);
      else if (e.key === 'ArrowRight') self.setView(self.v0 + span / 5, self.v1 + span / 5, false);
      else if (e.key === '0') self.fitStep(self.step);
      else if (e.key === 'Escape') self.pin(null);
      else return;
      e.preventDefault();
    });
  };

  /* Dispatches `type` at canvas point (x, y) as the browser would. */
  Timeline.prototype.dispatch = function (Type, type, x, y, extra) {
    var r = this.canvas.getBoundingClientRect(), opts = { clientX: r.left + x, clientY: r.top + y, button: 0,
                                                          bubbles: true, cancelable: true };
    for (var k in extra || {}) opts[k] = extra[k];
    this.canvas.dispatchEvent(new Type(type, opts));
  };

  /* A drag of dx pixels in the middle of the first lane, then a wheel turn there (deltaY, negative zooms in). */
  Timeline.prototype.probeGestures = function (dx, deltaY) {
    var x = (GUTTER + this.w) / 2, y = this.lanes[0].y + this.lanes[0].h / 2;
    this.el.setAttribute('data-view-fit', Math.round(this.v0) + ' ' + Math.round(this.v1));
    this.dispatch(PointerEvent, 'pointerdown', x, y);
    this.dispatch(PointerEvent, 'pointermove', x + dx / 2, y);
    this.dispatch(PointerEvent, 'pointermove', x + dx, y);
    this.dispatch(PointerEvent, 'pointerup', x + dx, y);
    this.el.setAttribute('data-view-dragged', Math.round(this.v0) + ' ' + Math.round(this.v1));
    this.dispatch(WheelEvent, 'wheel', x, y, { deltaY: deltaY, deltaMode: 0 });
  };

  /* Hovers over, then clicks (pointerdown, pointerup), the centre of the longest kernel in view. */
  Timeline.prototype.probeLongest = function () {
    var best = null, self = this;
    this.lanes.forEach(function (lane) {
      if (lane.kind !== 'gpu') return;
      lane.each(self.v0, self.v1, function (i) {
        if (!best || lane.durs[i] > best.lane.durs[best.i]) best = { lane: lane, i: i };
      });
    });
    if (!best) return false;
    var x = (Math.max(GUTTER, this.xOf(best.lane.starts[best.i])) +
             Math.min(this.w, this.xOf(best.lane.starts[best.i] + best.lane.durs[best.i]))) / 2;
    var y = best.lane.y + best.lane.h / 2;
    this.dispatch(PointerEvent, 'pointermove', x, y);
    this.dispatch(PointerEvent, 'pointerdown', x, y);
    this.dispatch(PointerEvent, 'pointerup', x, y);
    return true;
  };

  function initTimelines() {
    var all = [];
    document.querySelectorAll('.tl[data-src]').forEach(function (el) {
      var src = document.getElementById(el.getAttribute('data-src'));
      if (!src) return;
      var data = JSON.parse(src.textContent);
      var noMem = data.mem.every(function (m) { return m.p.length < 4; });
      if (!data.streams.length && !data.threads.length && noMem) {
        var p = document.createElement('p');
        p.className = 'muted';
        p.textContent = 'Nothing to draw: the bundle holds no GPU work, NVTX range or allocation in its steps.';
        el.appendChild(p);
        el.setAttribute('data-drawn', '0');
        return;
      }
      all.push(new Timeline(el, data));
    });
    return all;
  }

  /* ---- hooks for the tests -------------------------------------------- */

  function describeElement(el) {
    var s = el.tagName.toLowerCase();
    if (el.id) s += '#' + el.id;
    else if (typeof el.className === 'string' && el.className) s += '.' + el.className.split(' ').join('.');
    var card = el.closest('section.card');
    return (card && card !== el ? 'in #' + card.id + ': ' : '') + s;
  }

  /* Everything wider than its card, and tables that would need to scroll: a list of lines. */
  function overflowing() {
    var bad = [];
    document.querySelectorAll('section.card, .kpis, header.top, nav.toc').forEach(function (card) {
      var box = card.getBoundingClientRect();
      if (!box.width) return;
      card.querySelectorAll('.scroll').forEach(function (s) {
        if (s.scrollWidth > s.clientWidth + 1)
          bad.push(describeElement(s) + ' needs to scroll: ' + s.scrollWidth + ' > ' + s.clientWidth + ' px');
      });
      card.querySelectorAll('*').forEach(function (el) {
        var r = el.getBoundingClientRect();
        if ((r.width || r.height) && (r.right > box.right + 1 || r.left < box.left - 1))
          bad.push(describeElement(el) + ' leaves its card: ' + Math.round(r.left) + '..' + Math.round(r.right) +
                   ' outside ' + Math.round(box.left) + '..' + Math.round(box.right));
      });
    });
    if (root.scrollWidth > window.innerWidth + 1)
      bad.push('the page scrolls sideways: ' + root.scrollWidth + ' > ' + window.innerWidth + ' px');
    return bad;
  }

  /*
   * What a reader would see cut or misplaced, as lines: a card's title under
   * the sticky bar after following its link; a timeline's axis label or an
   * SVG chart's text past the edge; the run's lists with their values in
   * different columns; a word of the command line split across lines.
   */
  function layoutFaults() {
    var bad = [];
    function visible(el) { var r = el.getBoundingClientRect(); return r.width > 0 || r.height > 0; }
    document.querySelectorAll('nav.toc a[href^="#"]').forEach(function (a) {
      var target = document.getElementById(a.getAttribute('href').slice(1));
      if (!visible(a) || !target) return;
      a.click();   /* the browser scrolls as it does for a reader's click */
      var title = target.querySelector(':scope > h2, :scope > summary'), bar = 0;
      document.querySelectorAll('nav.toc').forEach(function (nav) {
        var r = nav.getBoundingClientRect();
        if (r.height && r.top <= 1 && r.bottom > 0) bar = Math.max(bar, r.bottom);
      });
      if (title && title.getBoundingClientRect().top < bar - 0.5)
        bad.push(a.getAttribute('href') + ': its title is under the sticky bar (' +
                 Math.round(title.getBoundingClientRect().top) + ' < ' + Math.round(bar) + ' px)');
    });
    window.scrollTo(0, 0);
    document.querySelectorAll('.tl[data-axis]').forEach(function (el) {
      var v = el.getAttribute('data-axis').split(' ').map(parseFloat);
      if (v[0] > v[1]) bad.push('timeline ' + el.getAttribute('data-src') + ': an axis label ends at ' + v[0] +
                                ' px, past the canvas (' + v[1] + ' px)');
    });
    document.querySelectorAll('svg').forEach(function (svg) {
      var box = svg.getBoundingClientRect();
      if (!box.width) return;
      svg.querySelectorAll('text').forEach(function (t) {
        var r = t.getBoundingClientRect();
        if (r.width && (r.right > box.right + 0.5 || r.left < box.left - 0.5))
          bad.push(describeElement(svg) + ': "' + t.textContent.slice(0, 30) + '" is cut (' + Math.round(r.left) +
                   '..' + Math.round(r.right) + ' outside ' + Math.round(box.left) + '..' + Math.round(box.right) + ')');
      });
    });
    var column = null;
    document.querySelectorAll('.run dl.kv').forEach(function (dl) {
      var left = dl.getBoundingClientRect().left;
      dl.querySelectorAll('dd').forEach(function (dd) {
        if (!visible(dd)) return;
        var at = Math.round((dd.getBoundingClientRect().left - left) * 2) / 2;
        if (column === null) column = at;
        else if (at !== column) bad.push(describeElement(dl) + ': "' + dd.previousElementSibling.textContent +
                                         '" has its value at ' + at + ' px, the others at ' + column);
      });
    });
    document.querySelectorAll('pre.cmd').forEach(function (pre) {
      var style = getComputedStyle(pre), text, m, re = /\S+/g;
      var width = pre.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
      var walk = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
      if (!visible(pre)) return;
      while ((text = walk.nextNode())) {
        while ((m = re.exec(text.data))) {   /* a word wider than the line may break; no other */
          var range = document.createRange();
          range.setStart(text, m.index);
          range.setEnd(text, m.index + m[0].length);
          var rects = Array.prototype.slice.call(range.getClientRects());
          var split = rects.some(function (r) { return Math.round(r.top) !== Math.round(rects[0].top); });
          var natural = rects.reduce(function (sum, r) { return sum + r.width; }, 0);
          if (split && natural <= width)
            bad.push(describeElement(pre) + ': "' + m[0] + '" is split across lines');
        }
      }
    });
    return bad;
  }

  /* Keeps --nav-h (report.css: where a link scrolls to) at the sticky bar's height. */
  function trackNavHeight() {
    var navs = document.querySelectorAll('nav.toc');
    function set() {
      var h = 0;
      navs.forEach(function (nav) { h = Math.max(h, nav.getBoundingClientRect().height); });
      if (h) root.style.setProperty('--nav-h', h + 'px');
    }
    set();
    window.addEventListener('resize', set);
  }

  /*
   * #sort=ID:COL:asc|desc   sorts table ID by column COL (0-based); a comma-separated
   *                         list sorts several: data-sorted="ID ..."
   * #open                   opens every <details> (the diff's folded reports)
   * #zoom=F                 zooms every timeline in by F around its middle
   * #probe=longest          hovers over and clicks the longest kernel in view: data-pinned on
   *                         its .tl, the tooltip (#tip) shows it
   * #probe=gestures         drags the view 200 px to the left, then turns the wheel to zoom in:
   *                         data-view-fit, data-view-dragged and data-view ("v0 v1" in ns)
   * #check                  data-overflow="N" and data-overflow-what (the first lines)
   * #layout                 follows every link of the bars, then data-layout="N" and
   *                         data-layout-what (layoutFaults; the first lines)
   */
  function testHooks(timelines) {
    var args = {};
    location.hash.replace(/^#/, '').split('&').forEach(function (part) {
      var eq = part.indexOf('=');
      if (part) args[decodeURIComponent(eq < 0 ? part : part.slice(0, eq))] = eq < 0 ? '' : decodeURIComponent(part.slice(eq + 1));
    });
    if ('open' in args) {
      document.querySelectorAll('details').forEach(function (d) { d.open = true; });
      timelines.forEach(function (t) { t.draw(); });
    }
    if (args.sort) {
      var sorted = [];
      args.sort.split(',').forEach(function (spec) {
        var s = spec.split(':'), table = document.getElementById(s[0]);
        if (table && sortTable(table, parseInt(s[1], 10), s[2] || 'asc')) sorted.push(s[0]);
      });
      root.setAttribute('data-sorted', sorted.join(' '));
    }
    if (args.zoom) timelines.forEach(function (t) { t.zoom(1 / parseFloat(args.zoom)); });
    if (args.probe === 'longest') timelines.forEach(function (t) { t.probeLongest(); });
    if (args.probe === 'gestures') timelines.forEach(function (t) { t.probeGestures(-200, -400); });
    if ('check' in args) {
      var bad = overflowing();
      root.setAttribute('data-overflow', String(bad.length));
      root.setAttribute('data-overflow-what', bad.slice(0, 8).join(' | '));
    }
    if ('layout' in args) {
      var faults = layoutFaults();
      root.setAttribute('data-layout', String(faults.length));
      root.setAttribute('data-layout-what', faults.slice(0, 8).join(' | '));
    }
  }

  initTables();
  trackNavHeight();
  var timelines = initTimelines();
  testHooks(timelines);
  window.addEventListener('hashchange', function () { testHooks(timelines); });
  root.setAttribute('data-ready', '1');
})();
