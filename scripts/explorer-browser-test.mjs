// The Node side of scripts/explorer-browser-test.sh: drives the attention
// explorer (book/build/explorer.html) in headless Chromium through chromedriver's
// WebDriver HTTP API, with nothing but Node 20's fetch, the way a reader uses it:
// types digits, reads the output, switches heads off with the mouse and the
// keyboard, reads weights with the arrow keys, picks checkpoints (the same file
// again after it changed, damaged and crafted ones, an older version's), switches the book's theme,
// checks the contrast of every piece of text in all five themes, every control's
// name and its place in the Tab order, and the page at a phone's width. Takes the
// book's screenshots, and more to look at (a dark theme, a phone). Exits 1 if any
// check failed.
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
  async shot(css, file) {
    const png = await this.cmd("GET", `/element/${await this.find(css)}/screenshot`);
    fs.writeFileSync(file, Buffer.from(png, "base64"));
    console.log(`     screenshot ${file}`);
  }
  async until(script, what, ms = 15000) {
    const end = Date.now() + ms;
    for (;;) {
      const v = await this.js(script);
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
/** FNV-1a 64 (workbench/src/checkpoint.rs `checksum`) as 16 hex digits, in two 32-bit halves. */
function fnv1a64(bytes) {
  let hi = 0xcbf29ce4, lo = 0x84222325;
  for (let i = 0; i < bytes.length; i++) {
    lo = (lo ^ bytes[i]) >>> 0;
    const p = lo * 0x1b3;
    const carry = Math.floor(p / 0x100000000);
    const newLo = p % 0x100000000;
    hi = (hi * 0x1b3 + carry + ((lo << 8) >>> 0)) % 0x100000000;
    lo = newLo;
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
  // A checkpoint of the course's older versions: loaded, with a note of what is unchecked.
  const older = writeCheckpoint(w("older.safetensors"), model, () => {}, { older: true });
  return { model, good, zeros, damaged, crafted, older };
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
  ({ msg } = await pick(s, older));
  check(msg.startsWith("Loaded") && msg.includes("Note: older.safetensors was saved by an older version of the course") &&
    await s.text(result) === "5 9 0 3 7", "a checkpoint of an older version loads, with load_checkpoint's note", msg);
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
