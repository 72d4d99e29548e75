// The attention explorer's page (explorer.md): an input box, the greedy decode
// step by step, every attention map as a heatmap, heads to switch off, and a
// file picker for the reader's own checkpoint. The model is model.js; the weights
// come from weights.js or from the picked file (checkpoint.js).
"use strict";

(function () {
  const M = window.explorerModel;
  const C = window.explorerCheckpoint;
  const root = document.getElementById("explorer");
  if (!root || !M || !C) return;

  // The three kinds of attention, in the order the page shows them.
  const KINDS = [
    { key: "cross", title: "Cross-attention", rows: "decoder input", cols: "source",
      note: "each decoder position reads the source" },
    { key: "encoder", title: "Encoder self-attention", rows: "source", cols: "source",
      note: "each source position reads the source" },
    { key: "decoder_self", title: "Decoder self-attention", rows: "decoder input", cols: "decoder input",
      note: "masked: each position reads itself and the ones before it" },
  ];

  const state = {
    model: null,
    weights_label: "",
    off: null, // which heads are off: { encoder, decoder_self, cross }[layer][head]
    result: null, // the last greedy decode
    digits: [],
    step: null, // the step whose maps are shown (null: the last one)
    last_ms: null,
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
    "aria-describedby": "ex-notice", oninput: () => run(),
  });
  const timing = el("span", { id: "ex-timing", class: "ex-quiet" });
  const notice = el("p", { id: "ex-notice", class: "ex-notice", role: "status" });
  const output = el("p", { id: "ex-output", class: "ex-output" });
  const steps = el("table", { id: "ex-steps", class: "ex-steps" });
  const offSummary = el("p", { id: "ex-off", class: "ex-off" });
  const stepPicker = el("input", { id: "ex-step", type: "range", min: "1", max: "1", value: "1",
    oninput: () => { state.step = Number(stepPicker.value) - 1; draw(); } });
  const stepLabel = el("span", { id: "ex-step-label" });
  const maps = el("div", { id: "ex-maps" });
  const hover = el("p", { id: "ex-hover", class: "ex-quiet" }, "Point at a cell to read its weight.");
  const weightsLabel = el("span", { id: "ex-weights" });
  const file = el("input", { id: "ex-file", type: "file", accept: ".safetensors", onchange: () => loadFile() });
  const reset = el("button", { id: "ex-reset", type: "button", onclick: () => useShipped() },
    "Back to the course's weights");
  const loadMessage = el("p", { id: "ex-load-message", role: "alert" });

  root.append(
    el("div", { class: "ex-bar" },
      el("label", { for: "ex-input" }, "Digits to reverse "), input, " ", timing),
    notice, output, steps,
    el("div", { class: "ex-bar" },
      el("label", { for: "ex-step" }, "Maps at decoding step "), stepPicker, " ", stepLabel),
    offSummary, maps, hover,
    el("div", { class: "ex-weights-bar" },
      el("div", {}, el("strong", {}, "Weights: "), weightsLabel),
      el("div", {}, el("label", { for: "ex-file" }, "Load your own checkpoint (from 09_train_reverse): "),
        file, " ", reset),
      loadMessage),
  );

  // ---- reading the input, like data.rs parse_digits and the CLI of chapter 10 --
  function parse(text) {
    const digits = [];
    for (const c of text) {
      if (/\s|,/.test(c)) continue;
      if (!/[0-9]/.test(c)) return { error: `'${c}' is not a digit: give digits 0-9, e.g. 7 3 0 9 5` };
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
  function run() {
    const started = performance.now();
    const parsed = parse(input.value);
    notice.className = "ex-notice";
    if (parsed.error) {
      notice.textContent = parsed.error;
      notice.classList.add("ex-error");
      state.result = null;
      output.textContent = "";
      steps.replaceChildren();
      maps.replaceChildren();
      return;
    }
    state.digits = parsed.digits;
    if (parsed.digits.length < M.MIN_LEN) {
      notice.textContent = `Outside the training range: the model was trained on ${M.MIN_LEN} to ` +
        `${M.MAX_LEN} digits and never saw ${parsed.digits.length}. Its output is not to be trusted.`;
      notice.classList.add("ex-warning");
    } else {
      notice.textContent = "";
    }
    state.result = M.greedy_decode(state.model, M.source_tensor(parsed.digits), M.SEQ_LEN, state.off);
    state.step = null;
    showOutput();
    draw();
    state.last_ms = performance.now() - started;
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
      el("th", {}, "step"), el("th", {}, "decoder input"), el("th", {}, "chosen"),
      el("th", {}, "top candidates (probability)")));
    done.forEach((s, i) => {
      const p = M.softmax(s.logits);
      const top = p.map((v, t) => [v, t]).sort((a, b) => b[0] - a[0]).slice(0, 3);
      const tr = el("tr", { class: "ex-step", "data-step": String(i), title: "show this step's maps",
        onclick: () => { state.step = i; draw(); } },
      el("td", {}, String(i + 1)),
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

  // ---- drawing the maps ------------------------------------------------------------
  function draw() {
    const r = state.result;
    if (!r) return;
    const last = r.steps.length - 1;
    const t = state.step === null ? last : Math.min(state.step, last);
    stepPicker.max = String(r.steps.length);
    stepPicker.value = String(t + 1);
    const step = r.steps[t];
    stepLabel.textContent = `${t + 1} of ${r.steps.length}: decoder input ${words(step.input)} → ${M.token_word(step.next)}`;
    for (const tr of steps.querySelectorAll("tr.ex-step")) {
      tr.classList.toggle("ex-current", Number(tr.dataset.step) === t);
    }
    showOff();

    // Cut to the real tokens, as viz.rs does: source = digits + EOS.
    const n_src = state.digits.length + 1;
    const src_labels = M.source_tensor(state.digits).slice(0, n_src).map(M.token_word);
    const tgt_labels = step.input.map(M.token_word);
    const n_tgt = step.input.length;
    const full_src = M.SEQ_LEN; // the maps of the encoder are [Ls, Ls] with Ls = SEQ_LEN
    const cfg = state.model.config;

    maps.replaceChildren();
    for (const kind of KINDS) {
      const section = el("div", { class: "ex-kind", "data-kind": kind.key });
      section.append(el("h4", {}, kind.title, el("span", { class: "ex-quiet" }, ` — ${kind.note}`)));
      for (let layer = 0; layer < cfg.num_layers; layer++) {
        const off = state.off[kind.key][layer];
        const all = off.every(Boolean);
        const layerBox = el("input", { type: "checkbox", "data-kind": kind.key, "data-layer": String(layer),
          class: "ex-sublayer",
          onchange: (e) => { off.fill(!e.target.checked); run(); } });
        layerBox.checked = !all;
        layerBox.indeterminate = !all && off.some(Boolean);
        const row = el("div", { class: "ex-layer" },
          el("label", { class: "ex-layer-label" }, layerBox, ` layer ${layer}`));
        const heads = el("div", { class: "ex-heads" });
        for (let h = 0; h < cfg.num_heads; h++) {
          let w; let rows; let cols; let stride;
          if (kind.key === "encoder") {
            w = r.encoder_weights[layer]; [rows, cols, stride] = [src_labels, src_labels, full_src];
          } else if (kind.key === "cross") {
            w = step.weights[layer].cross_attn; [rows, cols, stride] = [tgt_labels, src_labels, full_src];
          } else {
            w = step.weights[layer].self_attn; [rows, cols, stride] = [tgt_labels, tgt_labels, n_tgt];
          }
          const headRows = kind.key === "encoder" ? full_src : n_tgt;
          const base = h * headRows * stride;
          const value = (i, j) => w[base + i * stride + j];
          const box = el("input", { type: "checkbox", class: "ex-head", "data-kind": kind.key,
            "data-layer": String(layer), "data-head": String(h),
            onchange: (e) => { off[h] = !e.target.checked; run(); } });
          box.checked = !off[h];
          const canvas = heatmap(value, rows, cols, off[h], `${kind.title}, layer ${layer}, head ${h}`);
          heads.append(el("figure", { class: "ex-map" + (off[h] ? " ex-map-off" : "") },
            el("figcaption", {}, el("label", {}, box, ` head ${h}`)), canvas));
        }
        row.append(heads);
        section.append(row);
      }
      maps.append(section);
    }
  }

  /** A heatmap as a canvas: white for 0 to deep blue for 1, as chapter 11's figures. */
  function heatmap(value, rowLabels, colLabels, isOff, title) {
    // Four maps side by side in the book's column, whatever the length.
    const fit = Math.min(Math.floor(124 / colLabels.length), Math.floor(180 / rowLabels.length));
    const cell = Math.max(8, Math.min(16, fit));
    const [left, top] = [34, 32];
    const width = left + cell * colLabels.length + 2;
    const height = top + cell * rowLabels.length + 2;
    const canvas = el("canvas", { class: "ex-canvas", role: "img", "aria-label": title });
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
      // The head still computes these weights; its output is what is dropped.
      g.fillStyle = "rgba(128, 128, 128, 0.55)";
      g.fillRect(left, top, cell * colLabels.length, cell * rowLabels.length);
      g.fillStyle = "#fff";
      g.font = "bold 13px sans-serif";
      g.textAlign = "center";
      g.fillText("off", left + (cell * colLabels.length) / 2, top + (cell * rowLabels.length) / 2);
    }
    canvas.addEventListener("mousemove", (e) => {
      const box = canvas.getBoundingClientRect();
      const j = Math.floor((e.clientX - box.left - left) / cell);
      const i = Math.floor((e.clientY - box.top - top) / cell);
      if (i >= 0 && j >= 0 && i < rowLabels.length && j < colLabels.length) {
        hover.textContent = `${title}: row ${i} (${rowLabels[i]}) → column ${j} (${colLabels[j]}): ` +
          `weight ${value(i, j).toFixed(3)}`;
      }
    });
    return canvas;
  }

  function showOff() {
    const names = { encoder: "encoder self", decoder_self: "decoder self", cross: "cross" };
    const off = [];
    for (const kind of KINDS) {
      state.off[kind.key].forEach((heads, layer) => heads.forEach((o, h) => {
        if (o) off.push(`${names[kind.key]} L${layer} H${h}`);
      }));
    }
    if (off.length === 0) {
      offSummary.replaceChildren("All heads on. Untick a head, or a layer's box for all its heads, to switch it off.");
      return;
    }
    offSummary.replaceChildren(
      el("strong", {}, `Switched off (${off.length}): `), off.join(", "), " ",
      el("button", { type: "button", id: "ex-all-on",
        onclick: () => { state.off = M.all_on(state.model.config); run(); } }, "switch all back on"));
  }

  // ---- weights ----------------------------------------------------------------------
  function setModel(model, label) {
    state.model = model;
    state.off = M.all_on(model.config);
    weightsLabel.replaceChildren(...label);
    run();
  }

  function useShipped() {
    loadMessage.textContent = "";
    loadMessage.className = "";
    file.value = "";
    const shipped = window.EXPLORER_WEIGHTS;
    if (!shipped) {
      weightsLabel.textContent = "explorer/weights.js is missing: regenerate it with " +
        "scripts/regen-outputs.sh --only export_explorer";
      return;
    }
    const { model, config } = C.load_shipped(shipped);
    setModel(model, [
      "the course's trained model (", M.shape_summary(config), "), fp16, made by ",
      el("code", {}, shipped.provenance[0].replace(/^\$ /, "")), " — ",
      shipped.provenance[1].replace(/^# device: /, ""),
    ]);
  }

  async function loadFile() {
    const f = file.files[0];
    // Emptied at once, so that picking the same file again (retrained to the same
    // path) is a change too: the browser fires none for an unchanged value, and
    // the page would go on running the old weights under the name of the new.
    file.value = "";
    if (!f) return;
    loadMessage.className = "";
    loadMessage.textContent = `Reading ${f.name} …`;
    const when = new Date().toLocaleTimeString();
    try {
      const bytes = new Uint8Array(await f.arrayBuffer());
      const { model, config } = C.load_checkpoint(bytes, f.name);
      setModel(model, ["your checkpoint ", el("code", {}, f.name), ` (${M.shape_summary(config)}), read at ${when}`]);
      loadMessage.className = "ex-loaded";
      loadMessage.textContent = `Loaded ${f.name} at ${when}: ${M.shape_summary(config)}.`;
    } catch (e) {
      loadMessage.className = "ex-error";
      loadMessage.textContent = `Not loaded (${when}): ${e.message}. The page still runs the weights it had.`;
    }
  }

  /** For scripts/explorer-browser-test.sh: the median time of `n` full updates. */
  function time(n = 20) {
    const ms = [];
    for (let i = 0; i < n; i++) {
      run();
      ms.push(state.last_ms);
    }
    ms.sort((a, b) => a - b);
    return ms[Math.floor(n / 2)];
  }

  // The maps' labels take the theme's text colour: draw them again when the
  // reader switches themes (the page itself is not reloaded).
  new MutationObserver(() => draw()).observe(document.documentElement, { attributes: true, attributeFilter: ["class"] });

  window.explorer = { state, run, time };
  useShipped();
})();
