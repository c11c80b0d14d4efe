/*
 * report_guard.js: the first script of the page. It collects every script
 * error (uncaught exceptions, rejected promises, console.error) into the
 * page itself: a red banner for the reader, and a count in
 * <html data-js-errors="N"> that the tests read back from the DOM. It runs
 * apart from report.js so that even a syntax error there is caught.
 */
(function () {
  'use strict';
  var root = document.documentElement, errors = [];

  root.className += ' js';
  root.setAttribute('data-js-errors', '0');

  function show() {
    var box = document.getElementById('js-errors');
    if (!box)
      return;
    box.textContent = 'This page hit a script error; what it shows may be incomplete:\n' + errors.join('\n');
    box.hidden = false;
  }

  function add(message) {
    errors.push(String(message));
    root.setAttribute('data-js-errors', String(errors.length));
    show();
  }

  window.addEventListener('error', function (e) {
    add((e.message || 'error') + (e.filename ? ' (line ' + e.lineno + ':' + e.colno + ')' : ''));
  });
  window.addEventListener('unhandledrejection', function (e) {
    add('unhandled rejection: ' + (e.reason && e.reason.message || e.reason));
  });
  var consoleError = console.error;
  console.error = function () {
    add(Array.prototype.join.call(arguments, ' '));
    return consoleError.apply(console, arguments);
  };
  document.addEventListener('DOMContentLoaded', function () {
    if (errors.length)
      show();
  });
})();
