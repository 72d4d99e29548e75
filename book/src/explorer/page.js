// The attention explorer's page (explorer.md): an input box, the greedy decode
// step by step, every attention map as a heatmap, heads to switch off, and a
// file picker for the reader's own checkpoint. The model is model.js; the weights
// come from weights.js or from the picked file (checkpoint.js).
//
// What the reader does must never be lost or misreported, and what is on screen
// always belongs to one model and one input. The page has one owner of that
// state: every choice of weights (`modelGen`) and every decode (`generation`)
// is numbered, and whatever answers a choice or a decode that has since been
// superseded is dropped, so the reader's last choice wins whatever finishes
// first. Taking new weights clears the last model's output and maps before
// anything else is drawn; while a decode is pending, what is shown is marked
// out of date. The controls are built once per model and only updated
// afterwards (a rebuilt checkbox would drop the keyboard's focus), and an input
// error clears everything the last run showed.
//
// A worker does the heavy work off the page's thread: decodes, and reading,
// checksumming and converting a picked checkpoint, a slice at a time with its
// progress shown, so that a large file never freezes the page and picking
// another one cancels it. Without a worker, both run here in slices.
"use strict";

(function () {
  const M = window.explorerModel;
  const C = window.explorerCheckpoint;
  const root = document.getElementById("explorer");
  if (!root || !M || !C) return;

  // The three kinds of attention, in the order the page shows them.
  const KINDS = [
    { key: "cross", title: "Cross-attention", short: "cross", note: "each decoder position reads the source" },
    { key: "encoder", title: "Encoder self-attention", short: "encoder self",
      note: "each source position reads the source" },
    { key: "decoder_self", title: "Decoder self-attention", short: "decoder self",
      note: "masked: each position reads itself and the ones before it" },
  ];
  /** How long typing must pause before the page decodes (ms). */
  const TYPING_PAUSE = 150;

  const state = {
    model: null,
    weights_label: "",
    off: null, // which heads are off: { encoder, decoder_self, cross }[layer][head]
    result: null, // the last greedy decode
    digits: [],
    step: null, // the step whose maps are shown (null: the last one)
    last_ms: null,
    modelGen: 0, // the choice of weights whose model is shown
    pending: false, // a decode is waiting or running
    loading: null, // the file being read: { gen, name, when }
    runs: 0, // decodes finished (the browser test waits on it)
    loads: 0, // files picked and answered: loaded, refused or cancelled
    cursor: null, // the cell read with the keyboard: { kind, layer, head, i, j }
    worker: false, // whether decodes run in a worker, off the page's thread
    picked: null, // the name of the reader's own checkpoint, when one is shown
  };

  // ---- building the page -----------------------------------------------------
  function el(tag, attrs = {}, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (k === "class") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const c of children) e.append(c);
    return e;
  }

  const input = el("input", {
    id: "ex-input", type: "text", value: "7 3 0 9 5", autocomplete: "off", spellcheck: "false",
    inputmode: "numeric", "aria-describedby": "ex-notice", oninput: () => schedule(TYPING_PAUSE),
  });
  const timing = el("span", { id: "ex-timing", class: "ex-quiet" });
  // Says that what is shown is out of date while a decode is pending; its line is
  // kept while it is empty, so that nothing below it jumps at each keystroke.
  const status = el("p", { id: "ex-status", class: "ex-status" });
  const notice = el("p", { id: "ex-notice", class: "ex-notice", role: "status" });
  // Announced when it changes: the decoded digits and whether they are the reversal.
  const output = el("p", { id: "ex-output", class: "ex-output", "aria-live": "polite", "aria-atomic": "true" });
  const crossNote = el("p", { id: "ex-cross-note", class: "ex-notice ex-warning" },
    "Every cross-attention head is off, so the decoder cannot read the source at all: " +
    "whatever digits you give, it writes this same output.");
  crossNote.hidden = true;
  const steps = el("table", { id: "ex-steps", class: "ex-steps" });
  const offSummary = el("p", { id: "ex-off", class: "ex-off" });
  const stepPicker = el("input", { id: "ex-step", type: "range", min: "1", max: "1", value: "1",
    oninput: () => { state.step = Number(stepPicker.value) - 1; draw(); } });
  const stepLabel = el("span", { id: "ex-step-label" });
  const maps = el("div", { id: "ex-maps" });
  const howToRead = el("p", { class: "ex-quiet" },
    "Point at a cell, or tab to a map and use the arrow keys, to read its weight under the maps.");
  const weightsLabel = el("span", { id: "ex-weights" });
  const file = el("input", { id: "ex-file", type: "file", accept: ".safetensors", onchange: () => loadFile() });
  const reset = el("button", { id: "ex-reset", type: "button", onclick: () => useShipped() },
    "Back to the course's weights");
  const loadMessage = el("p", { id: "ex-load-message", role: "alert" });
  const progressBar = el("progress", { id: "ex-progress", max: "1", value: "0", "aria-labelledby": "ex-progress-text" });
  const progressText = el("span", { id: "ex-progress-text" });
  const cancel = el("button", { id: "ex-cancel", type: "button", onclick: () => cancelLoad() }, "Cancel");
  const loadingRow = el("div", { id: "ex-loading" }, progressBar, " ", progressText, " ", cancel);
  loadingRow.hidden = true;

  root.append(
    el("div", { class: "ex-bar" },
      el("label", { for: "ex-input" }, "Digits to reverse "), input, " ", timing),
    notice, status, output, crossNote,
    el("div", { class: "ex-scroll" }, steps),
    el("div", { class: "ex-bar" },
      el("label", { for: "ex-step" }, "Maps at decoding step "), stepPicker, " ", stepLabel),
    offSummary, howToRead, maps,
    el("div", { class: "ex-weights-bar" },
      el("div", {}, el("strong", {}, "Weights: "), weightsLabel),
      el("div", {}, el("label", { for: "ex-file" }, "Load your own checkpoint (from 09_train_reverse): "),
        file, " ", reset),
      loadingRow, loadMessage),
  );

  // ---- reading the input, like data.rs parse_digits and the CLI of chapter 10 --
  /** A character as the reader can see it, even when it is invisible. */
  function shown_char(c) {
    const code = `U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}`;
    return /[\p{L}\p{N}\p{P}\p{S}]/u.test(c) ? `'${c}'` : `the invisible character ${code}`;
  }

  function parse(text) {
    const digits = [];
    for (const c of text) {
      // Spaces, commas, and characters that only format text (zero-width spaces
      // and joiners, a byte-order mark: what a copy from a web page brings along).
      if (/[\s,\p{Cf}]/u.test(c)) continue;
      if (!/[0-9]/.test(c)) return { error: `${shown_char(c)} is not a digit: give digits 0-9, e.g. 7 3 0 9 5` };
      digits.push(Number(c));
    }
    if (digits.length === 0) {
      return { error: `no digits given: give ${M.MIN_LEN} to ${M.MAX_LEN} digits, e.g. 7 3 0 9 5` };
    }
    if (digits.length > M.MAX_LEN) {
      return { error: `${digits.length} digits is too many: the model was trained on at most ${M.MAX_LEN}` };
    }
    return { digits };
  }

  // ---- running the model ---------------------------------------------------------
  // Every change asks for a decode; only the latest one runs to the end. `generation`
  // tells a running decode that it has been overtaken.
  let generation = 0;
  let timer = null;

  // The decodes run in a worker when the browser gives the page one, so that even
  // a large model never holds up typing; the worker runs model.js's own source
  // (M.source) with the weights it is sent. Without one, they run here, a
  // decoder step at a time between keystrokes.
  let worker = null;
  let asked = 0; // the id of the last decode asked of the worker
  const answers = new Map(); // id → resolve
  // The reader's last choice of weights (the course's, or a file): a load or a
  // decode of any other is dropped. state.modelGen is the one on screen.
  let modelGen = 0;
  // The model when it lives on this thread: the course's weights, or a file read
  // here for want of a worker. A file read by the worker stays there.
  let localModel = null;
  const CANCELLED = new Error("cancelled");

  function startWorker() {
    try {
      // The worker owns the models it reads: `current`, the one the page shows,
      // and `candidate`, a file read but not yet taken by the page. Messages
      // carry the page's numbers, so it never decodes with weights the page has
      // left, and a load the page no longer wants stops at its next slice.
      const main = () => {
        const X = self.explorerModel;
        const Y = self.explorerCheckpoint;
        let current = null;
        let candidate = null;
        let latest = 0;
        const tick = () => new Promise((resolve) => {
          const channel = new MessageChannel();
          channel.port1.onmessage = () => resolve();
          channel.port2.postMessage(null);
        });
        const stop = new Error("cancelled");
        async function load({ gen, file }) {
          candidate = null;
          try {
            const loaded = await Y.load_file_in_slices(file, {
              progress: (fraction, what) => self.postMessage({ type: "progress", gen, fraction, what }),
              // A macrotask between slices, so that the page's next message
              // (another file, a decode) is heard while this one is read.
              pause: async () => {
                await tick();
                if (gen !== latest) throw stop;
              },
            });
            if (gen !== latest) return;
            candidate = { gen, model: loaded.model };
            self.postMessage({ type: "loaded", gen, config: loaded.config, note: loaded.note });
          } catch (e) {
            if (e === stop || gen !== latest) return;
            self.postMessage({ type: "refused", gen, message: e.message, detail: e.detail });
          }
        }
        self.onmessage = ({ data }) => {
          if (data.type === "set") {
            latest = data.gen;
            candidate = null;
            current = { gen: data.gen, model: new X.Transformer((name) => data.values[name], data.config) };
          } else if (data.type === "load") {
            latest = data.gen;
            load(data);
          } else if (data.type === "cancel") {
            latest = data.gen;
            candidate = null;
          } else if (data.type === "use") {
            if (candidate && candidate.gen === data.gen) [current, candidate] = [candidate, null];
          } else if (data.type === "decode") {
            // Run after the messages already waiting: a decode that a newer one
            // has overtaken meanwhile is answered empty, not run.
            if (queued) self.postMessage({ type: "decoded", id: queued.id, gen: queued.gen, result: null });
            queued = data;
            tick().then(decodeQueued);
          }
        };
        let queued = null;
        function decodeQueued() {
          const data = queued;
          queued = null;
          if (!data) return;
          if (!current || current.gen !== data.gen) {
            self.postMessage({ type: "decoded", id: data.id, gen: data.gen, result: null });
            return;
          }
          const started = performance.now();
          const result = X.greedy_decode(current.model, X.source_tensor(data.digits), X.SEQ_LEN, data.off);
          self.postMessage({ type: "decoded", id: data.id, gen: data.gen, result, ms: performance.now() - started });
        }
      };
      const url = URL.createObjectURL(new Blob([`${M.source}\n${C.source}\n(${main})();`], { type: "text/javascript" }));
      const w = new Worker(url);
      w.onmessage = ({ data }) => {
        if (data.type === "decoded") {
          const resolve = answers.get(data.id);
          answers.delete(data.id);
          if (resolve) resolve(data);
        } else if (data.type === "progress") {
          if (state.loading && data.gen === state.loading.gen) showProgress(data.fraction, data.what);
        } else if (data.type === "loaded") {
          accept(data.gen, data.config, data.note, null);
        } else if (data.type === "refused") {
          refused(data.gen, data.message, data.detail);
        }
      };
      w.onerror = () => {
        // A worker that cannot run: everything here instead, from now on.
        worker = null;
        state.worker = false;
        for (const resolve of answers.values()) resolve(null);
        answers.clear();
        const reading = state.loading && state.loading.file;
        if (!localModel) useShipped();
        if (reading) readFile(reading);
        schedule(0);
      };
      worker = w;
      state.worker = true;
    } catch (_) {
      worker = null;
      state.worker = false;
    }
  }

  /** A greedy decode in the worker with weights `gen`: { result, ms }, or null if the worker failed. */
  function askWorker(digits, off, gen) {
    const id = ++asked;
    return new Promise((resolve) => {
      answers.set(id, resolve);
      worker.postMessage({ type: "decode", id, gen, digits, off });
    });
  }

  function schedule(delay = 0) {
    remember();
    generation++;
    markPending(true);
    clearTimeout(timer);
    const mine = generation;
    timer = setTimeout(() => decode(mine), delay);
  }

  /** Marks what is on screen as out of date while a decode is pending, and clears the mark. */
  function markPending(pending) {
    state.pending = pending;
    root.classList.toggle("ex-pending", pending);
    if (pending) output.setAttribute("aria-busy", "true");
    else output.removeAttribute("aria-busy");
    status.textContent = pending && state.result ? "decoding… the output below is out of date" : pending ? "decoding…" : "";
  }

  /** Lets the browser handle waiting keystrokes; faster than setTimeout(0). */
  const breathe = () => new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => resolve();
    channel.port2.postMessage(null);
  });

  /** Clears everything a decode shows, so no earlier result stays on screen. */
  function clearResult() {
    state.result = null;
    state.cursor = null;
    output.replaceChildren();
    steps.replaceChildren();
    stepLabel.textContent = "";
    timing.textContent = "";
    delete timing.dataset.ms;
    maps.hidden = true;
  }

  /** Reads the input; shows its error or its warning. Returns the digits or null. */
  function readInput() {
    const parsed = parse(input.value);
    notice.className = "ex-notice";
    if (parsed.error) {
      notice.textContent = parsed.error;
      notice.classList.add("ex-error");
      clearResult();
      return null;
    }
    if (parsed.digits.length < M.MIN_LEN) {
      notice.textContent = `Outside the training range: the model was trained on ${M.MIN_LEN} to ` +
        `${M.MAX_LEN} digits and never saw ${parsed.digits.length}. Its output is not to be trusted.`;
      notice.classList.add("ex-warning");
    } else {
      notice.textContent = "";
    }
    return parsed.digits;
  }

  async function decode(mine) {
    const digits = readInput();
    if (!digits) {
      markPending(false);
      return;
    }
    const gen = state.modelGen;
    if (worker) {
      const answer = await askWorker(digits, state.off, gen);
      // Overtaken by a newer input or other weights, or decoded again here.
      if (mine !== generation || gen !== state.modelGen || !answer) return;
      if (!answer.result) {
        markPending(false);
        return;
      }
      const started = performance.now();
      show(digits, answer.result);
      state.last_ms = answer.ms + performance.now() - started;
      showTiming();
      markPending(false);
      return;
    }
    let busy = 0;
    let started = performance.now();
    const run = M.greedy_steps(localModel, M.source_tensor(digits), M.SEQ_LEN, state.off);
    let result;
    for (;;) {
      const { done, value } = run.next();
      if (done) {
        result = value;
        break;
      }
      busy += performance.now() - started;
      await breathe();
      if (mine !== generation || gen !== state.modelGen) return; // a newer decode runs
      started = performance.now();
    }
    show(digits, result);
    state.last_ms = busy + performance.now() - started;
    showTiming();
    markPending(false);
  }

  /** One full update at once, for the timing in the browser test: its ms, or null. */
  async function decodeNow() {
    const digits = readInput();
    if (!digits) return null;
    let result;
    let ms;
    if (worker) {
      const answer = await askWorker(digits, state.off, state.modelGen);
      if (!answer || !answer.result) return null;
      ({ result, ms } = answer);
    } else {
      const started = performance.now();
      result = M.greedy_decode(localModel, M.source_tensor(digits), M.SEQ_LEN, state.off);
      ms = performance.now() - started;
    }
    const started = performance.now();
    show(digits, result);
    state.last_ms = ms + performance.now() - started;
    showTiming();
    return state.last_ms;
  }

  function show(digits, result) {
    state.digits = digits;
    state.result = result;
    // The step the reader chose stays chosen while the new run has it.
    if (state.step !== null && state.step >= result.steps.length) state.step = null;
    maps.hidden = false;
    showOutput();
    draw();
    state.runs++;
  }

  function showTiming() {
    timing.textContent = `greedy decode and all maps: ${state.last_ms.toFixed(1)} ms`;
    timing.dataset.ms = state.last_ms.toFixed(2);
  }

  const words = (tokens) => tokens.map(M.token_word).join(" ");

  function showOutput() {
    const { tokens, steps: done } = state.result;
    const got = M.digits_of(tokens);
    const want = state.digits.slice().reverse();
    const ended = tokens[tokens.length - 1] === M.EOS_ID;
    const right = ended && got.length === want.length && got.every((d, i) => d === want[i]);
    output.replaceChildren(
      "Output: ",
      el("span", { id: "ex-result", class: "ex-digits" }, got.join(" ") || "(no digits)"),
      " ",
      el("span", { class: right ? "ex-right" : "ex-wrong" },
        right ? "✓ the reversal" : `✗ not the reversal (that is ${want.join(" ")})` +
          (ended ? "" : `; no <eos> after ${done.length} steps`)),
    );

    steps.replaceChildren(el("tr", {},
      el("th", { scope: "col" }, "step"), el("th", { scope: "col" }, "decoder input"),
      el("th", { scope: "col" }, "chosen"), el("th", { scope: "col" }, "top candidates (probability)")));
    done.forEach((s, i) => {
      const p = M.softmax(s.logits);
      const top = p.map((v, t) => [v, t]).sort((a, b) => b[0] - a[0]).slice(0, 3);
      const pick = () => { state.step = i; draw(); };
      const tr = el("tr", { class: "ex-step", "data-step": String(i), onclick: pick },
        el("td", {}, el("button", { type: "button", class: "ex-step-button", "aria-label": `show the maps of step ${i + 1}`,
          onclick: (e) => { e.stopPropagation(); pick(); } }, String(i + 1))),
        el("td", { class: "ex-mono" }, words(s.input)),
        el("td", { class: "ex-mono ex-chosen" }, M.token_word(s.next)),
        el("td", { class: "ex-mono" }, top.map(([v, t]) => `${M.token_word(t)} ${percent(v)}`).join(" · ")));
      steps.append(tr);
    });
  }

  function percent(v) {
    const x = 100 * v;
    if (x >= 99.95 && x < 100) return ">99.9%";
    if (x < 0.05) return "<0.1%";
    return `${x.toFixed(1)}%`;
  }

  // ---- the maps and their switches: built once per model -------------------------
  // figures[kind][layer][head] = { figure, canvas, box }; layerBoxes[kind][layer].
  let figures = null;
  let layerBoxes = null;

  function buildMaps() {
    const cfg = state.model.config;
    figures = {};
    layerBoxes = {};
    maps.replaceChildren();
    for (const kind of KINDS) {
      const section = el("section", { class: "ex-kind", "data-kind": kind.key, "aria-label": kind.title });
      section.append(el("h4", {}, kind.title, el("span", { class: "ex-quiet" }, ` — ${kind.note}`)));
      figures[kind.key] = [];
      layerBoxes[kind.key] = [];
      for (let layer = 0; layer < cfg.num_layers; layer++) {
        const off = () => state.off[kind.key][layer];
        const layerBox = el("input", { type: "checkbox", "data-kind": kind.key, "data-layer": String(layer),
          class: "ex-sublayer", "aria-label": `${kind.title}, layer ${layer}: all ${cfg.num_heads} heads on`,
          // A layer with any head off is switched all on; one with all on, all off.
          // (The browser's own toggle would turn a half-switched layer all off.)
          onchange: () => { off().fill(!off().some(Boolean)); switched(); } });
        layerBoxes[kind.key].push(layerBox);
        const row = el("div", { class: "ex-layer", "data-kind": kind.key, "data-layer": String(layer) },
          el("label", { class: "ex-layer-label" }, layerBox, ` layer ${layer}`));
        const heads = el("div", { class: "ex-heads" });
        figures[kind.key].push([]);
        for (let h = 0; h < cfg.num_heads; h++) {
          const name = `${kind.title}, layer ${layer}, head ${h}`;
          const box = el("input", { type: "checkbox", class: "ex-head", "data-kind": kind.key,
            "data-layer": String(layer), "data-head": String(h), "aria-label": `${name} on`,
            onchange: (e) => { off()[h] = !e.target.checked; switched(); } });
          const canvas = el("canvas", { class: "ex-canvas", tabindex: "0", role: "img",
            "data-kind": kind.key, "data-layer": String(layer), "data-head": String(h),
            "aria-label": `${name}: map of attention weights; arrow keys read one cell at a time` });
          const at = { kind: kind.key, layer, head: h };
          canvas.addEventListener("mousemove", (e) => pointAt(at, canvas, e));
          // A click or a tap puts the cursor on the cell under it before the
          // focus arrives, so the focus keeps that cell rather than the first.
          canvas.addEventListener("pointerdown", (e) => pressAt(at, canvas, e));
          canvas.addEventListener("keydown", (e) => keyAt(at, e));
          canvas.addEventListener("focus", () => focusAt(at));
          canvas.addEventListener("blur", () => blurAt(at));
          const figure = el("figure", { class: "ex-map" },
            el("figcaption", {}, el("label", {}, box, ` head ${h}`)), canvas);
          figures[kind.key][layer].push({ figure, canvas, box });
          heads.append(figure);
        }
        // Each row of maps has its own readout under it, its space kept while it
        // is empty, so that reading another map moves nothing on the page.
        const readout = el("p", { class: "ex-readout", "aria-live": "polite",
          "data-kind": kind.key, "data-layer": String(layer) });
        row.append(heads);
        section.append(row, readout);
      }
      maps.append(section);
    }
  }

  /** A head or a layer switched: show it at once and decode again. */
  function switched() {
    showSwitches();
    schedule(0);
  }

  /** The switches as state.off says; the focused one is never replaced. */
  function showSwitches() {
    for (const kind of KINDS) {
      state.off[kind.key].forEach((off, layer) => {
        const all = off.every(Boolean);
        const box = layerBoxes[kind.key][layer];
        box.checked = !all;
        box.indeterminate = !all && off.some(Boolean);
        const n = off.filter(Boolean).length;
        box.setAttribute("aria-label", `${kind.title}, layer ${layer}: ` +
          (n === 0 ? `all ${off.length} heads on` : `${n} of ${off.length} heads off`));
        off.forEach((o, h) => {
          const f = figures[kind.key][layer][h];
          f.box.checked = !o;
          f.box.setAttribute("aria-label", `${kind.title}, layer ${layer}, head ${h} ${o ? "off" : "on"}`);
          f.figure.classList.toggle("ex-map-off", o);
        });
      });
    }
    crossNote.hidden = !state.off.cross.every((heads) => heads.every(Boolean));
    showOff();
  }

  // ---- drawing the maps ------------------------------------------------------------
  /** The map of one head at the shown step: its labels and a function for its weights. */
  function mapOf({ kind, layer, head }) {
    const r = state.result;
    const t = shownStep();
    const step = r.steps[t];
    // Cut to the real tokens, as viz.rs does: source = digits + EOS.
    const n_src = state.digits.length + 1;
    const src_labels = M.source_tensor(state.digits).slice(0, n_src).map(M.token_word);
    const tgt_labels = step.input.map(M.token_word);
    const n_tgt = step.input.length;
    const full_src = M.SEQ_LEN; // the maps of the encoder are [Ls, Ls] with Ls = SEQ_LEN
    let w; let rows; let cols; let stride;
    if (kind === "encoder") {
      w = r.encoder_weights[layer]; [rows, cols, stride] = [src_labels, src_labels, full_src];
    } else if (kind === "cross") {
      w = step.weights[layer].cross_attn; [rows, cols, stride] = [tgt_labels, src_labels, full_src];
    } else {
      w = step.weights[layer].self_attn; [rows, cols, stride] = [tgt_labels, tgt_labels, n_tgt];
    }
    const headRows = kind === "encoder" ? full_src : n_tgt;
    const base = head * headRows * stride;
    return { rows, cols, value: (i, j) => w[base + i * stride + j] };
  }

  function shownStep() {
    const last = state.result.steps.length - 1;
    return state.step === null ? last : Math.min(state.step, last);
  }

  function draw() {
    const r = state.result;
    if (!r || !figures) return;
    const t = shownStep();
    stepPicker.max = String(r.steps.length);
    stepPicker.value = String(t + 1);
    const step = r.steps[t];
    stepLabel.textContent = `${t + 1} of ${r.steps.length}: decoder input ${words(step.input)} → ${M.token_word(step.next)}`;
    for (const tr of steps.querySelectorAll("tr.ex-step")) {
      tr.classList.toggle("ex-current", Number(tr.dataset.step) === t);
    }
    showSwitches();
    for (const kind of KINDS) {
      figures[kind.key].forEach((layer, l) => layer.forEach((f, h) => {
        const at = { kind: kind.key, layer: l, head: h };
        heatmap(f.canvas, mapOf(at), state.off[kind.key][l][h], cursorOn(at));
      }));
    }
    if (state.cursor) readCell();
    remember();
  }

  // ---- the reader's choices, kept across Back and Forward ---------------------------
  /**
   * Keeps what the reader chose (the input, the switched-off heads, the chosen
   * step, the name of a picked file) in this page's history entry: leaving the
   * page and coming back with Back, or reloading it, brings them back.
   */
  function remember() {
    const kept = { input: input.value, off: state.off, step: state.step, picked: state.picked };
    try {
      history.replaceState({ ...(history.state || {}), explorer: kept }, "");
    } catch (e) {
      // Some browsers refuse it for file:// pages; the choices are then not kept.
    }
  }

  /** Puts back what `remember` kept, on the course's weights; a picked file must be picked again. */
  function restore() {
    const kept = history.state && history.state.explorer;
    if (!kept || !state.off) return;
    if (typeof kept.input === "string") input.value = kept.input;
    const fits = (off, now) => Array.isArray(off) && off.length === now.length &&
      off.every((heads, l) => Array.isArray(heads) && heads.length === now[l].length &&
        heads.every((o) => typeof o === "boolean"));
    if (kept.off && KINDS.every((k) => fits(kept.off[k.key], state.off[k.key]))) state.off = kept.off;
    if (Number.isInteger(kept.step) && kept.step >= 0) state.step = kept.step;
    if (typeof kept.picked === "string") {
      loadMessage.className = "";
      loadMessage.textContent = `You had picked ${kept.picked}; a page cannot keep a file once you leave it, so ` +
        "these are the course's weights again, with your input and switches. Pick the file again to see it.";
    }
    showSwitches();
    schedule(0);
  }

  const cursorOn = (at) => {
    const c = state.cursor;
    return c && c.kind === at.kind && c.layer === at.layer && c.head === at.head ? c : null;
  };

  /** Geometry of a map's canvas: four maps side by side in the book's column. */
  function layout(rows, cols) {
    const fit = Math.min(Math.floor(124 / cols), Math.floor(180 / rows));
    const cell = Math.max(8, Math.min(16, fit));
    return { cell, left: 34, top: 32 };
  }

  /** A heatmap on `canvas`: white for 0 to deep blue for 1, as chapter 11's figures. */
  function heatmap(canvas, { rows: rowLabels, cols: colLabels, value }, isOff, cursor) {
    const { cell, left, top } = layout(rowLabels.length, colLabels.length);
    const width = left + cell * colLabels.length + 2;
    const height = top + cell * rowLabels.length + 2;
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
    const g = canvas.getContext("2d");
    g.scale(dpr, dpr);
    const fg = getComputedStyle(root).color;
    g.font = `${Math.min(11, cell)}px sans-serif`;
    g.fillStyle = fg;
    g.textAlign = "right";
    g.textBaseline = "middle";
    rowLabels.forEach((s, i) => g.fillText(s, left - 3, top + (i + 0.5) * cell));
    colLabels.forEach((s, j) => {
      g.save();
      g.translate(left + (j + 0.5) * cell, top - 3);
      g.rotate(-Math.PI / 2);
      g.textAlign = "left";
      g.fillText(s, 0, 0);
      g.restore();
    });
    for (let i = 0; i < rowLabels.length; i++) {
      for (let j = 0; j < colLabels.length; j++) {
        const v = value(i, j);
        // white (255, 255, 255) → deep blue (8, 48, 107)
        const mix = (a, b) => Math.round(a + (b - a) * v);
        g.fillStyle = `rgb(${mix(255, 8)}, ${mix(255, 48)}, ${mix(255, 107)})`;
        g.fillRect(left + j * cell, top + i * cell, cell, cell);
      }
    }
    g.strokeStyle = "#999";
    g.strokeRect(left - 0.5, top - 0.5, cell * colLabels.length + 1, cell * rowLabels.length + 1);
    if (isOff) {
      // The head still computes these weights, so they stay visible under a grey
      // veil; its output is what is dropped. The word sits on a dark patch of its
      // own, readable over any cell.
      g.fillStyle = "rgba(128, 128, 128, 0.55)";
      g.fillRect(left, top, cell * colLabels.length, cell * rowLabels.length);
      const [cx, cy] = [left + (cell * colLabels.length) / 2, top + (cell * rowLabels.length) / 2];
      g.fillStyle = "rgba(0, 0, 0, 0.8)";
      g.fillRect(cx - 14, cy - 9, 28, 18);
      g.fillStyle = "#fff";
      g.font = "bold 13px sans-serif";
      g.textAlign = "center";
      g.fillText("off", cx, cy);
    }
    if (cursor && cursor.i < rowLabels.length && cursor.j < colLabels.length) {
      // The cell read with the keyboard: a ring dark on light cells and light on dark.
      g.lineWidth = 2;
      g.strokeStyle = "#e8590c";
      g.strokeRect(left + cursor.j * cell + 1, top + cursor.i * cell + 1, cell - 2, cell - 2);
    }
  }

  // ---- reading a weight: pointer or keyboard, next to the map ------------------------
  function titleOf({ kind, layer, head }) {
    return `${KINDS.find((k) => k.key === kind).title}, layer ${layer}, head ${head}`;
  }

  function say(at, i, j) {
    const { rows, cols, value } = mapOf(at);
    for (const r of maps.querySelectorAll(".ex-readout")) {
      const here = r.dataset.kind === at.kind && Number(r.dataset.layer) === at.layer;
      r.textContent = here ? `${titleOf(at)}: row ${i} (${rows[i]}) → column ${j} (${cols[j]}): ` +
        `weight ${value(i, j).toFixed(3)}` : "";
    }
  }

  /** The cell of `at`'s map under the pointer event `e`: { i, j }, or null. */
  function cellAt(at, canvas, e) {
    if (!state.result) return null;
    const { rows, cols } = mapOf(at);
    const { cell, left, top } = layout(rows.length, cols.length);
    const box = canvas.getBoundingClientRect();
    const j = Math.floor((e.clientX - box.left - left) / cell);
    const i = Math.floor((e.clientY - box.top - top) / cell);
    return i >= 0 && j >= 0 && i < rows.length && j < cols.length ? { i, j } : null;
  }

  function pointAt(at, canvas, e) {
    const c = cellAt(at, canvas, e);
    if (c) say(at, c.i, c.j);
  }

  function pressAt(at, canvas, e) {
    const c = cellAt(at, canvas, e);
    if (!c) return;
    state.cursor = { ...at, ...c };
    draw();
  }

  function focusAt(at) {
    if (!state.result) return;
    const c = cursorOn(at);
    state.cursor = c || { ...at, i: 0, j: 0 };
    draw();
  }

  /** The keyboard's cursor lives as long as its map has the focus. */
  function blurAt(at) {
    if (!cursorOn(at)) return;
    state.cursor = null;
    draw();
  }

  function readCell() {
    const c = state.cursor;
    const { rows, cols } = mapOf(c);
    c.i = Math.min(c.i, rows.length - 1);
    c.j = Math.min(c.j, cols.length - 1);
    say(c, c.i, c.j);
  }

  function keyAt(at, e) {
    const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    const c = cursorOn(at);
    if (!c || !state.result) return;
    const { rows, cols } = mapOf(at);
    if (moves[e.key]) {
      c.i = Math.max(0, Math.min(rows.length - 1, c.i + moves[e.key][0]));
      c.j = Math.max(0, Math.min(cols.length - 1, c.j + moves[e.key][1]));
    } else if (e.key === "Home") {
      c.j = 0;
    } else if (e.key === "End") {
      c.j = cols.length - 1;
    } else {
      return;
    }
    // The keys are the map's: not the page's scrolling, nor mdBook's arrow keys,
    // which would turn to the next chapter.
    e.preventDefault();
    e.stopPropagation();
    draw();
  }

  // The summary's text changes; its button stays the same element, so that it
  // keeps the keyboard's focus while heads are switched.
  const offText = el("span", {});
  const allOn = el("button", { type: "button", id: "ex-all-on",
    onclick: () => { state.off = M.all_on(state.model.config); switched(); input.focus(); } },
  "switch all back on");
  offSummary.append(offText, " ", allOn);

  function showOff() {
    const off = [];
    for (const kind of KINDS) {
      state.off[kind.key].forEach((heads, layer) => heads.forEach((o, h) => {
        if (o) off.push(`${kind.short} L${layer} H${h}`);
      }));
    }
    allOn.hidden = off.length === 0;
    offText.replaceChildren(...(off.length === 0
      ? ["All heads on. Untick a head, or a layer's box for all its heads, to switch it off."]
      : [el("strong", {}, `Switched off (${off.length}): `), off.join(", ")]));
  }

  // ---- weights ----------------------------------------------------------------------
  /**
   * Shows the model of choice `gen`: first clears everything the last model
   * showed (its output, steps and maps are not this model's), then builds this
   * one's maps and decodes. `local` is the model when it lives on this thread.
   */
  function setModel(config, label, gen, local) {
    state.model = local || { config };
    state.modelGen = gen;
    localModel = local;
    state.off = M.all_on(config);
    state.step = null;
    clearResult();
    weightsLabel.replaceChildren(...label);
    buildMaps();
    showSwitches();
    schedule(0);
  }

  function useShipped() {
    const gen = ++modelGen;
    endLoading();
    loadMessage.textContent = "";
    loadMessage.className = "";
    file.value = "";
    const shipped = window.EXPLORER_WEIGHTS;
    if (!shipped) {
      weightsLabel.textContent = "explorer/weights.js is missing: regenerate it with " +
        "scripts/regen-outputs.sh --only export_explorer";
      return;
    }
    const loaded = C.load_shipped(shipped);
    state.picked = null;
    const { config, metadata } = loaded;
    if (worker) worker.postMessage({ type: "set", gen, values: Object.fromEntries(loaded.values), config });
    // Named by what identifies the weights: the checksum of the trained
    // checkpoint they were exported from (scripts/export_explorer.rs keeps it).
    setModel(config, [
      "the course's trained model (", M.shape_summary(config), "), rounded to fp16, from the checkpoint " +
        "whose weights' checksum is ", el("code", { id: "ex-weights-checksum" }, String(metadata.checksum)),
    ], gen, loaded.model);
  }

  function loadFile() {
    const f = file.files[0];
    // Emptied at once, so that picking the same file again (retrained to the same
    // path) is a change too: the browser fires none for an unchanged value, and
    // the page would go on running the old weights under the name of the new.
    file.value = "";
    if (!f) return;
    readFile(f);
  }

  /** Reads `f` as the reader's new choice: any load still running is dropped. */
  function readFile(f) {
    const gen = ++modelGen;
    state.loading = { gen, name: f.name, file: f, when: new Date().toLocaleTimeString() };
    loadMessage.className = "";
    loadMessage.textContent = `Reading ${f.name} …`;
    showProgress(0, "opening it");
    if (worker) {
      worker.postMessage({ type: "load", gen, file: f });
      return;
    }
    // Smaller slices than the worker's: here each one holds up the page.
    C.load_file_in_slices(f, {
      slice: 1 << 21,
      progress: (fraction, what) => gen === modelGen && showProgress(fraction, what),
      pause: async () => {
        await breathe();
        if (gen !== modelGen) throw CANCELLED;
      },
    }).then((loaded) => accept(gen, loaded.config, loaded.note, loaded.model),
      (e) => e !== CANCELLED && refused(gen, e.message, e.detail));
  }

  function showProgress(fraction, what) {
    const { name } = state.loading;
    loadingRow.hidden = false;
    progressBar.value = fraction;
    progressText.textContent = `Reading ${name}: ${Math.floor(100 * fraction)}%, ${what}`;
  }

  function endLoading() {
    // The Cancel button goes with the bar: its focus goes to the file picker.
    if (document.activeElement === cancel) file.focus();
    state.loading = null;
    loadingRow.hidden = true;
    progressText.textContent = "";
  }

  /** A file read: shown if it is still the reader's last choice, else dropped. */
  function accept(gen, config, note, local) {
    if (gen !== modelGen || !state.loading || state.loading.gen !== gen) return;
    const { name, when } = state.loading;
    endLoading();
    if (worker) worker.postMessage({ type: "use", gen });
    state.picked = name;
    setModel(config, ["your checkpoint ", el("code", {}, name), ` (${M.shape_summary(config)}), read at ${when}`],
      gen, local);
    loadMessage.className = "ex-loaded";
    loadMessage.textContent = `Loaded ${name} at ${when}: ${M.shape_summary(config)}.` + (note ? ` Note: ${note}.` : "");
    state.loads++;
  }

  function refused(gen, message, detail) {
    if (gen !== modelGen || !state.loading || state.loading.gen !== gen) return;
    const { when } = state.loading;
    endLoading();
    loadMessage.className = "ex-error";
    const why = detail ? `${message}: ${detail}` : message;
    loadMessage.textContent = `Not loaded (${when}): ${why}. The page still runs the weights it had.`;
    state.loads++;
  }

  function cancelLoad() {
    if (!state.loading) return;
    const { name } = state.loading;
    const gen = ++modelGen;
    if (worker) worker.postMessage({ type: "cancel", gen });
    endLoading();
    loadMessage.className = "";
    loadMessage.textContent = `Reading ${name} cancelled. The page still runs the weights it had.`;
    state.loads++;
    file.focus();
  }

  /** For scripts/explorer-browser-test.sh: the median time of `n` full updates. */
  async function time(n = 20) {
    const ms = [];
    for (let i = 0; i < n; i++) ms.push(await decodeNow());
    ms.sort((a, b) => a - b);
    return ms[Math.floor(n / 2)];
  }

  // Keys pressed inside the explorer are the explorer's: mdBook turns the page on
  // ArrowLeft and ArrowRight (and opens its help, its search) from a listener on
  // the document, which a key on one of our buttons would otherwise reach.
  root.addEventListener("keydown", (e) => e.stopPropagation());

  // A zoom changes the device pixel ratio: the maps are drawn again at the new
  // one, or they would stay blurred until the next decode.
  let ratio = window.devicePixelRatio || 1;
  function watchRatio() {
    const now = window.devicePixelRatio || 1;
    if (now !== ratio) {
      ratio = now;
      draw();
    }
  }
  window.addEventListener("resize", watchRatio);
  (function onRatioChange() {
    const query = window.matchMedia && window.matchMedia(`(resolution: ${window.devicePixelRatio || 1}dppx)`);
    // Older browsers' media queries have no addEventListener: the resize event is left.
    if (query && query.addEventListener) query.addEventListener("change", () => { watchRatio(); onRatioChange(); }, { once: true });
  })();

  // The maps' labels take the theme's text colour: draw them again when the
  // reader switches themes (the page itself is not reloaded).
  new MutationObserver(() => draw()).observe(document.documentElement, { attributes: true, attributeFilter: ["class"] });

  window.explorer = { state, time, decodeNow };
  clearResult();
  startWorker();
  const kept = history.state && history.state.explorer;
  useShipped();
  // useShipped remembered its own fresh state; put back what the reader had.
  if (kept) {
    history.replaceState({ ...history.state, explorer: kept }, "");
    restore();
  }
})();
