// The Node side of tests/explorer_parity.rs: runs the explorer's JavaScript model
// (book/src/explorer/) on what the Rust test asks for and writes what it computed.
//
//   node tests/explorer/parity.js REQUEST.json RESPONSE.json
//
// REQUEST: { weights_js?: path of weights.js, checkpoint?: path of a .safetensors
//   file (the model used is the first one given), greedy: [{ digits, off }],
//   forward: [{ src: [id, …], tgt_in: [id, …], off: null | ablation }],
//   same_as_checkpoint?: path, refuse: [path, …] }
// RESPONSE: { greedy: [[token, …]], forward: [{ logits, encoder, decoder_self,
//   cross }], same_as_checkpoint: max |difference| of the logits, refuse: [{
//   message: null when the file loads, detail, note: the loader's note on a file
//   it loads (null when none), ms }], ms }
"use strict";
const fs = require("fs");
const path = require("path");

const dir = path.join(__dirname, "..", "..", "book", "src", "explorer");
const M = require(path.join(dir, "model.js"));
const C = require(path.join(dir, "checkpoint.js"));

const [requestFile, responseFile] = process.argv.slice(2);
const request = JSON.parse(fs.readFileSync(requestFile, "utf8"));

/** The page's loader on a file: { model, note, … }, or it throws Rust's refusal. */
function loaded(file) {
  const bytes = new Uint8Array(fs.readFileSync(file));
  return C.load_checkpoint(bytes, path.basename(file));
}
const load = (file) => loaded(file).model;

const needs_model = (request.greedy || []).length + (request.forward || []).length > 0;
let model = null;
if (needs_model && request.weights_js) {
  require(path.resolve(request.weights_js)); // sets globalThis.EXPLORER_WEIGHTS
  model = C.load_shipped(globalThis.EXPLORER_WEIGHTS).model;
} else if (needs_model) {
  model = load(request.checkpoint);
}

/** A teacher-forced pass, as the Rust test's forward_with_weights. */
function forward(m, { src, tgt_in, off }) {
  const { memory, src_mask, weights: encoder } = m.encode(src, off);
  const { logits, weights } = m.decode(tgt_in, memory, src_mask, off);
  return {
    logits: Array.from(logits.data),
    encoder: encoder.map((w) => Array.from(w)),
    decoder_self: weights.map((w) => Array.from(w.self_attn)),
    cross: weights.map((w) => Array.from(w.cross_attn)),
  };
}

const started = process.hrtime.bigint();
const response = {
  greedy: (request.greedy || []).map(({ digits, off }) =>
    M.greedy_decode(model, M.source_tensor(digits), M.SEQ_LEN, off).tokens),
  forward: (request.forward || []).map((f) => forward(model, f)),
};
response.ms = Number(process.hrtime.bigint() - started) / 1e6;

if (request.same_as_checkpoint && request.forward && request.forward.length) {
  const other = load(request.same_as_checkpoint);
  const a = forward(model, request.forward[0]).logits;
  const b = forward(other, request.forward[0]).logits;
  response.same_as_checkpoint = Math.max(...a.map((v, i) => Math.abs(v - b[i])));
}

// Each file as the page's loader sees it: null when it loads (with the note it
// loads it with, which Rust prints on stderr), else the sentence it refuses it
// with (and the cause, as Rust's `{:#}` would add one), and how long either took.
// The page reads a picked file with load_file_in_slices (in its worker), the
// whole file at once with load_checkpoint: both must answer alike, or the
// answer says they differ and the Rust side's comparison fails.
const outcome = (f) => {
  try {
    return { message: null, detail: null, note: f().note };
  } catch (e) {
    return { message: e.message, detail: e.detail || null, note: null };
  }
};
async function attempt(file) {
  const t = process.hrtime.bigint();
  const whole = outcome(() => loaded(file));
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  const blob = new Blob([fs.readFileSync(file)]);
  let sliced;
  try {
    // Small slices, so that every file of more than a few kilobytes takes several.
    const l = await C.load_file_in_slices(blob, { shown: path.basename(file), slice: 4096 });
    sliced = { message: null, detail: null, note: l.note };
  } catch (e) {
    sliced = { message: e.message, detail: e.detail || null, note: null };
  }
  if (JSON.stringify(sliced) !== JSON.stringify(whole)) {
    return { message: `load_file_in_slices differs from load_checkpoint: ${JSON.stringify(sliced)}`,
      detail: null, note: null, ms };
  }
  return { ...whole, ms };
}

(async () => {
  response.refuse = [];
  for (const file of request.refuse || []) response.refuse.push(await attempt(file));
  fs.writeFileSync(responseFile, JSON.stringify(response));
})();
