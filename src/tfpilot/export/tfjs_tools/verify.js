// Runs a TF.js graph model exported by tfpilot in Node and writes its outputs and batch-1 latency.
// node verify.js MODEL_DIR REQUEST.json RESULT.json (written by tfpilot.export.tfjs.run_tfjs)
const tf = require('@tensorflow/tfjs');
const fs = require('fs'); const path = require('path');
async function main() {
  const [dir, inputPath, outputPath] = process.argv.slice(2);
  const request = JSON.parse(fs.readFileSync(inputPath));
  const modelJson = JSON.parse(fs.readFileSync(path.join(dir, 'model.json')));
  const weightSpecs = []; const chunks = [];
  for (const group of modelJson.weightsManifest) {
    weightSpecs.push(...group.weights);
    for (const p of group.paths) chunks.push(fs.readFileSync(path.join(dir, p)));
  }
  const weights = Buffer.concat(chunks);
  const model = await tf.loadGraphModel(tf.io.fromMemory({
    modelTopology: modelJson.modelTopology, weightSpecs,
    weightData: weights.buffer.slice(weights.byteOffset, weights.byteOffset + weights.byteLength),
    format: modelJson.format, signature: modelJson.signature}));
  const outputName = modelJson.signature.outputs[request.output].name.split(':')[0];
  const feeds = (start, end) => {
    const result = {};
    for (const [name, spec] of Object.entries(request.inputs)) {
      const per = spec.shape.slice(1).reduce((a, b) => a * b, 1);
      // tfjs has no uint8 dtype: integer inputs travel as int32 and the graph's Cast op does the rest.
      result[name] = tf.tensor(spec.values.slice(start * per, end * per), [end - start, ...spec.shape.slice(1)], spec.dtype);
    }
    return result;
  };
  const count = request.count;
  const out = model.execute(feeds(0, count), outputName);
  const values = Array.from(await out.data());
  const single = feeds(0, 1); const times = [];
  for (let i = 0; i < request.warmup + request.runs; i++) {
    const t0 = process.hrtime.bigint();
    const r = model.execute(single, outputName); await r.data(); r.dispose();
    if (i >= request.warmup) times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  fs.writeFileSync(outputPath, JSON.stringify({shape: out.shape, values, latency_ms_p50: times[Math.floor(times.length / 2)]}));
}
main().catch(e => { console.error('tfjs verification failed: ' + e.message); process.exit(1); });
