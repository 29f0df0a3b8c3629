// Times one model on ONNX Runtime (onnxruntime-node) for bench/compare_ort.sh and compares its
// outputs with nfuse's (a second oracle). Prints one JSON line:
//   {"median_ms": ..., "max_abs_diff": ..., "peak_rss_mb": ..., "baseline_rss_mb": ...,
//    "session_peak_rss_mb": ...}
// Memory (MiB; all process.resourceUsage().maxRSS, i.e. getrusage ru_maxrss, a high-water mark):
//   baseline_rss_mb     the bare Node process (node binary, V8 heap, bootstrap) sampled first
//                       thing, BEFORE require('onnxruntime-node'): not ORT's memory.
//   session_peak_rss_mb after require (the addon and libonnxruntime.so pages it touched) and
//                       InferenceSession.create (model load, graph optimization, prepacking).
//   peak_rss_mb         after the warm-up and timed runs (adds ORT's arena / per-run buffers), and
//                       before this script reads nfuse's outputs for the diff.
// peak_rss_mb - baseline_rss_mb is ORT's share. It is an estimate, not exact: the V8 heap can
// still grow after the baseline sample (the JS tensors: the input copy from readNpy, the output
// objects), which counts against ORT here; for the zoo's inputs that is < ~2 MiB.
// Usage: node ort_bench.js MODEL.onnx INPUT_NAME INPUT.npy THREADS WARMUP RUNS NFUSE_OUTPUT_DIR
const maxRssMb = () => process.resourceUsage().maxRSS / 1024;  // maxRSS is in KiB
const baselineRss = maxRssMb();
const ort = require('onnxruntime-node');
const fs = require('fs');
const path = require('path');

function readNpy(p) {  // little-endian float32 or float16, C order: what nfuse and the model scripts write
  const b = fs.readFileSync(p);
  const hl = b[6] === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const off = b[6] === 1 ? 10 : 12;
  const h = b.toString('latin1', off, off + hl);
  const half = h.includes("'<f2'");
  if (!half && !h.includes("'<f4'")) throw new Error(p + ': not float32 or float16');
  const shape = h.match(/'shape': \(([^)]*)\)/)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const bytes = b.buffer.slice(b.byteOffset + off + hl, b.byteOffset + b.length);
  return { shape, type: half ? 'float16' : 'float32', data: half ? new Uint16Array(bytes) : new Float32Array(bytes) };
}

(async () => {
  const [model, inputName, inputFile, threads, warmup, runs, nfuseDir] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {
    graphOptimizationLevel: 'all', executionMode: 'sequential',
    intraOpNumThreads: Number(threads), interOpNumThreads: 1,
  });
  const sessionRss = maxRssMb();
  const inp = readNpy(inputFile);
  const feeds = { [inputName]: new ort.Tensor(inp.type, inp.data, inp.shape) };
  let out;
  for (let i = 0; i < Number(warmup); i++) out = await session.run(feeds);
  const times = [];
  for (let i = 0; i < Number(runs); i++) {
    const t0 = process.hrtime.bigint();
    out = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const peakRss = maxRssMb();
  times.sort((a, b) => a - b);
  let maxDiff = null;
  if (nfuseDir) {
    maxDiff = 0;
    for (const name of session.outputNames) {
      const f = path.join(nfuseDir, name + '.npy');
      if (!fs.existsSync(f) || out[name].type !== 'float32') continue;
      const y = readNpy(f).data, r = out[name].data;
      if (y.length !== r.length) { maxDiff = Infinity; continue; }
      for (let i = 0; i < y.length; i++) maxDiff = Math.max(maxDiff, Math.abs(y[i] - r[i]));
    }
  }
  console.log(JSON.stringify({
    median_ms: times[Math.floor(times.length / 2)], max_abs_diff: maxDiff,
    peak_rss_mb: peakRss, baseline_rss_mb: baselineRss, session_peak_rss_mb: sessionRss,
  }));
})().catch(e => { console.error(String(e)); process.exit(1); });
