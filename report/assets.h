/*
 * assets.h: the HTML report's stylesheet and scripts, compiled in from
 * report/report.css, guard.js and report.js by embed.cmake.
 * Each is NUL-terminated and holds neither "</style" nor "</script".
 */
#ifndef STEPTRACE_REPORT_ASSETS_H
#define STEPTRACE_REPORT_ASSETS_H

extern const char report_css[];        /* the page's style */
extern const char report_guard_js[];   /* first in <head>: collects script errors into the page */
extern const char report_js[];         /* timeline, sortable tables, tooltips, test hooks */

#endif
