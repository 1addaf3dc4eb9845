// Loads a memlint Perfetto/Chrome trace with Chrome DevTools' trace engine (the Performance
// panel's parser, npm package @paulirish/trace_engine) and prints, as JSON, the threads it built
// and their slices: `node check_trace.mjs <trace_engine dir> <trace.json>`.
const [engineDir, file] = process.argv.slice(2);
const {analyzeTrace} = await import(`${engineDir}/analyze-trace.mjs`);
const {parsedTrace} = await analyzeTrace(file);
const data = parsedTrace.data;
const threads = [];
for (const [pid, proc] of data.Renderer.processes) {
  for (const [tid, thread] of proc.threads) {
    const names = {};
    for (const e of thread.entries) names[e.name] = (names[e.name] || 0) + 1;
    threads.push({pid, tid, name: thread.name, entries: thread.entries.length, names});
  }
}
const counters = parsedTrace.traceEvents.filter(e => e.ph === 'C').length;
console.log(JSON.stringify({threads, counters, bounds: data.Meta.traceBounds}));
