// The Node side of scripts/explorer-browser-test.sh: drives the attention
// explorer (book/build/explorer.html) in headless Chromium through chromedriver's
// WebDriver HTTP API, with nothing but Node 20's fetch, the way a reader uses it:
// types digits, reads the output, switches heads off with the mouse and the
// keyboard, reads weights with the arrow keys, picks checkpoints (the same file
// again after it changed, damaged and crafted ones, one without its file
// checksum), switches the book's theme, checks the contrast of every piece of text in all five themes, every control's
// name and its place in the Tab order, and the page at a phone's width; then the
// defects of issue 43, each in a check of its own: a model of another shape, two
// picks at once, clicks and taps at known cells, arrow keys, the pending mark, the
// chosen step, a zoom, a half-switched layer box, the shipped weights' name, the
// note with all cross-attention off, a 160 MB file while typing, and the page
// without a worker. Takes the book's screenshots, and more to look at (a dark
// theme, a phone). Exits 1 if any check failed.
//
//   node scripts/explorer-browser-test.mjs --driver URL --chrome PATH --url URL
//        [--url URL]... --shots DIR --looks DIR --work DIR [--checkpoint FILE]
import fs from "node:fs";
import path from "node:path";

const args = { url: [] };
for (let i = 2; i < process.argv.length; i += 2) {
  const [k, v] = [process.argv[i].replace(/^--/, ""), process.argv[i + 1]];
  if (k === "url") args.url.push(v);
  else args[k] = v;
}
const repo = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const ELEMENT = "element-6066-11e4-a52e-4f735466cecf";
const THEMES = ["light", "rust", "coal", "navy", "ayu"];
let failures = 0;

function check(ok, what, detail = "") {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}${detail ? `: ${detail}` : ""}`);
  if (!ok) failures++;
  return ok;
}

// ---- WebDriver over HTTP --------------------------------------------------------
async function wd(method, route, body) {
  const r = await fetch(`${args.driver}${route}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await r.json();
  if (!r.ok) throw new Error(`${method} ${route}: ${JSON.stringify(json.value).slice(0, 400)}`);
  return json.value;
}

class Session {
  static async start(profile, size = "1100,3200", mobile = null) {
    const value = await wd("POST", "/session", {
      capabilities: {
        alwaysMatch: {
          browserName: "chrome",
          "goog:chromeOptions": {
            binary: args.chrome,
            args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--hide-scrollbars", `--user-data-dir=${profile}`, `--window-size=${size}`,
              "--force-device-scale-factor=1"],
            ...(mobile ? { mobileEmulation: { deviceMetrics: mobile } } : {}),
          },
        },
      },
    });
    const s = new Session();
    s.id = value.sessionId;
    return s;
  }
  cmd(method, route, body) { return wd(method, `/session/${this.id}${route}`, body); }
  open(url) { return this.cmd("POST", "/url", { url }); }
  js(script, ...a) { return this.cmd("POST", "/execute/sync", { script, args: a }); }
  async find(css) {
    const v = await this.cmd("POST", "/element", { using: "css selector", value: css });
    return v[ELEMENT];
  }
  async text(css) { return this.cmd("GET", `/element/${await this.find(css)}/text`); }
  async click(css) {
    await this.js("arguments[0].scrollIntoView({block: 'center'})", { [ELEMENT]: await this.find(css) });
    return this.cmd("POST", `/element/${await this.find(css)}/click`, {});
  }
  async label(css) { return this.cmd("GET", `/element/${await this.find(css)}/computedlabel`); }
  async type(css, text) {
    const e = await this.find(css);
    await this.cmd("POST", `/element/${e}/clear`, {});
    await this.cmd("POST", `/element/${e}/value`, { text });
    await this.settle();
  }
  /** Presses keys (WebDriver key codes) on whatever has the focus. */
  async keys(...keys) {
    const actions = keys.flatMap((k) => [{ type: "keyDown", value: k }, { type: "keyUp", value: k }]);
    await this.cmd("POST", "/actions", { actions: [{ type: "key", id: "keyboard", actions }] });
    await this.cmd("DELETE", "/actions");
  }
  /** A click (or, with type "touch", a tap) at (x, y) CSS pixels from the element's top left corner. */
  async pointer(css, x, y, type = "mouse") {
    const e = await this.find(css);
    const box = await this.js(`arguments[0].scrollIntoView({ block: 'center' });
      const r = arguments[0].getBoundingClientRect(); return { w: r.width, h: r.height };`, { [ELEMENT]: e });
    // WebDriver's offsets count from the element's centre.
    const [dx, dy] = [Math.round(x - box.w / 2), Math.round(y - box.h / 2)];
    await this.cmd("POST", "/actions", { actions: [{ type: "pointer", id: type, parameters: { pointerType: type }, actions: [
      { type: "pointerMove", duration: 0, origin: { [ELEMENT]: e }, x: dx, y: dy },
      { type: "pointerDown", button: 0 }, { type: "pointerUp", button: 0 }] }] });
    await this.cmd("DELETE", "/actions");
  }
  /** A Chrome DevTools command (chromedriver passes it on). */
  cdp(cmd, params = {}) { return this.cmd("POST", "/goog/cdp/execute", { cmd, params }); }
  async shot(css, file) {
    const png = await this.cmd("GET", `/element/${await this.find(css)}/screenshot`);
    fs.writeFileSync(file, Buffer.from(png, "base64"));
    console.log(`     screenshot ${file}`);
  }
  /**
   * Polls `script` until it returns something true. With `navigating`, a poll that
   * fails because it landed while the page was being replaced counts as "not yet".
   */
  async until(script, what, ms = 15000, { navigating = false } = {}) {
    const end = Date.now() + ms;
    for (;;) {
      const v = await (navigating ? this.js(script).catch(() => false) : this.js(script));
      if (v) return v;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  /** Until no decode is waiting or running (a page that decodes at once never has one). */
  settle() { return this.until("return !(window.explorer && explorer.state.pending)", "the decode to finish"); }
  quit() { return this.cmd("DELETE", "", undefined); }
}

// ---- checkpoint files, written here without the page's code ------------------------
/**
 * FNV-1a 64 (workbench/src/checkpoint.rs `checksum`) as 16 hex digits, in two
 * 32-bit halves; fast enough for the 160 MB file the test writes (BigInts are not).
 */
function fnv1a64(bytes) {
  let hi = 0xcbf29ce4, lo = 0x84222325;
  for (let i = 0; i < bytes.length; i++) {
    lo = (lo ^ bytes[i]) >>> 0;
    const p = lo * 0x1b3; // under 2^41: exact
    const low = p >>> 0;
    hi = (Math.imul(hi, 0x1b3) + (p - low) / 0x100000000 + (lo << 8)) >>> 0;
    lo = low;
  }
  return hi.toString(16).padStart(8, "0") + lo.toString(16).padStart(8, "0");
}

function half(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 31) return m ? NaN : sign * Infinity;
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}

/** The header and tensors of a safetensors file (our own files only). */
function readSafetensors(bytes) {
  const n = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString("utf8"));
  const data = bytes.subarray(8 + n);
  const tensors = {};
  for (const [name, t] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    const [a, b] = t.data_offsets;
    const raw = data.subarray(a, b);
    const values = new Float32Array((b - a) / (t.dtype === "F16" ? 2 : 4));
    for (let i = 0; i < values.length; i++) {
      values[i] = t.dtype === "F16" ? half(raw.readUInt16LE(2 * i)) : raw.readFloatLE(4 * i);
    }
    tensors[name] = { shape: t.shape, values };
  }
  return { metadata: header.__metadata__, tensors };
}

/** The text before the whole file's checksum digits (workbench/src/checkpoint.rs `seal`). */
const FILE_CHECKSUM_KEY = Buffer.from('"file_checksum":"fnv1a64:');

/**
 * A checkpoint as 09_train_reverse writes it: fp32, names sorted, back to back,
 * the checksum of the weights' bytes in the metadata, and the checksum of the
 * whole file sealed into it as `seal` does (FNV-1a over every byte, its own 16
 * digits read as zeros). `edit(header)` may change the header before the file
 * is sealed, to craft a file the loader must refuse for what the edit did;
 * `older: true` writes it as the course's older versions did, without the
 * file's checksum.
 */
