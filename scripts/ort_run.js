// Runs one ONNX model once on ONNX Runtime (onnxruntime-node) and writes its outputs as .npy: a
// second oracle for the tests (tests/unit/onnx_export_test.cpp runs nfuse's exported models here).
// Usage: NODE_PATH=.cache/ort/node_modules node scripts/ort_run.js MODEL.onnx OUT_DIR NAME=IN.npy...
//        [--opt=all|basic|extended|disabled] (default all)
// Writes OUT_DIR/out_<i>.npy for the i-th model output (session.outputNames order) and prints one
// JSON line {"outputs": [names...]}. .npy dtypes: <f4 <f2 <f8 |i1 |u1 <i2 <u2 <i4 <u4 <i8 |b1, C order.
const ort = require('onnxruntime-node');
const fs = require('fs');
const path = require('path');

const kTypes = {  // npy descr -> [ort type, TypedArray]
  '<f4': ['float32', Float32Array], '<f2': ['float16', Uint16Array], '<f8': ['float64', Float64Array], '|i1': ['int8', Int8Array],
  '|u1': ['uint8', Uint8Array], '<i2': ['int16', Int16Array], '<u2': ['uint16', Uint16Array],
  '<i4': ['int32', Int32Array], '<u4': ['uint32', Uint32Array], '<i8': ['int64', BigInt64Array],
  '|b1': ['bool', Uint8Array],
};

function readNpy(p) {
  const b = fs.readFileSync(p);
  const v1 = b[6] === 1;
  const hl = v1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const off = v1 ? 10 : 12;
  const h = b.toString('latin1', off, off + hl);
  const descr = h.match(/'descr': '([^']*)'/)[1];
  if (/'fortran_order': True/.test(h)) throw new Error(p + ': Fortran order is not supported');
  if (!kTypes[descr]) throw new Error(p + ': unsupported dtype ' + descr);
  const shape = h.match(/'shape': \(([^)]*)\)/)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const [type, Arr] = kTypes[descr];
  const bytes = b.buffer.slice(b.byteOffset + off + hl, b.byteOffset + b.length);
  const data = type === 'bool' ? Array.from(new Uint8Array(bytes), x => x !== 0) : new Arr(bytes);
  return new ort.Tensor(type, data, shape);
}

function writeNpy(p, t) {
  const entry = Object.entries(kTypes).find(([, [type]]) => type === t.type);
  if (!entry) throw new Error('output of type ' + t.type + ' cannot be written as .npy');
  const descr = entry[0];
  const shape = t.dims.length === 1 ? `(${t.dims[0]},)` : `(${t.dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const data = t.type === 'bool' ? Buffer.from(Uint8Array.from(t.data, x => (x ? 1 : 0)))
                                 : Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  fs.writeFileSync(p, Buffer.concat([pre, Buffer.from(header, 'latin1'), data]));
}

(async () => {
  const args = process.argv.slice(2);
  let opt = 'all';
  const pos = [];
  for (const a of args) {
    if (a.startsWith('--opt=')) opt = a.slice(6);
    else pos.push(a);
  }
  const [model, outDir, ...inputs] = pos;
  if (!model || !outDir) throw new Error('usage: ort_run.js MODEL.onnx OUT_DIR NAME=IN.npy... [--opt=LEVEL]');
  const session = await ort.InferenceSession.create(model, {
    graphOptimizationLevel: opt, executionMode: 'sequential', intraOpNumThreads: 1, interOpNumThreads: 1,
  });
  const feeds = {};
  for (const spec of inputs) {
    const eq = spec.indexOf('=');
    feeds[spec.slice(0, eq)] = readNpy(spec.slice(eq + 1));
  }
  const out = await session.run(feeds);
  fs.mkdirSync(outDir, { recursive: true });
  session.outputNames.forEach((name, i) => writeNpy(path.join(outDir, `out_${i}.npy`), out[name]));
  console.log(JSON.stringify({ outputs: session.outputNames }));
})().catch(e => { console.error('ort_run.js: ' + String(e && e.stack || e)); process.exit(1); });
