// devtools_flows.mjs ENGINE TRACE.json N: Chrome DevTools' own trace engine
// (the npm package @paulirish/trace_engine, installed at ENGINE) reads the
// Chrome JSON of `steptrace export --format chrome` and binds N launch flows,
// each from a host call to a GPU slice. Optional: tests/export/CMakeLists.txt
// runs it when STEPTRACE_TRACE_ENGINE names the package's folder
// (npm install @paulirish/trace_engine; it is not needed otherwise).
import fs from 'node:fs';
import path from 'node:path';
import {pathToFileURL} from 'node:url';

const [engine, file, expected] = process.argv.slice(2);
const {analyzeEvents} = await import(pathToFileURL(path.join(engine, 'analyze-trace.mjs')).href);
const trace = JSON.parse(fs.readFileSync(file, 'utf8'));
const {parsedTrace} = await analyzeEvents(trace.traceEvents);
const flows = parsedTrace.data.Flows.flows;
const bad = flows.filter(f => f.length !== 2 || f[0].ph !== 'X' || f[1].ph !== 'X' ||
                              f[0].pid === f[1].pid || f[0].ts > f[1].ts);
if (bad.length || flows.length !== Number(expected)) {
  console.log(`devtools_flows: DevTools bound ${flows.length} flows (expected ${expected}), ` +
              `${bad.length} not from a host call to a GPU slice`);
  process.exit(1);
}
console.log(`devtools_flows: DevTools' trace engine binds all ${flows.length} launch flows`);