function writeCheckpoint(file, { metadata, tensors }, edit = () => {}, { older = false } = {}) {
  const header = { __metadata__: { ...metadata } };
  // The reader's checkpoint has one already; the shipped weights' had theirs dropped.
  delete header.__metadata__.file_checksum;
  if (!older) header.__metadata__.file_checksum = `fnv1a64:${"0".repeat(16)}`;
  const chunks = [];
  let offset = 0;
  for (const name of Object.keys(tensors).sort()) {
    const { shape, values } = tensors[name];
    header[name] = { dtype: "F32", shape, data_offsets: [offset, offset + 4 * values.length] };
    offset += 4 * values.length;
    chunks.push(Buffer.from(new Float32Array(values).buffer));
  }
  const data = Buffer.concat(chunks);
  header.__metadata__.checksum = `fnv1a64:${fnv1a64(data)}`;
  edit(header);
  let json = Buffer.from(JSON.stringify(header));
  json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  const bytes = Buffer.concat([len, json, data]);
  if (!older) {
    const at = bytes.subarray(0, 8 + json.length).indexOf(FILE_CHECKSUM_KEY) + FILE_CHECKSUM_KEY.length;
    bytes.write(fnv1a64(bytes), at, "latin1");
  }
  fs.writeFileSync(file, bytes);
  return path.resolve(file);
}

/**
 * `good` with the offsets of two tensors of one shape swapped in its header, and
 * its checksums kept: every size still right, so only the file's checksum finds it.
 */
function withSwappedOffsets(good, file) {
  const bytes = fs.readFileSync(good);
  const n = Number(bytes.readBigUInt64LE(0));
  const text = bytes.subarray(8, 8 + n).toString("utf8").trimEnd();
  const header = JSON.parse(text);
  if (JSON.stringify(header) !== text) throw new Error(`${good}: its header is not written as JSON.stringify writes it`);
  const [q, k] = ["encoder.layers.0.mha.W_q.weight", "encoder.layers.0.mha.W_k.weight"];
  [header[q].data_offsets, header[k].data_offsets] = [header[k].data_offsets, header[q].data_offsets];
  const swapped = Buffer.from(bytes);
  swapped.write(JSON.stringify(header), 8, "utf8"); // the same length: the same numbers, swapped
  fs.writeFileSync(file, swapped);
  return path.resolve(file);
}

/**
 * The files the test picks: the reader's checkpoint (or the shipped fp16 weights
 * written out as one), the same model made to write only zeros (its output
 * bias for the digit 0 raised), a damaged copy (its last kilobyte cut off, as an
 * interrupted copy leaves it), and files crafted to be refused by workbench/src/checkpoint.rs
 * with the sentence each one names.
 */
function checkpoints() {
  let model;
  if (args.checkpoint && fs.existsSync(args.checkpoint)) {
    model = readSafetensors(fs.readFileSync(args.checkpoint));
  } else {
    const text = fs.readFileSync(path.join(repo, "book/src/explorer/weights.js"), "utf8");
    const shipped = JSON.parse(text.slice(text.indexOf("{", text.indexOf("EXPLORER_WEIGHTS"))).trim().replace(/;$/, ""));
    model = readSafetensors(Buffer.from(shipped.safetensors_base64, "base64"));
    model.metadata = { ...model.metadata };
  }
  const w = (name) => path.join(args.work, name);
  const good = writeCheckpoint(w("reverse_transformer.safetensors"), model);
  const bias = Float32Array.from(model.tensors["out_proj.bias"].values);
  bias[3] += 1000; // token 3 is the digit 0
  const zeros = writeCheckpoint(w("zeros.safetensors"),
    { ...model, tensors: { ...model.tensors, "out_proj.bias": { ...model.tensors["out_proj.bias"], values: bias } } });
  const bytes = fs.readFileSync(good);
  const damaged = w("damaged.safetensors");
  fs.writeFileSync(damaged, bytes.subarray(0, bytes.length - 1024));
  const crafted = [
    // A small file that claims a huge model: refused from its header, at once
    // (a position table of a million rows once took the page seconds to build).
    { name: "huge-max-len", phrase: "cannot be a checkpoint of this course: its max_len is 1000000, above the 65536",
      edit: (h) => { h.__metadata__.max_len = "1000000"; } },
    { name: "extra-tensor", phrase: "has a tensor 'extra.weight' that its configuration lacks",
      edit: (h) => { h["extra.weight"] = { dtype: "F32", shape: [1], data_offsets: [0, 4] }; } },
    { name: "overlapping", phrase: "its tensors overlap or leave gaps, so it is damaged",
      edit: (h) => { h["out_proj.weight"].data_offsets = [0, h["out_proj.weight"].data_offsets[1] - h["out_proj.weight"].data_offsets[0]]; } },
  ].map((c) => ({ ...c, file: writeCheckpoint(w(`${c.name}.safetensors`), model, c.edit) }));
  // The huge claim is also cut to its header: nothing behind it but 1 KB.
  const huge = crafted[0].file;
  fs.writeFileSync(huge, fs.readFileSync(huge).subarray(0, Number(fs.readFileSync(huge).readBigUInt64LE(0)) + 8 + 1024));
  // Damage that keeps every size right: found by the file's checksum alone.
  crafted.push({ name: "swapped-offsets", file: withSwappedOffsets(good, w("swapped-offsets.safetensors")),
    phrase: "is damaged: its header (config, tensor names, dtypes, shapes or offsets) does not match the checksum written with it" });
  // A checkpoint as the course's older versions wrote it (or with its file checksum
  // removed): refused, as load_checkpoint refuses it.
  const older = writeCheckpoint(w("older.safetensors"), model, () => {}, { older: true });
  // Another shape (3 layers of 2 heads, not 2 of 4), and a large file (about
  // 160 MB: one layer with a wide feed-forward network), both of random weights.
  const other = writeCheckpoint(w("other-shape.safetensors"),
    resized(model, { d_model: 32, num_heads: 2, d_ff: 64, num_layers: 3 }));
  const big = writeCheckpoint(w("big.safetensors"),
    resized(model, { d_model: 256, num_heads: 4, d_ff: 38400, num_layers: 1 }));
  return { model, good, zeros, damaged, crafted, older, other, big };
}

/**
 * A model of another configuration with the tensors of `model`'s (layer 0's
 * standing for every layer), random values: small, so that nothing overflows.
 */
