// The Node side of scripts/explorer-browser-test.sh: drives the attention
// explorer (book/build/explorer.html) in headless Chromium through chromedriver's
// WebDriver HTTP API, with nothing but Node 20's fetch, the way a reader uses it:
// types digits, reads the output, switches heads off, loads a checkpoint and a
// damaged one, and takes the book's screenshots. Exits 1 on the first failed check.
//
//   node scripts/explorer-browser-test.mjs --driver URL --chrome PATH --url URL
//        [--url URL]... --shots DIR --work DIR [--checkpoint FILE]
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const args = { url: [] };
for (let i = 2; i < process.argv.length; i += 2) {
  const [k, v] = [process.argv[i].replace(/^--/, ""), process.argv[i + 1]];
  if (k === "url") args.url.push(v);
  else args[k] = v;
}
const repo = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const ELEMENT = "element-6066-11e4-a52e-4f735466cecf";
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
  static async start(profile) {
    const value = await wd("POST", "/session", {
      capabilities: {
        alwaysMatch: {
          browserName: "chrome",
          "goog:chromeOptions": {
            binary: args.chrome,
            args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--hide-scrollbars", `--user-data-dir=${profile}`, "--window-size=1100,3200",
              "--force-device-scale-factor=1"],
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
  async click(css) { return this.cmd("POST", `/element/${await this.find(css)}/click`, {}); }
  async type(css, text) {
    const e = await this.find(css);
    await this.cmd("POST", `/element/${e}/clear`, {});
    return this.cmd("POST", `/element/${e}/value`, { text });
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
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  quit() { return this.cmd("DELETE", "", undefined); }
}

// ---- checkpoints to load ------------------------------------------------------------
// A checkpoint as 09_train_reverse writes it (fp32): the reader's own if there is
// one, else the shipped fp16 weights written out as fp32, with the checksum of
// those fp32 bytes (the shipped metadata keeps the original checkpoint's, which
// widening fp16 values cannot reproduce). And a damaged copy:
// the same file with its last kilobyte cut off, as an interrupted copy leaves it.
function checkpoints() {
  let good = args.checkpoint && fs.existsSync(args.checkpoint) ? args.checkpoint : null;
  if (!good) {
    const C = require(path.join(repo, "book/src/explorer/checkpoint.js"));
    require(path.join(repo, "book/src/explorer/weights.js"));
    const half = C.from_base64(globalThis.EXPLORER_WEIGHTS.safetensors_base64);
    const { header_len, header } = C.read_header(half, "weights.js");
    const data = new DataView(half.buffer, 8 + header_len);
    const out = { __metadata__: { ...header.__metadata__ } };
    const chunks = [];
    let offset = 0;
    for (const name of Object.keys(header).filter((k) => k !== "__metadata__").sort()) {
      const { shape, data_offsets: [start, end] } = header[name];
      const values = new Float32Array((end - start) / 2);
      for (let i = 0; i < values.length; i++) values[i] = C.half_to_float(data.getUint16(start + 2 * i, true));
      out[name] = { dtype: "F32", shape, data_offsets: [offset, offset + 4 * values.length] };
      offset += 4 * values.length;
      chunks.push(Buffer.from(values.buffer));
    }
    const data32 = Buffer.concat(chunks);
    out.__metadata__.checksum = `fnv1a64:${C.fnv1a64(data32)}`;
    let json = Buffer.from(JSON.stringify(out));
    json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]);
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(json.length));
    good = path.join(args.work, "reverse_transformer.safetensors");
    fs.writeFileSync(good, Buffer.concat([len, json, data32]));
  }
  const bytes = fs.readFileSync(good);
  const damaged = path.join(args.work, "damaged.safetensors");
  fs.writeFileSync(damaged, bytes.subarray(0, bytes.length - 1024));
  return { good: path.resolve(good), damaged: path.resolve(damaged) };
}

// ---- the checks ------------------------------------------------------------------------
const ready = "return !!(window.explorer && document.querySelector('#ex-result'))";
const result = "#ex-result";

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
  await s.type("#ex-input", "7 3 0 9 5");
  let out = await s.text(result);
  check(out === "5 9 0 3 7", `${url}: 7 3 0 9 5 gives 5 9 0 3 7`, out);
  const peaks = await s.js(antiDiagonal);
  // The row that writes <eos> may look at the source <eos> or at its first digit
  // (chapter 11 shows both models); the digit rows must mirror the source.
  check(JSON.stringify(peaks.slice(0, 5)) === JSON.stringify([4, 3, 2, 1, 0]),
    "the last layer's cross-attention peaks on the anti-diagonal", `row peaks at columns ${JSON.stringify(peaks)}`);
  if (!shots) return;
  await s.shot("#explorer", path.join(shots, "explorer_reverse.png"));

  // One head off: its map says so and the probabilities move.
  const before = await s.js("return Array.from(explorer.state.result.steps[0].logits)");
  await s.click('input.ex-head[data-kind="cross"][data-layer="1"][data-head="0"]');
  const after = await s.js("return Array.from(explorer.state.result.steps[0].logits)");
  const moved = Math.max(...before.map((v, i) => Math.abs(v - after[i])));
  check(moved > 1e-4, "switching off cross-attention head 0 of layer 1 changes the logits",
    `largest change ${moved.toFixed(3)}; output now ${await s.text(result)}`);
  const offMaps = await s.js("return document.querySelectorAll('figure.ex-map-off').length");
  check(offMaps === 1, "its map is marked off", `${offMaps} map(s) marked`);
  await s.click("#ex-all-on");

  // Layer 0's cross-attention off, then both layers': the reversal breaks.
  await s.click('input.ex-sublayer[data-kind="cross"][data-layer="0"]');
  out = await s.text(result);
  console.log(`     cross-attention of layer 0 off: output ${out}`);
  await s.click('input.ex-sublayer[data-kind="cross"][data-layer="1"]');
  out = await s.text(result);
  check(out !== "5 9 0 3 7", "every cross-attention head off breaks the reversal", `output ${out}`);
  await s.shot("#explorer", path.join(shots, "explorer_cross_off.png"));
  await s.click("#ex-all-on");
  check(await s.text(result) === "5 9 0 3 7", "switched back on, it reverses again");
}

async function rangeAndErrors(s, shots) {
  await s.type("#ex-input", "4 2");
  const notice = await s.text("#ex-notice");
  check(/Outside the training range/.test(notice), "2 digits: a notice says outside the training range", notice);
  await s.type("#ex-input", "1234567890123");
  check(/13 digits is too many/.test(await s.text("#ex-notice")), "13 digits: refused with a message");
  await s.type("#ex-input", "7 3 x");
  check(/'x' is not a digit/.test(await s.text("#ex-notice")), "a letter: refused with a message");
}

async function loading(s, shots) {
  const { good, damaged } = checkpoints();
  await s.type("#ex-input", "7 3 0 9 5");
  const picker = await s.find("#ex-file");
  await s.cmd("POST", `/element/${picker}/value`, { text: good });
  const loaded = await s.until(
    "const m = document.querySelector('#ex-load-message').textContent; return /^Loaded|^Not loaded/.test(m) && m;",
    "the checkpoint to load");
  check(loaded.startsWith("Loaded"), `a checkpoint as 09_train_reverse writes it loads (${path.basename(good)})`, loaded);
  check(await s.text(result) === "5 9 0 3 7", "and reverses 7 3 0 9 5");
  await s.cmd("POST", `/element/${picker}/value`, { text: damaged });
  const msg = await s.until(
    "const m = document.querySelector('#ex-load-message').textContent; return /^Not loaded/.test(m) && m;",
    "the damaged file's message");
  check(/damaged\.safetensors is \d+ bytes, but a checkpoint of its configuration .* the file is damaged/.test(msg),
    "a damaged checkpoint is refused with a message", msg);
  check(await s.text(result) === "5 9 0 3 7", "and the page keeps the weights it had");
  if (shots) await s.shot(".ex-weights-bar", path.join(shots, "explorer_damaged.png"));
  await s.click("#ex-reset");
}

async function timing(s) {
  for (const digits of ["7 3 0 9 5", "9 8 7 6 5 4 3 2 1 0 1 2"]) {
    await s.type("#ex-input", digits);
    const ms = await s.js("return explorer.time(21)");
    const steps = await s.js("return explorer.state.result.steps.length");
    console.log(`     ${digits}: greedy decode (${steps} decoder steps) and all maps: ${ms.toFixed(1)} ms (median of 21)`);
  }
}

const profile = fs.mkdtempSync(path.join(args.work, "profile-"));
const s = await Session.start(profile);
try {
  const [first, ...rest] = args.url;
  await basics(s, first, args.shots);
  await rangeAndErrors(s, args.shots);
  await loading(s, args.shots);
  await timing(s);
  for (const url of rest) await basics(s, url, null);
} catch (e) {
  check(false, "the browser session", e.message);
} finally {
  await s.quit().catch(() => {});
}
console.log(failures ? `${failures} check(s) failed` : "all checks passed");
process.exit(failures ? 1 : 0);