function resized(model, config) {
  const d = Number(model.metadata.d_model), ff = Number(model.metadata.d_ff);
  const dim = (n) => (n === d ? config.d_model : n === ff ? config.d_ff : n);
  let seed = 43;
  const random = () => { // mulberry32: the same file every run
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const tensors = {};
  for (const [name, { shape }] of Object.entries(model.tensors)) {
    if (/\.layers\.[1-9]/.test(name)) continue;
    const shaped = shape.map(dim);
    for (let l = 0; l < (/\.layers\.0\./.test(name) ? config.num_layers : 1); l++) {
      const values = new Float32Array(shaped.reduce((a, b) => a * b, 1));
      const scale = /\.ln\w*\.weight$|ln_final\.weight$/.test(name) ? 0 : 0.2 / Math.sqrt(shaped[shaped.length - 1]);
      for (let k = 0; k < values.length; k++) values[k] = (scale ? (random() - 0.5) * scale : 1);
      tensors[name.replace(".layers.0.", `.layers.${l}.`)] = { shape: shaped, values };
    }
  }
  const metadata = { ...model.metadata };
  for (const [k, v] of Object.entries(config)) metadata[k] = String(v);
  return { metadata, tensors };
}

// ---- the checks ------------------------------------------------------------------------
const ready = "return !!(window.explorer && document.querySelector('#ex-result'))";
const result = "#ex-result";
const outputText = "const r = document.querySelector('#ex-result'); return r ? r.textContent : null";

/** The last layer's cross-attention, mean of the heads: row i's argmax column. */
const antiDiagonal = `
  const r = explorer.state.result, n = explorer.state.digits.length;
  const step = r.steps[r.steps.length - 1], layers = step.weights.length;
  const w = step.weights[layers - 1].cross_attn, h = explorer.state.model.config.num_heads;
  const rows = step.input.length, cols = w.length / h / rows;
  const peaks = [];
  for (let i = 0; i < rows; i++) {
    let best = 0, bestv = -1;
    for (let j = 0; j <= n; j++) {
      let v = 0;
      for (let k = 0; k < h; k++) v += w[(k * rows + i) * cols + j] / h;
      if (v > bestv) { bestv = v; best = j; }
    }
    peaks.push(best);
  }
  return peaks;`;

async function basics(s, url, shots) {
  await s.open(url);
  await s.until(ready, "the explorer to start");
  await s.settle();
  await s.type("#ex-input", "7 3 0 9 5");
  let out = await s.text(result);
  check(out === "5 9 0 3 7", `${url}: 7 3 0 9 5 gives 5 9 0 3 7`, out);
  const peaks = await s.js(antiDiagonal);
  // The row that writes <eos> may look at the source <eos> or at its first digit
  // (chapter 11 shows both models); the digit rows must mirror the source.
  check(JSON.stringify(peaks.slice(0, 5)) === JSON.stringify([4, 3, 2, 1, 0]),
    "the last layer's cross-attention peaks on the anti-diagonal", `row peaks at columns ${JSON.stringify(peaks)}`);
  if (shots) await s.shot("#explorer", path.join(shots, "explorer_reverse.png"));

  // One head off: its map says so and the probabilities move.
  const before = await s.js("return Array.from(explorer.state.result.steps[0].logits)");
  await s.click('input.ex-head[data-kind="cross"][data-layer="1"][data-head="0"]');
  await s.settle();
  const after = await s.js("return Array.from(explorer.state.result.steps[0].logits)");
  const moved = Math.max(...before.map((v, i) => Math.abs(v - after[i])));
  check(moved > 1e-4, "switching off cross-attention head 0 of layer 1 changes the logits",
    `largest change ${moved.toFixed(3)}; output now ${await s.text(result)}`);
  const offMaps = await s.js("return document.querySelectorAll('figure.ex-map-off').length");
  check(offMaps === 1, "its map is marked off", `${offMaps} map(s) marked`);
  await s.click("#ex-all-on");
  await s.settle();

  // Layer 0's cross-attention off, then both layers': the reversal breaks.
  await s.click('input.ex-sublayer[data-kind="cross"][data-layer="0"]');
  await s.settle();
  out = await s.text(result);
  console.log(`     cross-attention of layer 0 off: output ${out}`);
  await s.click('input.ex-sublayer[data-kind="cross"][data-layer="1"]');
  await s.settle();
  out = await s.text(result);
  check(out !== "5 9 0 3 7", "every cross-attention head off breaks the reversal", `output ${out}`);
  if (shots) await s.shot("#explorer", path.join(shots, "explorer_cross_off.png"));
  await s.click("#ex-all-on");
  await s.settle();
  check(await s.text(result) === "5 9 0 3 7", "switched back on, it reverses again");
}

async function rangeAndErrors(s) {
  await s.type("#ex-input", "4 2");
  const notice = await s.text("#ex-notice");
  check(/Outside the training range/.test(notice), "2 digits: a notice says outside the training range", notice);
  await s.type("#ex-input", "1234567890123");
  check(/13 digits is too many/.test(await s.text("#ex-notice")), "13 digits: refused with a message");
  await s.type("#ex-input", "7 3 x");
  check(/'x' is not a digit/.test(await s.text("#ex-notice")), "a letter: refused with a message");
  // Nothing of the last good run stays on screen after an error.
  const left = await s.js(`
    const seen = (e) => e && e.getClientRects().length > 0 && e.textContent.trim() !== "";
    return ["#ex-result", "#ex-steps", "#ex-step-label", "#ex-timing", "#ex-maps canvas", "#ex-hover", "#ex-readout"]
      .filter((css) => seen(document.querySelector(css)));`);
  check(left.length === 0 && (await s.js("return document.querySelectorAll('#ex-maps canvas').length === 0 || " +
    "document.querySelector('#ex-maps').getClientRects().length === 0")),
  "after an input error no output, step, timing, map or weight of the last run is shown", left.join(", "));
  await s.type("#ex-input", "7\u200b3 0\u200d9 5\ufeff");
  check(await s.js(outputText) === "5 9 0 3 7" && (await s.text("#ex-notice")) === "",
    "zero-width characters in the input are ignored", `output ${await s.js(outputText)}`);
}

/** Picks `file` in the file picker; returns the message once this pick is answered. */
async function pick(s, file) {
  const before = await s.js("return (explorer.state.loads ?? -1) + '|' + document.querySelector('#ex-load-message').textContent");
  const picker = await s.find("#ex-file");
  const started = Date.now();
  await s.cmd("POST", `/element/${picker}/value`, { text: file });
  let msg;
  try {
    msg = await s.until(`const m = document.querySelector('#ex-load-message').textContent;
      const now = (explorer.state.loads ?? -1) + '|' + m;
      return now !== ${JSON.stringify(before)} && !/^Reading/.test(m) && m;`, `an answer to picking ${path.basename(file)}`, 20000);
  } catch (e) {
    msg = `(no answer: ${e.message})`;
  }
  await s.settle();
  return { msg, ms: Date.now() - started };
}

async function loading(s, files, shots) {
  const { good, zeros, damaged, crafted, older } = files;
  await s.type("#ex-input", "7 3 0 9 5");
  let { msg } = await pick(s, good);
  check(msg.startsWith("Loaded") && !msg.includes("Note:"), "a checkpoint as 09_train_reverse writes it loads, without a note", msg);
  check(await s.text(result) === "5 9 0 3 7", "and reverses 7 3 0 9 5");
  ({ msg } = await pick(s, damaged));
  check(/damaged\.safetensors is \d+ bytes, but a checkpoint of its configuration .* the file is damaged/.test(msg),
    "a damaged checkpoint is refused with a message", msg);
  check(await s.text(result) === "5 9 0 3 7", "and the page keeps the weights it had");
  if (shots) await s.shot(".ex-weights-bar", path.join(shots, "explorer_damaged.png"));

  // The reader's file, picked; then the same path again after it changed (a
  // retrained model, a cut-short copy): each pick is read anew.
  const same = path.join(args.work, "mine.safetensors");
  fs.copyFileSync(good, same);
  ({ msg } = await pick(s, same));
  check(msg.startsWith("Loaded") && await s.text(result) === "5 9 0 3 7", "the reader's file loads", msg);
  fs.copyFileSync(zeros, same);
  ({ msg } = await pick(s, same));
  const zeroOut = await s.js(outputText);
  check(msg.startsWith("Loaded") && /^0( 0)+$/.test(zeroOut),
    "the same file picked again after it changed is read again: the page runs the new model", `${msg} → output ${zeroOut}`);
  fs.copyFileSync(damaged, same);
  ({ msg } = await pick(s, same));
  check(/^Not loaded/.test(msg) && /is \d+ bytes, but a checkpoint of its configuration .* the file is damaged/.test(msg),
    "the same file picked again after it was cut short is refused", msg);
  check(/^0( 0)+$/.test(zeroOut) && await s.js(outputText) === zeroOut,
    "and the page keeps the weights it had (the zeros model)");

  // Files that workbench/src/checkpoint.rs refuses, refused as fast and with its sentence.
  for (const c of crafted) {
    const { msg: m, ms } = await pick(s, c.file);
    check(m.startsWith("Not loaded") && m.includes(c.phrase) && ms < 3000,
      `a crafted file (${c.name}) is refused at once with Rust's sentence`, `${ms} ms: ${m}`);
  }
  const before = await s.text(result);
  ({ msg } = await pick(s, older));
  check(msg.startsWith("Not loaded") && msg.includes("older.safetensors is damaged, or older than the checks") &&
    msg.includes("it has no file_checksum,") && await s.text(result) === before,
    "a checkpoint without its file checksum is refused as load_checkpoint refuses it, and the page keeps its model", msg);
  ({ msg } = await pick(s, good));
  check(msg.startsWith("Loaded") && await s.text(result) === "5 9 0 3 7", "the good checkpoint loads again");
}

/** The theme, switched as a reader does: the theme button, then a theme. */
async function setTheme(s, theme) {
  // Clicked from a script: mdBook's menu bar slides away while the page scrolls,
  // and a WebDriver click at its place could land on the page under it.
  await s.js(`document.querySelector('#mdbook-theme-toggle').click();
    document.querySelector('#mdbook-theme-${theme}').click();`);
  await s.until(`return document.documentElement.classList.contains(${JSON.stringify(theme)})`, `the ${theme} theme`, 5000)
    .catch(() => {});
  await new Promise((r) => setTimeout(r, 300)); // a reload, if there is one, has started
  await s.until("return document.readyState === 'complete' && !!window.explorer", "the page after the theme switch");
  await s.settle();
}

async function themeSwitch(s) {
  await s.type("#ex-input", "1 2 3 4 5 6");
  await s.click('input.ex-head[data-kind="cross"][data-layer="0"][data-head="1"]');
  await s.settle();
  const before = await s.js(`window.__explorerTestMark = 1; return [document.querySelector('#ex-input').value,
    document.querySelector('#ex-weights').textContent, document.querySelector('#ex-off').textContent,
    document.querySelector('#ex-result').textContent].join(' | ')`);
  await setTheme(s, "navy");
  const after = await s.js(`return [document.querySelector('#ex-input').value,
    document.querySelector('#ex-weights').textContent, document.querySelector('#ex-off').textContent,
    (document.querySelector('#ex-result') || {}).textContent].join(' | ')`);
  const kept = await s.js("return window.__explorerTestMark === 1");
  check(kept && after === before, "switching to a dark theme keeps the input, the loaded checkpoint and the switched-off heads",
    kept ? after : `the page was reloaded; now: ${after}`);
  await setTheme(s, "light");
  check(await s.js("return window.__explorerTestMark === 1"), "and switching back to a light theme does too");
  await s.click("#ex-all-on").catch(() => {});
  await s.settle();
}

/** Every text's contrast with what is behind it, as WCAG 2 computes it. */
const contrastScript = `
  const parse = (c) => { const m = c.match(/rgba?\\(([^)]+)\\)/); if (!m) return null;
    const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number); return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 }; };
  const over = (top, bottom) => ({ r: top.r * top.a + bottom.r * (1 - top.a), g: top.g * top.a + bottom.g * (1 - top.a),
    b: top.b * top.a + bottom.b * (1 - top.a), a: 1 });
  const behind = (e) => { const layers = []; for (let x = e; x; x = x.parentElement) {
      const c = parse(getComputedStyle(x).backgroundColor); if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; } }
    let bg = { r: 255, g: 255, b: 255, a: 1 }; for (const c of layers.reverse()) bg = over(c, bg); return bg; };
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b); };
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const out = [];
  for (const e of document.querySelectorAll('#explorer *')) {
    const own = Array.from(e.childNodes).some((n) => n.nodeType === 3 && n.textContent.trim() !== '')
      || ((e.tagName === 'INPUT' && e.type === 'text') || e.tagName === 'BUTTON');
    if (!own || e.getClientRects().length === 0 || getComputedStyle(e).visibility === 'hidden') continue;
    const st = getComputedStyle(e); const fg = parse(st.color); if (!fg) { out.push({ what: e.tagName, bad: st.color }); continue; }
    const bg = behind(e); const r = ratio(over(fg, bg), bg);
    const size = parseFloat(st.fontSize), bold = Number(st.fontWeight) >= 700;
    const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    out.push({ what: (e.id ? '#' + e.id : e.tagName.toLowerCase() + (e.className ? '.' + String(e.className).split(' ')[0] : ''))
      + ' "' + (e.value || e.textContent).trim().slice(0, 30) + '"', ratio: Math.round(r * 100) / 100, need });
  }
  return out;`;

async function contrast(s, files) {
  // Every kind of text the page shows: a right and a wrong output, a warning, an
  // error, a loaded and a refused file, the switched-off summary.
  const states = [
    ["7 3 0 9 5, a checkpoint loaded", async () => { await pick(s, files.good); await s.type("#ex-input", "7 3 0 9 5"); }],
    ["2 digits, cross-attention off, a file refused", async () => {
      await pick(s, files.damaged);
      await s.type("#ex-input", "4 2");
      await s.click('input.ex-sublayer[data-kind="cross"][data-layer="0"]');
      await s.click('input.ex-sublayer[data-kind="cross"][data-layer="1"]');
      await s.settle();
    }],
    ["an input error", async () => { await s.type("#ex-input", "7 x"); }],
  ];
  const worst = {};
  for (const [what, setUp] of states) {
    await setUp();
    for (const theme of THEMES) {
      await setTheme(s, theme);
      const texts = await s.js(contrastScript);
      const bad = texts.filter((t) => t.bad || t.ratio < t.need);
      const lowest = texts.reduce((m, t) => ((t.ratio ?? 0) < (m.ratio ?? Infinity) ? t : m), {});
      const low = lowest.ratio ?? 0;
      if (!worst[theme] || low < worst[theme].ratio) worst[theme] = lowest;
      check(bad.length === 0, `contrast in the ${theme} theme (${what}): ${texts.length} texts, lowest ${low.toFixed(2)}:1`,
        bad.map((t) => `${t.what} ${t.ratio ?? t.bad}:1 < ${t.need}`).join("; "));
    }
  }
  for (const t of THEMES) console.log(`     lowest contrast in ${t}: ${worst[t].ratio.toFixed(2)}:1, ${worst[t].what}`);
  await s.click("#ex-all-on").catch(() => {});
  await setTheme(s, "light");
  await pick(s, files.good);
  await s.type("#ex-input", "7 3 0 9 5");
}

/** Every control named by what it is, reachable with Tab, and kept in focus. */
async function keyboard(s, looks) {
  await s.type("#ex-input", "7 3 0 9 5");
  const controls = await s.js(`return Array.from(document.querySelectorAll(
      '#explorer input, #explorer button, #explorer select, #explorer [tabindex]'))
    .filter((e) => e.getClientRects().length > 0 && !e.disabled)
    .map((e, i) => { e.dataset.testId = String(i); return i; });`);
  const names = [];
  for (const i of controls) names.push(await s.label(`[data-test-id="${i}"]`));
  const unnamed = names.filter((n) => !n || !n.trim()).length;
  check(unnamed === 0, `every one of the ${controls.length} controls has a name`, `${unnamed} without`);
  const heads = await s.js("return document.querySelectorAll('input.ex-head').length");
  const headNames = [];
  for (const kind of ["cross", "encoder", "decoder_self"]) {
    for (let l = 0; l < 2; l++) {
      for (let h = 0; h < 4; h++) {
        const css = `input.ex-head[data-kind="${kind}"][data-layer="${l}"][data-head="${h}"]`;
        if (await s.js(`return !!document.querySelector('${css}')`)) headNames.push(await s.label(css));
      }
    }
  }
  const kindWord = { cross: /cross/i, encoder: /encoder/i, decoder_self: /decoder/i };
  const named = headNames.every((n, k) => {
    const kind = ["cross", "encoder", "decoder_self"][Math.floor(k / 8)];
    return kindWord[kind].test(n) && n.includes(`layer ${Math.floor(k / 4) % 2}`) && n.includes(`head ${k % 4}`);
  });
  check(heads > 0 && new Set(headNames).size === heads && named,
    `the ${heads} head switches have ${new Set(headNames).size} different names, each with its kind, layer and head`,
    headNames.slice(0, 2).concat(headNames.slice(-1)).join(" / "));
  const sublayerNames = await s.js("return Array.from(document.querySelectorAll('input.ex-sublayer')).map((e) => e.dataset.testId)");
  const subNames = [];
  for (const i of sublayerNames) subNames.push(await s.label(`[data-test-id="${i}"]`));
  check(new Set(subNames).size === subNames.length && subNames.every((n) => /layer \d/.test(n)),
    "the layer switches have different names, with their kind and layer", subNames.slice(0, 2).join(" / "));

  // Tab from the input through the whole explorer: every control is reached.
  await s.js("document.querySelector('#ex-input').focus()");
  const reached = new Set();
  for (let k = 0; k < controls.length + 20; k++) {
    const id = await s.js("const e = document.activeElement; return e && e.closest('#explorer') ? (e.dataset.testId ?? 'x') : null");
    if (id === null) break;
    reached.add(id);
    await s.keys("\uE004");
  }
  const missed = controls.filter((i) => !reached.has(String(i)));
  check(missed.length === 0, `Tab reaches every control of the explorer (${reached.size} of ${controls.length})`,
    (await Promise.all(missed.slice(0, 5).map((i) => s.label(`[data-test-id="${i}"]`)))).join(", "));

  // Space on a head switch: switched off, recomputed, and the focus stays on it.
  const css = 'input.ex-head[data-kind="cross"][data-layer="1"][data-head="2"]';
  const runs = await s.js("return explorer.state.runs ?? 0");
  await s.js(`document.querySelector('${css}').focus()`);
  await s.keys(" ");
  await s.settle();
  const after = await s.js(`const e = document.activeElement, want = document.querySelector('${css}');
    return { same: e === want, checked: want.checked, runs: explorer.state.runs ?? 0, off: explorer.state.off.cross[1][2] };`);
  check(after.same && !after.checked && after.off && after.runs > runs,
    "Space on a head switch turns the head off, decodes again and keeps the focus on the switch", JSON.stringify(after));
  await s.keys(" ");
  await s.settle();
  check(await s.js(`return document.activeElement === document.querySelector('${css}') && !explorer.state.off.cross[1][2]`),
    "Space again turns it back on, the focus still there");

  // A map read with the keyboard: the arrow keys move over its cells, the
  // readout says each weight, and it sits next to the map.
  const canvas = 'canvas[data-kind="cross"][data-layer="1"][data-head="0"]';
  const hasCanvasFocus = await s.js(`const c = document.querySelector('${canvas}'); if (!c) return false; c.focus();
    return document.activeElement === c`);
  await s.keys("\uE014", "\uE014", "\uE015"); // right, right, down
  const read = await s.js(`const r = document.querySelector('.ex-readout[data-kind="cross"][data-layer="1"]'),
      c = document.querySelector('${canvas}');
    if (!r || !c) return null;
    const st = explorer.state, step = st.result.steps[st.result.steps.length - 1];
    const rows = step.input.length, w = step.weights[1].cross_attn;
    const want = w[0 * rows * 14 + 1 * 14 + 2].toFixed(3);
    const a = c.getBoundingClientRect(), b = r.getBoundingClientRect();
    return { text: r.textContent, want, gap: Math.round(b.top - a.bottom), live: r.getAttribute('aria-live') };`);
  check(hasCanvasFocus && read && read.text.includes("layer 1, head 0") && read.text.includes("row 1")
    && read.text.includes("column 2") && read.text.endsWith(`weight ${read.want}`),
  "a map takes the focus and the arrow keys read its weights (row 1, column 2 after →, →, ↓)", read ? read.text : "no readout");
  check(read && read.gap >= 0 && read.gap < 80 && read.live === "polite",
    "the readout sits right under the map it reads, and is announced", read ? `${read.gap} px below, aria-live ${read.live}` : "");
  if (looks) await s.shot("#ex-maps", path.join(looks, "explorer_keyboard_read.png"));
  const hover = await s.js(`const c = document.querySelector('canvas[data-kind="encoder"][data-layer="0"][data-head="3"]');
    c.scrollIntoView({ block: 'center' });
    const a0 = c.getBoundingClientRect();
    c.dispatchEvent(new MouseEvent('mousemove', { clientX: a0.left + 34 + 4, clientY: a0.top + 32 + 4, bubbles: true }));
    const r = document.querySelector('.ex-readout[data-kind="encoder"][data-layer="0"]') || document.querySelector('#ex-hover');
    const a = c.getBoundingClientRect(), b = r.getBoundingClientRect();
    return { text: r.textContent, gap: Math.round(b.top - a.bottom), moved: Math.round(a.top - a0.top) };`);
  check(/Encoder self-attention, layer 0, head 3: row 0/.test(hover.text) && hover.gap >= 0 && hover.gap < 80
    && hover.moved === 0, "pointing at a map reads its weight right under it, and nothing moves",
  `${hover.gap} px below, the map moved ${hover.moved} px: ${hover.text}`);

  // The output is announced, and changes with a new input.
  const live = await s.js("return document.querySelector('#ex-output').getAttribute('aria-live')");
  await s.type("#ex-input", "1 2 3");
  check(live === "polite" && await s.text(result) === "3 2 1", "the output is a polite live region and shows the new result",
    `aria-live ${live}`);
}

/** Typing is never held up: one decode for a burst of keys, and none of them waits long. */
async function typing(s) {
  await s.type("#ex-input", "");
  const runs = await s.js(`window.__longest = 0;
    new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__longest = Math.max(window.__longest, e.duration); })
      .observe({ type: 'longtask' });
    return explorer.state.runs ?? 0;`);
  const e = await s.find("#ex-input");
  await s.cmd("POST", `/element/${e}/value`, { text: "9 8 7 6 5 4 3 2 1 0 1 2" });
  await s.settle();
  const after = await s.js("return { runs: explorer.state.runs ?? 0, longest: window.__longest, out: document.querySelector('#ex-result').textContent }");
  check(after.out === "2 1 0 1 2 3 4 5 6 7 8 9" && after.runs - runs >= 1 && after.runs - runs <= 2,
    "23 keystrokes typed at once give one decode, of the whole input", `${after.runs - runs} decode(s); output ${after.out}`);
  check(after.longest < 150, "no task held the page up for long while typing and decoding",
    `longest task ${after.longest.toFixed(0)} ms`);
  check(await s.js("return explorer.state.worker === true"), "the decodes run in a worker, off the page's thread");
}

// ---- round three (issue 43): never a wrong picture, never a frozen page ----------------

/**
 * Records, on every change to the explorer, what it shows and whose it is, and
 * every picked file and weights label in order. `poke`: the name of a file
 * whose weights, the moment the label first names them, get a redraw (a theme
 * class change) and a pointer over a map, as a reader's hover would.
 */
function recorder(poke = null) {
  return `window.__rec = { snaps: [], errors: [], picks: [], labels: [] };
  const rec = window.__rec, label = () => document.querySelector('#ex-weights').textContent;
  window.addEventListener('error', (e) => rec.errors.push(String(e.message)));
  // In the capturing phase, before the page empties the picker.
  document.addEventListener('change', (e) => { if (e.target.id === 'ex-file' && e.target.files[0]) rec.picks.push(e.target.files[0].name); }, true);
  let poked = false, last = label();
  new MutationObserver(() => {
    const st = explorer.state, r = document.querySelector('#ex-result');
    const now = label();
    if (now !== last) { rec.labels.push({ label: now, picks: rec.picks.slice() }); last = now; }
    rec.snaps.push({ label: now, visible: !!(r && r.getClientRects().length),
      marked: document.querySelector('#explorer').classList.contains('ex-pending')
        && document.querySelector('#ex-output').getAttribute('aria-busy') === 'true'
        && document.querySelector('#ex-status').textContent !== '',
      layers: st.result ? st.result.steps[0].weights.length : null,
      heads: st.result ? st.result.encoder_weights[0].length / (14 * 14) : null,
      config: [st.model.config.num_layers, st.model.config.num_heads] });
    if (${JSON.stringify(poke)} && !poked && now.includes(${JSON.stringify(poke)})) {
      poked = true;
      document.documentElement.classList.toggle('ex-test-poke');
      const c = document.querySelector('#ex-maps canvas[data-layer="2"]') || document.querySelector('#ex-maps canvas');
      if (c) { const b = c.getBoundingClientRect();
        c.dispatchEvent(new MouseEvent('mousemove', { clientX: b.left + 40, clientY: b.top + 38, bubbles: true })); }
    }
  }).observe(document.querySelector('#explorer'), { subtree: true, childList: true, characterData: true, attributes: true });
  return true;`;
}

/** Right after another model loads, nothing of the last one is shown under its name. */
async function staleModel(s, files) {
  await s.type("#ex-input", "7 3 0 9 5");
  await pick(s, files.good);
  await s.js(recorder("other-shape.safetensors"));
  const { msg } = await pick(s, files.other);
  const rec = await s.js("return window.__rec");
  await s.js("document.documentElement.classList.remove('ex-test-poke')");
  const named = rec.snaps.filter((x) => x.label.includes("other-shape.safetensors"));
  const wrong = named.filter((x) => x.visible && !x.marked && !(x.layers === 3 && x.heads === 2));
  check(msg.startsWith("Loaded") && named.length > 0 && wrong.length === 0,
    "after a model of another shape loads, no output of the last model is shown unmarked under the new name",
    `${wrong.length} of ${named.length} states wrong: ${JSON.stringify(wrong[0] || {})}`);
  check(rec.errors.length === 0, "a redraw and a hover right as the new model's name appears throw nothing",
    rec.errors.slice(0, 2).join("; "));
  const shown = await s.js(`return { canvases: document.querySelectorAll('#ex-maps canvas').length,
    layers: explorer.state.result && explorer.state.result.steps[0].weights.length,
    out: (document.querySelector('#ex-result') || {}).textContent }`);
  check(shown.canvases === 3 * 3 * 2 && shown.layers === 3 && /^[0-9 ]*$|no digits/.test(shown.out || ""),
    "then the new model's 18 maps and its own decode are shown", JSON.stringify(shown));
  await pick(s, files.good);
}

/** The pending state: the last output marked out of date, in words, the moment the input changes. */
async function pendingState(s) {
  await s.type("#ex-input", "7 3 0 9 5");
  const during = await s.js(`const i = document.querySelector('#ex-input');
    i.value = '1 2 3 4'; i.dispatchEvent(new Event('input', { bubbles: true }));
    const o = document.querySelector('#ex-output');
    return { busy: o.getAttribute('aria-busy'), status: document.querySelector('#ex-status').textContent,
      opacity: getComputedStyle(o).opacity, out: (document.querySelector('#ex-result') || {}).textContent };`);
  check(during.busy === "true" && /out of date/.test(during.status) && Number(during.opacity) < 1,
    "while a decode is pending the last output is faded, marked busy and said to be out of date", JSON.stringify(during));
  await s.settle();
  const after = await s.js(`const o = document.querySelector('#ex-output');
    return { busy: o.getAttribute('aria-busy'), status: document.querySelector('#ex-status').textContent,
      opacity: getComputedStyle(o).opacity, out: document.querySelector('#ex-result').textContent };`);
  check(after.busy === null && after.status === "" && after.opacity === "1" && after.out === "4 3 2 1",
    "once decoded, the new output is shown without the mark", JSON.stringify(after));
}

/** A click or a tap on a map reads the cell under it, and the keyboard goes on from there. */
async function pointer(s) {
  await s.type("#ex-input", "7 3 0 9 5");
  const canvas = 'canvas[data-kind="cross"][data-layer="1"][data-head="0"]';
  const readout = '.ex-readout[data-kind="cross"][data-layer="1"]';
  // The cell's size from the canvas alone: 34 px of labels left, 32 above, 2 for the frame.
  const geo = await s.js(`const c = document.querySelector('${canvas}'), st = explorer.state;
    const step = st.result.steps[st.result.steps.length - 1];
    const rows = step.input.length, cols = st.digits.length + 1;
    return { rows, cols, cell: (parseFloat(c.style.width) - 36) / cols };`);
  const want = (i, j) => s.js(`const st = explorer.state, step = st.result.steps[st.result.steps.length - 1];
    return step.weights[1].cross_attn[0 * step.input.length * 14 + ${i} * 14 + ${j}].toFixed(3);`);
  for (const [type, i, j] of [["mouse", 3, 2], ["touch", 1, 4]]) {
    await s.js("document.querySelector('#ex-input').focus()"); // each time onto a map without the focus
    await s.pointer(canvas, 34 + (j + 0.5) * geo.cell, 32 + (i + 0.5) * geo.cell, type);
    const text = await s.text(readout);
    check(text.includes(`row ${i} `) && text.includes(`column ${j} `) && text.endsWith(`weight ${await want(i, j)}`),
      `a ${type === "mouse" ? "click" : "tap"} on the cell at row ${i}, column ${j} reads that cell`, text);
  }
  await s.keys("\uE014"); // → from the tapped cell
  const text = await s.text(readout);
  check(await s.js(`return document.activeElement === document.querySelector('${canvas}')`)
    && text.includes("row 1 ") && text.includes("column 5 "), "the map has the focus and → moves on from the tapped cell", text);
  // The cursor's ring goes with the focus.
  const ring = `const c = document.querySelector('${canvas}'), g = c.getContext('2d'), k = c.width / parseFloat(c.style.width);
    const cell = (parseFloat(c.style.width) - 36) / ${geo.cols};
    const p = g.getImageData(Math.round((34 + 5 * cell + 1) * k), Math.round((32 + 1.5 * cell) * k), 1, 1).data;
    return p[0] > 200 && p[1] > 60 && p[1] < 120 && p[2] < 60;`;
  const before = await s.js(ring);
  await s.js("document.querySelector('#ex-input').focus()");
  const after = await s.js(ring);
  check(before && !after && await s.js("return explorer.state.cursor === null"),
    "the keyboard's cursor is drawn while its map has the focus, and goes when the focus leaves", `ring ${before} then ${after}`);
}

/** Arrow keys on the explorer's buttons are not the book's: the page stays. */
async function arrowKeys(s, url) {
  await s.type("#ex-input", "7 3 0 9 5");
  await s.js("window.__explorerArrowMark = 1");
  for (const css of [".ex-step-button", "#ex-reset"]) {
    await s.js(`document.querySelector('${css}').focus()`);
    await s.keys("\uE014", "\uE012"); // → ←
    await new Promise((r) => setTimeout(r, 400));
    const stayed = await s.js("return location.href === arguments[0] && window.__explorerArrowMark === 1", url)
      .catch(() => false);
    check(stayed, `→ and ← on ${css} do not turn the book's page`, await s.js("return location.href"));
    if (!stayed) {
      await s.open(url);
      await s.until(ready, "the explorer to start");
      await s.settle();
      await s.type("#ex-input", "7 3 0 9 5");
      await s.js("window.__explorerArrowMark = 1");
    }
  }
}

/**
 * Leaving the page and coming back (Back, then a reload, so that no browser
 * cache can keep the page alive for us) brings back the input, the switched-off
 * heads and the chosen step.
 */
async function backButton(s, url) {
  await s.type("#ex-input", "7 3 0 9 5");
  await s.click('input.ex-head[data-kind="cross"][data-layer="0"][data-head="2"]');
  await s.settle(); // the decode rebuilds the steps' table
  await s.click('tr.ex-step[data-step="1"] .ex-step-button');
  await s.settle();
  const look = () => s.js(`return [document.querySelector('#ex-input').value,
    document.querySelector('#ex-off').textContent, document.querySelector('#ex-step').value].join(' | ')`);
  const before = await look();
  await s.open(new URL("introduction.html", url).href);
  // chromedriver's Back now and then times out while the page it leaves is torn down
  // ("aborted by navigation: Not attached to an active page", once in CI) although the
  // browser goes back all the same: that is not the page's fault, so wait for the URL,
  // and let a poll that lands mid-navigation try again.
  try {
    await s.cmd("POST", "/back", {});
  } catch (e) {
    if (!/"error":"timeout"/.test(String(e.message ?? e))) throw e;
  }
  await s.until("return location.href === " + JSON.stringify(url), "Back", 15000, { navigating: true });
  // The mark goes with the old page: waiting for it to be gone waits for the reload.
  await s.js("window.__explorerBeforeReload = 1; setTimeout(() => location.reload(), 0)");
  await s.until(`return !window.__explorerBeforeReload && (${ready.replace("return ", "")})`,
    "the explorer to start again");
  await s.settle();
  const after = await look();
  check(after === before, "Back to the page (and a reload) brings back the input, the switched-off heads and the chosen step",
    `${before} → ${after}`);
  await s.click("#ex-all-on");
  await s.settle();
}

/** The step the reader chose survives a new decode while the new run has it. */
async function chosenStep(s) {
  await s.type("#ex-input", "7 3 0 9 5");
  await s.click('tr.ex-step[data-step="1"] .ex-step-button');
  await s.click('input.ex-head[data-kind="cross"][data-layer="0"][data-head="3"]');
  await s.settle();
  const shown = () => s.js("return [document.querySelector('#ex-step').value, document.querySelector('#ex-step-label').textContent]");
  let [value, label] = await shown();
  check(value === "2" && label.startsWith("2 of"), "step 2, chosen, is still shown after a head is switched off", label);
  await s.type("#ex-input", "1 2 3");
  [value, label] = await shown();
  check(value === "2" && label.startsWith("2 of 4"), "and after a new input that has a step 2", label);
  await s.type("#ex-input", "7 3 0 9 5");
  await s.click('tr.ex-step[data-step="5"] .ex-step-button');
  await s.type("#ex-input", "1 2 3");
  [value, label] = await shown();
  check(value === "4" && label.startsWith("4 of 4"), "a chosen step 6 falls back to the last step of a run of 4", label);
  await s.click("#ex-all-on");
  await s.settle();
}

/** The maps are sharp after a zoom (a new device pixel ratio), not only after the next decode. */
async function zoom(s) {
  await s.type("#ex-input", "7 3 0 9 5");
  const sharp = `const c = document.querySelector('#ex-maps canvas');
    return [window.devicePixelRatio, c.width, Math.round(parseFloat(c.style.width) * window.devicePixelRatio)];`;
  const size = await s.js("return [window.innerWidth, window.innerHeight]");
  await s.cdp("Emulation.setDeviceMetricsOverride", { width: size[0], height: size[1], deviceScaleFactor: 2, mobile: false });
  try {
    await s.until("return window.devicePixelRatio === 2", "the zoom", 5000);
    await new Promise((r) => setTimeout(r, 300));
    const [ratio, width, want] = await s.js(sharp);
    check(ratio === 2 && width === want, "after a zoom to twice the pixels the maps are drawn at the new ratio",
      `ratio ${ratio}: canvas ${width} px wide, ${want} wanted`);
  } finally {
    await s.cdp("Emulation.clearDeviceMetricsOverride");
  }
}

/** A click on a half-switched layer box switches the layer on, as its look says. */
async function layerBox(s) {
  await s.type("#ex-input", "7 3 0 9 5");
  await s.click('input.ex-head[data-kind="cross"][data-layer="0"][data-head="1"]');
  await s.settle();
  const half = await s.js("const b = document.querySelector('input.ex-sublayer[data-kind=\"cross\"][data-layer=\"0\"]'); return b.indeterminate");
  await s.click('input.ex-sublayer[data-kind="cross"][data-layer="0"]');
  await s.settle();
  const after = await s.js(`const b = document.querySelector('input.ex-sublayer[data-kind="cross"][data-layer="0"]');
    return { off: explorer.state.off.cross[0], checked: b.checked, half: b.indeterminate };`);
  check(half && after.off.every((o) => !o) && after.checked && !after.half,
    "a click on a half-switched layer box switches all its heads on", JSON.stringify(after));
  await s.click('input.ex-sublayer[data-kind="cross"][data-layer="0"]');
  await s.settle();
  check(await s.js("return explorer.state.off.cross[0].every((o) => o)"), "and a click on a full one switches them all off");
  await s.click("#ex-all-on");
  await s.settle();
}

/** The shipped weights are named by the checksum of what they were exported from, not a path and a date. */
async function shippedName(s) {
  await s.click("#ex-reset");
  await s.settle();
  const text = fs.readFileSync(path.join(repo, "book/src/explorer/weights.js"), "utf8");
  const shipped = JSON.parse(text.slice(text.indexOf("{", text.indexOf("EXPLORER_WEIGHTS"))).trim().replace(/;$/, ""));
  const sum = readSafetensors(Buffer.from(shipped.safetensors_base64, "base64")).metadata.checksum;
  const label = await s.text("#ex-weights");
  check(/^fnv1a64:[0-9a-f]{16}$/.test(sum) && label.includes(sum) && !/\d{4}-\d{2}-\d{2}|checkpoints\//.test(label),
    `the course's weights are named by their checksum (${sum}), with no path or date`, label);
}

/** With every cross-attention head off, the page says why every input gives the same answer. */
async function crossOffNote(s) {
  await s.type("#ex-input", "7 3 0 9 5");
  const note = "return (() => { const n = document.querySelector('#ex-cross-note'); return n && n.getClientRects().length > 0 ? n.textContent : null; })()";
  check(await s.js(note) === null, "no note while cross-attention is on");
  await s.click('input.ex-sublayer[data-kind="cross"][data-layer="0"]');
  await s.settle();
  check(await s.js(note) === null, "nor with one layer's cross-attention off");
  await s.click('input.ex-sublayer[data-kind="cross"][data-layer="1"]');
  await s.settle();
  const first = await s.js(outputText);
  await s.type("#ex-input", "1 2 3 4 5 6 7");
  const text = await s.js(note);
  check(text !== null && /cannot read the source/.test(text) && await s.js(outputText) === first,
    "with both layers' cross-attention off a note says the decoder cannot read the source, and another input gives the same output",
    `${text}; outputs ${first} and ${await s.js(outputText)}`);
  await s.click("#ex-all-on");
  await s.settle();
  check(await s.js(note) === null, "switched back on, the note goes");
}

/** Two loads in flight, in both orders: the reader's last pick wins, and nothing else is ever shown after it. */
async function overlapping(s, files) {
  for (const order of [[files.big, files.other], [files.other, files.big]]) {
    await pick(s, files.good);
    await s.js(recorder());
    const names = order.map((f) => path.basename(f));
    const picker = await s.find("#ex-file");
    for (const f of order) await s.cmd("POST", `/element/${picker}/value`, { text: f });
    await s.until(`return !explorer.state.loading && document.querySelector('#ex-weights').textContent.includes(${JSON.stringify(names[1])})`,
      `${names[1]} to load`, 60000).catch(() => {});
    await s.settle();
    // Long enough for a load that was not cancelled to have ended.
    await new Promise((r) => setTimeout(r, names[0] === "big.safetensors" ? 6000 : 500));
    const rec = await s.js("return window.__rec");
    const label = await s.text("#ex-weights");
    const wrong = rec.labels.filter((l) => !l.label.includes(l.picks[l.picks.length - 1] ?? "\u0000"));
    check(label.includes(names[1]) && wrong.length === 0 && rec.picks.length === 2,
      `${names[0]} picked, then ${names[1]} at once: the last pick is loaded, and no other is shown after it`,
      `now ${label}; ${wrong.map((l) => `shown ${l.label} after picks ${l.picks}`).join("; ")}`);
  }
  // Cancelled by hand: the weights stay.
  await pick(s, files.good);
  const picker = await s.find("#ex-file");
  await s.cmd("POST", `/element/${picker}/value`, { text: files.big });
  await s.until("return !document.querySelector('#ex-loading').hidden", "the progress bar");
  await s.click("#ex-cancel");
  await new Promise((r) => setTimeout(r, 6000));
  const after = await s.js(`return { label: document.querySelector('#ex-weights').textContent,
    msg: document.querySelector('#ex-load-message').textContent, bar: document.querySelector('#ex-loading').hidden };`);
  check(/cancelled/.test(after.msg) && after.label.includes("reverse_transformer.safetensors") && after.bar,
    "Cancel stops the load of a large file and the page keeps the weights it had", JSON.stringify(after));
}

/** A 160 MB checkpoint loads while the reader types: progress shown, no task over 200 ms. */
async function largeFile(s, files) {
  await pick(s, files.good);
  await s.type("#ex-input", "");
  const mb = (fs.statSync(files.big).size / 1e6).toFixed(0);
  await s.js(`window.__longest = 0; window.__longtasks = [];
    new PerformanceObserver((l) => { for (const e of l.getEntries()) { window.__longest = Math.max(window.__longest, e.duration);
      window.__longtasks.push(Math.round(e.duration)); } }).observe({ type: 'longtask' });
    window.__progress = [];
    new MutationObserver(() => { const p = document.querySelector('#explorer progress');
      if (p && p.getClientRects().length > 0) window.__progress.push([p.value, p.parentElement.textContent]); })
      .observe(document.querySelector('#explorer'), { subtree: true, attributes: true, characterData: true, childList: true });
    return true;`);
  // The observer is seen to work: a task of 250 ms of the test's own is reported.
  await s.js("setTimeout(() => { const t = performance.now(); while (performance.now() - t < 250); }, 0)");
  const control = await s.until("return window.__longest >= 250 && window.__longest", "the long-task observer", 5000).catch(() => 0);
  check(control >= 250, "the long-task observer reports a task of 250 ms", `${Math.round(control)} ms`);
  await s.js("window.__longest = 0; window.__longtasks = [];");
  const started = Date.now();
  const picker = await s.find("#ex-file");
  const runs = await s.js("return explorer.state.runs");
  await s.cmd("POST", `/element/${picker}/value`, { text: files.big });
  // Typing while it loads, one key at a time as a reader types; then a pause, in
  // which the page must decode what was typed with the weights it still runs.
  const input = await s.find("#ex-input");
  for (const key of "7 3 0 9 5") {
    await s.cmd("POST", `/element/${input}/value`, { text: key });
    await new Promise((r) => setTimeout(r, 60));
  }
  const paused = await s.until(`const st = explorer.state;
    return (st.runs > ${runs} || !st.loading) && { loading: !!st.loading, out: (document.querySelector('#ex-result') || {}).textContent };`,
  "a decode or the end of the load", 60000);
  check(paused.loading && paused.out === "5 9 0 3 7", "the page decodes what is typed while the file loads", JSON.stringify(paused));
  for (const key of " 1 2 4") {
    await s.cmd("POST", `/element/${input}/value`, { text: key });
    await new Promise((r) => setTimeout(r, 60));
  }
  const { msg } = await (async () => {
    const m = await s.until(`const m = document.querySelector('#ex-load-message').textContent; return !/^Reading/.test(m) && m;`,
      "the large file to load", 120000);
    return { msg: m };
  })();
  const loadMs = Date.now() - started;
  await s.until("return !explorer.state.pending", "the large model's decode", 60000);
  const seen = await s.js("return { longest: window.__longest, tasks: window.__longtasks, progress: window.__progress }");
  const mid = seen.progress.filter(([v, t]) => v > 0 && v < 1 && /\d+%/.test(t));
  check(msg.startsWith("Loaded big.safetensors"), `a ${mb} MB checkpoint loads`, `${msg.slice(0, 120)} (${loadMs} ms)`);
  check(mid.length >= 3, "its progress is shown as it loads", `${mid.length} updates, e.g. ${JSON.stringify(mid[Math.floor(mid.length / 2)] || null)}`);
  check(seen.longest < 200, `no task on the page's thread over 200 ms while it loads and the reader types`,
    `longest ${seen.longest.toFixed(0)} ms; long tasks ${JSON.stringify(seen.tasks.slice(0, 8))}`);
  console.log(`     ${mb} MB checkpoint loaded in ${(loadMs / 1000).toFixed(1)} s while typing; longest task ${seen.longest.toFixed(0)} ms`);
  await pick(s, files.good);
}

/**
 * In a browser that gives the page no worker: the same file loads in slices on
 * the page's thread, with no task over 200 ms while it is read, and the last pick wins.
 */
async function noWorker(url, files) {
  const profile = fs.mkdtempSync(path.join(args.work, "noworker-"));
  const p = await Session.start(profile);
  try {
    await p.cdp("Page.addScriptToEvaluateOnNewDocument", { source: "delete window.Worker; window.Worker = undefined;" });
    await p.open(url);
    await p.until(ready, "the explorer to start (no worker)");
    await p.settle();
    await p.type("#ex-input", "7 3 0 9 5");
    check(await p.js("return explorer.state.worker === false") && await p.text(result) === "5 9 0 3 7",
      "without a worker the page decodes on its own thread");
    await p.js(recorder());
    await p.js(`window.__tasks = []; window.__loadedAt = null;
      new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__tasks.push([e.startTime, e.duration]); })
        .observe({ type: 'longtask' });
      new MutationObserver(() => { if (!window.__loadedAt && /^Loaded big/.test(document.querySelector('#ex-load-message').textContent))
        window.__loadedAt = performance.now(); }).observe(document.querySelector('#ex-load-message'), { childList: true, characterData: true, subtree: true });
      return true;`);
    const picker = await p.find("#ex-file");
    // The large file, then at once the small one: the small one is the last pick.
    for (const f of [files.big, files.other]) await p.cmd("POST", `/element/${picker}/value`, { text: f });
    await p.until("return !explorer.state.loading && document.querySelector('#ex-weights').textContent.includes('other-shape')",
      "other-shape.safetensors to load (no worker)", 60000);
    await p.settle();
    await new Promise((r) => setTimeout(r, 3000));
    const rec = await p.js("return window.__rec");
    const wrong = rec.labels.filter((l) => !l.label.includes(l.picks[l.picks.length - 1] ?? "\u0000"));
    check(wrong.length === 0 && (await p.text("#ex-weights")).includes("other-shape"),
      "without a worker too, a large file and then a small one: the small one, the last pick, is loaded and nothing else shown",
      wrong.map((l) => l.label).join("; "));
    // The large file on its own, read in slices on the page's thread.
    await p.js("window.__tasks = [];");
    await p.cmd("POST", `/element/${picker}/value`, { text: files.big });
    const msg = await p.until("const m = document.querySelector('#ex-load-message').textContent; return !/^Reading/.test(m) && m;",
      "the large file to load (no worker)", 120000);
    const tasks = await p.js("return window.__tasks.filter(([t]) => t < window.__loadedAt).map(([, d]) => Math.round(d))");
    check(msg.startsWith("Loaded big.safetensors") && Math.max(0, ...tasks) < 200,
      "without a worker the large file is read in slices, no task over 200 ms until it is loaded",
      `${msg.slice(0, 60)}; long tasks ${JSON.stringify(tasks.slice(0, 8))}`);
  } finally {
    await p.quit().catch(() => {});
  }
}

/** At a phone's width: nothing spills out sideways. */
async function phone(url, looks) {
  const profile = fs.mkdtempSync(path.join(args.work, "phone-"));
  // A desktop window cannot be made as narrow as a phone: the phone is emulated.
  const p = await Session.start(profile, "500,2400", { width: 390, height: 2400, pixelRatio: 1 });
  try {
    await p.open(url);
    await p.until(ready, "the explorer to start (phone)");
    await p.settle();
    // Nothing sticks out of the explorer's box, but what scrolls inside a box of its own.
    const m = await p.js(`const box = document.querySelector('#explorer'), e = box.getBoundingClientRect();
      const out = Array.from(box.querySelectorAll('*')).filter((x) => !x.closest('.ex-scroll')
        && x.getClientRects().length > 0 && x.getBoundingClientRect().right > e.right + 1)
        .map((x) => x.id || x.tagName.toLowerCase() + '.' + x.className);
      return { inner: window.innerWidth, scroll: document.documentElement.scrollWidth, right: Math.round(e.right),
        table: Math.round(document.querySelector('#ex-steps').getBoundingClientRect().width),
        out: Array.from(new Set(out)).slice(0, 5) };`);
    check(m.inner <= 420 && m.scroll <= m.inner && m.right <= m.inner && m.out.length === 0,
      `at a phone's width (${m.inner} px) nothing spills sideways`, JSON.stringify(m));
    if (looks) await p.shot("#explorer", path.join(looks, "explorer_phone.png"));
  } finally {
    await p.quit().catch(() => {});
  }
}

async function timing(s) {
  for (const digits of ["7 3 0 9 5", "9 8 7 6 5 4 3 2 1 0 1 2"]) {
    await s.type("#ex-input", digits);
    const ms = await s.js("return explorer.time(21)");
    const steps = await s.js("return explorer.state.result.steps.length");
    console.log(`     ${digits}: greedy decode (${steps} decoder steps) and all maps: ${ms.toFixed(1)} ms (median of 21)`);
  }
}

/** One check's exception is its failure, not the end of the run; each starts on the page. */
async function step(url, what, f) {
  try {
    const here = await s.js("return location.href");
    if (here !== url) {
      if (what !== "the basics" && /^(file|https?):/.test(here)) console.log(`     (the browser had left the page for ${here}; opening it again)`);
      await s.open(url);
      await s.until(ready, "the explorer to start");
      await s.settle();
    }
    await f();
  } catch (e) {
    const where = await s.js("return location.href").catch(() => "?");
    check(false, what, `${e.message.split("\n")[0].slice(0, 300)} (page: ${where})`);
  }
}

const files = checkpoints();
const profile = fs.mkdtempSync(path.join(args.work, "profile-"));
const s = await Session.start(profile);
try {
  for (const [k, url] of args.url.entries()) {
    const first = k === 0;
    console.log(`---- ${url}`);
    await step(url, "the basics", () => basics(s, url, first ? args.shots : null));
    await step(url, "input errors", () => rangeAndErrors(s));
    await step(url, "loading files", () => loading(s, files, first ? args.shots : null));
    await step(url, "the theme switch", () => themeSwitch(s));
    await step(url, "keyboard and names", () => keyboard(s, first ? args.looks : null));
    await step(url, "typing", () => typing(s));
    await step(url, "the stale model", () => staleModel(s, files));
    await step(url, "the pending state", () => pendingState(s));
    await step(url, "pointer", () => pointer(s));
    await step(url, "arrow keys", () => arrowKeys(s, url));
    await step(url, "the chosen step", () => chosenStep(s));
    await step(url, "Back", () => backButton(s, url));
    await step(url, "zoom", () => zoom(s));
    await step(url, "the layer box", () => layerBox(s));
    await step(url, "the shipped weights' name", () => shippedName(s));
    await step(url, "cross-attention off", () => crossOffNote(s));
    if (first) await step(url, "overlapping loads", () => overlapping(s, files));
    if (first) await step(url, "a large file", () => largeFile(s, files));
    if (first) await step(url, "without a worker", () => noWorker(url, files));
    await step(url, "contrast", () => contrast(s, files));
    if (first && args.looks) {
      await step(url, "dark screenshot", async () => {
        await s.type("#ex-input", "7 3 0 9 5");
        await setTheme(s, "navy");
        await s.shot("#explorer", path.join(args.looks, "explorer_navy.png"));
        await setTheme(s, "light");
      });
    }
    await step(url, "phone width", () => phone(url, first ? args.looks : null));
    if (first) await step(url, "timing", () => timing(s));
  }
} finally {
  await s.quit().catch(() => {});
}
console.log(failures ? `${failures} check(s) failed` : "all checks passed");
process.exit(failures ? 1 : 0);
