// Reading weights in the page: a checkpoint written by `09_train_reverse` (every
// tensor fp32, the config in the safetensors metadata; workbench/src/checkpoint.rs) and the
// course's exported weights (weights.js: the same layout in fp16, as base64).
//
// It is workbench/src/checkpoint.rs's loader step for step: CheckedFile::read, then
// config_from_header (METADATA_FIELDS, check_bounds with TransformerConfig::validate
// and the parameter count), tensor_offsets, the file's size, verify_checksums (the
// weights' checksum, then the whole file's), and load_checkpoint's check for NaN,
// then ensure_reverse_task. It refuses what they refuse, in the same order and with
// the same sentences (an Error's `message` is the sentence that anyhow's `{}` shows;
// `detail`, when there is one, stands for the cause that Rust's `{:#}` would add),
// and a file Rust loads with a note loads here with the same note (`note`, Rust's
// stderr line without its "note: "). tests/explorer_parity.rs holds the two to each
// other on crafted files. Everything that bounds the work is checked from the first
// 8 bytes and the header, before the weights are read or the model is built. The
// one check left out is check_memory: a page cannot see the machine's free memory
// or ulimit -v, and the browser refuses an allocation it cannot make by itself.
"use strict";

(function explorer_checkpoint(root) {
  const M = typeof module === "object" && module.exports ? require("./model.js") : root.explorerModel;

  /** What the metadata's "format" field says (workbench/src/checkpoint.rs FORMAT). */
  const FORMAT = "transformer-course/1";
  /** A header longer than this is not one of ours (ours is about 6 KiB). */
  const MAX_HEADER = 1n << 20n;
  /** The name of the checksum in the metadata, before its value. */
  const CHECKSUM = "fnv1a64";
  /** The metadata field whose checksum covers the whole file (FILE_CHECKSUM). */
  const FILE_CHECKSUM = "file_checksum";
  /**
   * Every metadata field a version of the course has written ("dff" is d_ff's old
   * name): any other is damage, a changed field name, say (METADATA_FIELDS).
   */
  const METADATA_FIELDS = ["format", "src_vocab", "tgt_vocab", "d_model", "num_heads", "d_ff", "dff",
    "num_layers", "max_len", "init", "checksum", FILE_CHECKSUM];
  /** Bytes per value, and the word Rust's message uses, of the dtypes we read. */
  const DTYPES = { F32: { width: 4, word: "fp32" }, F16: { width: 2, word: "fp16" } };
  const I64_MIN = -(1n << 63n);
  const I64_MAX = (1n << 63n) - 1n;
  const U64_MAX = (1n << 64n) - 1n;

  /** A refusal: `message` is Rust's sentence; `detail` what Rust's cause would add. */
  function refuse(message, detail) {
    const e = new Error(message);
    if (detail) e.detail = detail;
    return e;
  }

  // ---- serde_json, as far as the loader depends on it --------------------------
  // The header is read the way serde_json::from_slice reads it into a Value: what
  // it rejects (nesting deeper than 127, a lone surrogate, a number out of f64's
  // range, invalid UTF-8) is rejected here too, and a number keeps what serde_json
  // knows of it (an integer that fits u64 or i64, or else an f64), because the
  // loader asks as_u64 and as_i64 of it. Objects are Maps: a key "__proto__" is
  // just a key, and a repeated key keeps its last value, as in serde_json.
  class JsonNumber {
    /** int: a BigInt (serde_json's U64 or I64), or null for an F64 `float`. */
    constructor(int, float) {
      this.int = int;
      this.float = float;
    }
  }

  function parse_json(bytes) {
    let i = 0;
    let depth = 128; // serde_json's remaining_depth: 127 levels of nesting fit
    const fail = (what) => {
      throw new Error(`${what} at byte ${i}`);
    };
    const skip_ws = () => {
      while (i < bytes.length && (bytes[i] === 0x20 || bytes[i] === 0x0a || bytes[i] === 0x09 || bytes[i] === 0x0d)) i++;
    };
    const is_digit = (b) => b >= 0x30 && b <= 0x39;
    const literal = (word, value) => {
      for (let k = 0; k < word.length; k++) {
        if (bytes[i + k] !== word.charCodeAt(k)) fail("expected a value");
      }
      i += word.length;
      return value;
    };

    function number() {
      const start = i;
      const negative = bytes[i] === 0x2d;
      if (negative) i++;
      if (bytes[i] === 0x30) {
        i++;
        if (is_digit(bytes[i])) fail("invalid number");
      } else if (is_digit(bytes[i])) {
        while (is_digit(bytes[i])) i++;
      } else {
        fail("invalid number");
      }
      let float = false;
      if (bytes[i] === 0x2e) {
        float = true;
        i++;
        if (!is_digit(bytes[i])) fail("invalid number");
        while (is_digit(bytes[i])) i++;
      }
      if (bytes[i] === 0x65 || bytes[i] === 0x45) {
        float = true;
        i++;
        if (bytes[i] === 0x2b || bytes[i] === 0x2d) i++;
        if (!is_digit(bytes[i])) fail("invalid number");
        while (is_digit(bytes[i])) i++;
      }
      const text = String.fromCharCode(...bytes.subarray(start, i));
      if (!float) {
        const magnitude = BigInt(negative ? text.slice(1) : text);
        // serde_json's parse_number: U64 when it fits; a negative one is I64
        // only from -1 down to i64::MIN (so "-0" is the float -0.0); else F64.
        if (!negative && magnitude <= U64_MAX) return new JsonNumber(magnitude, null);
        if (negative && magnitude >= 1n && magnitude <= -I64_MIN) return new JsonNumber(-magnitude, null);
      }
      const value = Number(text);
      if (!Number.isFinite(value)) fail("number out of range");
      return new JsonNumber(null, value);
    }

    function hex4() {
      let n = 0;
      for (let k = 0; k < 4; k++) {
        const c = bytes[i++];
        const v = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : c >= 0x41 && c <= 0x46 ? c - 0x37 : -1;
        if (v < 0) fail("invalid escape");
        n = n * 16 + v;
      }
      return n;
    }

    const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
    function string() {
      i++; // the opening quote
      const out = [];
      for (;;) {
        if (i >= bytes.length) fail("EOF while parsing a string");
        const b = bytes[i++];
        if (b === 0x22) break;
        if (b < 0x20) fail("control character found while parsing a string");
        if (b !== 0x5c) {
          out.push(b);
          continue;
        }
        const e = bytes[i++];
        const simple = { 0x22: 0x22, 0x5c: 0x5c, 0x2f: 0x2f, 0x62: 8, 0x66: 12, 0x6e: 10, 0x72: 13, 0x74: 9 }[e];
        if (simple !== undefined) {
          out.push(simple);
          continue;
        }
        if (e !== 0x75) fail("invalid escape");
        let cp = hex4();
        if (cp >= 0xdc00 && cp <= 0xdfff) fail("lone trailing surrogate in hex escape");
        if (cp >= 0xd800 && cp <= 0xdbff) {
          if (bytes[i] !== 0x5c || bytes[i + 1] !== 0x75) fail("unexpected end of hex escape");
          i += 2;
          const low = hex4();
          if (low < 0xdc00 || low > 0xdfff) fail("lone leading surrogate in hex escape");
          cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
        }
        out.push(...new TextEncoder().encode(String.fromCodePoint(cp)));
      }
      try {
        return utf8.decode(new Uint8Array(out));
      } catch (_) {
        return fail("invalid unicode code point");
      }
    }

    function value() {
      skip_ws();
      if (i >= bytes.length) fail("EOF while parsing a value");
      const b = bytes[i];
      if (b === 0x22) return string();
      if (b === 0x2d || is_digit(b)) return number();
      if (b === 0x74) return literal("true", true);
      if (b === 0x66) return literal("false", false);
      if (b === 0x6e) return literal("null", null);
      if (b !== 0x5b && b !== 0x7b) fail("expected value");
      if (--depth === 0) fail("recursion limit exceeded");
      i++;
      const close = b === 0x5b ? 0x5d : 0x7d;
      const items = b === 0x5b ? [] : new Map();
      skip_ws();
      if (bytes[i] === close) {
        i++;
      } else {
        for (;;) {
          if (b === 0x5b) {
            items.push(value());
          } else {
            skip_ws();
            if (bytes[i] !== 0x22) fail("key must be a string");
            const key = string();
            // Rust's strict_json: a reader that kept the last of two would see
            // another model than the checksum covered.
            if (items.has(key)) fail(`the key '${key}' appears twice in one object`);
            skip_ws();
            if (bytes[i] !== 0x3a) fail("expected ':'");
            i++;
            items.set(key, value());
          }
          skip_ws();
          if (bytes[i] === 0x2c) {
            i++;
            continue;
          }
          if (bytes[i] === close) {
            i++;
            break;
          }
          fail(b === 0x5b ? "expected ',' or ']'" : "expected ',' or '}'");
        }
      }
      depth++;
      return items;
    }

    const v = value();
    skip_ws();
    if (i !== bytes.length) fail("trailing characters");
    return v;
  }

  // serde_json's Value accessors: what is not of the kind asked for is undefined.
  const get = (v, key) => (v instanceof Map ? v.get(key) : undefined);
  const as_str = (v) => (typeof v === "string" ? v : undefined);
  const as_array = (v) => (Array.isArray(v) ? v : undefined);
  const as_i64 = (v) => (v instanceof JsonNumber && v.int !== null && v.int <= I64_MAX ? v.int : undefined);
  const as_u64 = (v) => (v instanceof JsonNumber && v.int !== null && v.int >= 0n ? v.int : undefined);
  /** Strings in Rust's order (a BTreeMap's: by UTF-8 bytes, i.e. by code point). */
  const by_code_point = (a, b) => {
    const [x, y] = [Array.from(a, (c) => c.codePointAt(0)), Array.from(b, (c) => c.codePointAt(0))];
    for (let k = 0; k < Math.min(x.length, y.length); k++) if (x[k] !== y[k]) return x[k] - y[k];
    return x.length - y.length;
  };

  /** A Value as serde_json's Display writes it (compact; floats as ryu does). */
  function json_text(v) {
    if (v === null) return "null";
    if (typeof v === "boolean") return String(v);
    if (typeof v === "string") {
      const esc = { 0x22: '\\"', 0x5c: "\\\\", 8: "\\b", 12: "\\f", 10: "\\n", 13: "\\r", 9: "\\t" };
      return `"${Array.from(v, (c) => {
        const n = c.codePointAt(0);
        if (esc[n]) return esc[n];
        return n < 0x20 ? `\\u${n.toString(16).padStart(4, "0")}` : c;
      }).join("")}"`;
    }
    if (v instanceof JsonNumber) return v.int !== null ? v.int.toString() : ryu(v.float);
    if (Array.isArray(v)) return `[${v.map(json_text).join(",")}]`;
    const keys = Array.from(v.keys()).sort(by_code_point);
    return `{${keys.map((k) => `${json_text(k)}:${json_text(v.get(k))}`).join(",")}}`;
  }

  /** A finite f64 as the ryu crate's format_finite writes it. */
  function ryu(x) {
    const sign = x < 0 || Object.is(x, -0) ? "-" : "";
    if (x === 0) return `${sign}0.0`;
    const [mantissa, exp] = Math.abs(x).toExponential().split("e");
    const digits = mantissa.replace(".", "");
    const kk = Number(exp) + 1; // where the decimal point goes, counted from the first digit
    const k = kk - digits.length;
    let s;
    if (k >= 0 && kk <= 16) s = `${digits}${"0".repeat(k)}.0`;
    else if (kk > 0 && kk <= 16) s = `${digits.slice(0, kk)}.${digits.slice(kk)}`;
    else if (kk > -5 && kk <= 0) s = `0.${"0".repeat(-kk)}${digits}`;
    else if (digits.length === 1) s = `${digits}e${kk - 1}`;
    else s = `${digits[0]}.${digits.slice(1)}e${kk - 1}`;
    return sign + s;
  }

  /** str::parse::<i64>: an optional sign, then digits only, within i64. */
  function parse_i64(s) {
    if (!/^[+-]?[0-9]+$/.test(s)) return undefined;
    const v = BigInt(s);
    return v >= I64_MIN && v <= I64_MAX ? v : undefined;
  }

  // ---- workbench/src/checkpoint.rs -----------------------------------------------------------
  /** The value of an IEEE half-precision number given as its 16 bits. */
  function half_to_float(h) {
    const sign = h & 0x8000 ? -1 : 1;
    const exponent = (h >> 10) & 0x1f;
    const mantissa = h & 0x3ff;
    if (exponent === 0) return sign * mantissa * 2 ** -24; // subnormal
    if (exponent === 31) return mantissa ? NaN : sign * Infinity;
    return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
  }

  /** CheckedFile::read's first step: the header's length from the first 8 bytes. */
  function header_length(first8, size, shown) {
    const not_ours = `${shown} is not a safetensors checkpoint`;
    if (first8.length < 8) {
      throw refuse(`${not_ours} (it is ${size} bytes, too short for even the header's length)`);
    }
    const n = new DataView(first8.buffer, first8.byteOffset, 8).getBigUint64(0, true);
    const total = BigInt(size);
    if (!(n > 1n && n <= MAX_HEADER && 8n + n <= total)) {
      throw refuse(`${not_ours} (its header claims ${n} bytes, the file has ${total})`);
    }
    return Number(n);
  }

  /** The header's JSON, parsed as serde_json parses it. */
  function read_header(bytes, shown) {
    const n = header_length(bytes.subarray(0, 8), bytes.length, shown);
    try {
      return { header_len: n, header: parse_json(bytes.subarray(8, 8 + n)) };
    } catch (e) {
      throw refuse(`${shown} is not a safetensors checkpoint`, `its header is not JSON (${e.message})`);
    }
  }

  /** The bounds a checkpoint's config must keep (workbench/src/checkpoint.rs BOUNDS). */
  const BOUNDS = [
    ["vocab", 1n << 20n],
    ["d_model", 1n << 14n],
    ["d_ff", 1n << 16n],
    ["num_layers", 256n],
    ["max_len", 1n << 16n],
    ["max_len × d_model", 1n << 26n],
    ["parameter count", 1n << 28n],
  ];

  /** check_bounds: every value BigInt, as Rust's i64 (saturating where Rust is). */
  function check_bounds(c) {
    let area = c.max_len * c.d_model;
    area = area > I64_MAX ? I64_MAX : area < I64_MIN ? I64_MIN : area;
    const values = [c.src_vocab > c.tgt_vocab ? c.src_vocab : c.tgt_vocab, c.d_model, c.d_ff,
      c.num_layers, c.max_len, area];
    const within = ([name, bound], value) => {
      if (value > bound) {
        throw new Error(`its ${name} is ${value}, above the ${bound} any checkpoint of this course can have`);
      }
    };
    values.forEach((value, k) => within(BOUNDS[k], value));
    M.validate(c);
    // The parameter count last, as in Rust: only the bounds above keep its tensor
    // list short, and with them every product and the sum are exact in a double.
    const small = {};
    for (const [k, v] of Object.entries(c)) small[k] = Number(v);
    const count = expected_tensors(small).reduce((sum, [, shape]) => sum + shape.reduce((a, b) => a * b, 1), 0);
    within(BOUNDS[6], BigInt(count));
  }

  function config_from_header(header, shown) {
    const meta = get(header, "__metadata__");
    const m = meta instanceof Map ? meta : undefined;
    const field = (k) => (m ? as_str(m.get(k)) : undefined);
    if (field("format") !== FORMAT) {
      throw refuse(`${shown} is not a checkpoint of this course (its metadata has no transformer-course config)`);
    }
    // The first unknown field in Rust's order (serde_json's Map is a BTreeMap).
    const unknown = Array.from(m.keys()).sort(by_code_point).find((k) => !METADATA_FIELDS.includes(k));
    if (unknown !== undefined) {
      throw refuse(`${shown} is damaged: its metadata has a field '${unknown}' that no version of this course writes`);
    }
    const number = (k) => {
      const v = field(k);
      const n = v === undefined ? undefined : parse_i64(v);
      if (n === undefined) throw refuse(`${shown}: metadata field '${k}' is missing or not a number`);
      return n;
    };
    // Checkpoints from before the rename call d_ff "dff"; as in Rust, a d_ff that
    // is not a number falls back to dff too, and the message names dff.
    let d_ff;
    try {
      d_ff = number("d_ff");
    } catch (_) {
      d_ff = number("dff");
    }
    const init = field("init") ?? "paper";
    if (!["paper", "framework-default", "tch-default"].includes(init)) {
      throw refuse(`${shown}: unknown init '${init}'`);
    }
    const config = {
      src_vocab: number("src_vocab"),
      tgt_vocab: number("tgt_vocab"),
      d_model: number("d_model"),
      num_heads: number("num_heads"),
      d_ff,
      num_layers: number("num_layers"),
      max_len: number("max_len"),
    };
    try {
      check_bounds(config);
    } catch (e) {
      throw refuse(`${shown} cannot be a checkpoint of this course: ${e.message}`);
    }
    // Within the bounds, every field is a small positive whole number.
    const out = { init };
    for (const [k, v] of Object.entries(config)) out[k] = Number(v);
    return out;
  }

  /**
   * expected_tensors: every variable of a model of `c`, by VarStore name, with
   * its shape, sorted by name; known from the config alone, nothing allocated.
   * The model asks load_checkpoint for exactly these (Transformer's `w` below
   * refuses any other name).
   */
  function expected_tensors(c) {
    const [d, ff] = [c.d_model, c.d_ff];
    const out = [];
    const linear = (p, fan_in, fan_out) => {
      out.push([`${p}.weight`, fan_in === null ? [fan_out] : [fan_out, fan_in]]);
      out.push([`${p}.bias`, [fan_out]]);
    };
    const sides = [["encoder", c.src_vocab, ["ln1", "ln2"], ["mha"]],
      ["decoder", c.tgt_vocab, ["ln1", "ln2", "ln3"], ["self_mha", "cross_mha"]]];
    for (const [side, vocab, norms, attentions] of sides) {
      out.push([`${side}.embed.emb.weight`, [vocab, d]]);
      for (let l = 0; l < c.num_layers; l++) {
        const p = `${side}.layers.${l}`;
        for (const ln of norms) linear(`${p}.${ln}`, null, d);
        for (const mha of attentions) {
          for (const w of ["W_q", "W_k", "W_v", "W_o"]) linear(`${p}.${mha}.${w}`, d, d);
        }
        linear(`${p}.ffn.lin1`, d, ff);
        linear(`${p}.ffn.lin2`, ff, d);
      }
      linear(`${side}.ln_final`, null, d);
    }
    linear("out_proj", d, c.tgt_vocab);
    return out.sort((a, b) => by_code_point(a[0], b[0]));
  }

  /**
   * tensor_offsets: the header lists exactly the tensors `config` needs, each of
   * `dtype` with its shape, stored back to back from 0. Returns name → { start, len }.
   */
  function tensor_offsets(header, config, shown, dtype) {
    const { width, word } = DTYPES[dtype];
    const offsets = new Map();
    for (const [name, shape] of expected_tensors(config)) {
      const entry = get(header, name);
      if (entry === undefined) throw refuse(`${shown} has no tensor '${name}'`);
      if (as_str(get(entry, "dtype")) !== dtype) throw refuse(`${shown}: '${name}' is not ${word}`);
      const listed = as_array(get(entry, "shape"));
      // Rust keeps the i64 entries of the list and drops the rest (filter_map).
      const dims = listed && listed.map(as_i64).filter((v) => v !== undefined);
      if (!dims || dims.length !== shape.length || dims.some((v, k) => v !== BigInt(shape[k]))) {
        const claimed = get(entry, "shape");
        throw refuse(`${shown}: '${name}' has shape ${claimed === undefined ? "none" : json_text(claimed)}, ` +
          `the model of its configuration needs [${shape.join(", ")}]`);
      }
      const offsets_of = get(entry, "data_offsets");
      const [start, end] = [as_u64(as_array(offsets_of)?.[0]), as_u64(as_array(offsets_of)?.[1])];
      if (start === undefined || end === undefined) throw refuse(`${shown}: '${name}' has no valid data offsets`);
      const len = BigInt(width * shape.reduce((a, b) => a * b, 1));
      if (end - start !== len) {
        throw refuse(`${shown}: '${name}' claims bytes ${start}..${end}, but its shape holds ${len}`);
      }
      offsets.set(name, { start, len });
    }
    const extra = Array.from(header.keys()).sort(by_code_point)
      .find((k) => k !== "__metadata__" && !offsets.has(k));
    if (extra !== undefined) throw refuse(`${shown} has a tensor '${extra}' that its configuration lacks`);
    // Back to back from 0: no tensor overlaps another or lies past the end.
    const spans = Array.from(offsets.values())
      .sort((a, b) => (a.start !== b.start ? (a.start < b.start ? -1 : 1) : a.len < b.len ? -1 : a.len > b.len ? 1 : 0));
    let at = 0n;
    for (const { start, len } of spans) {
      if (start !== at) throw refuse(`${shown}: its tensors overlap or leave gaps, so it is damaged`);
      at = start + len;
    }
    return offsets;
  }

  /**
   * Everything CheckedFile::read checks before it reads the weights, from the
   * file's first bytes (`head`: the 8-byte length and the header, which
   * header_length has checked) and the file's size. `head` is kept for the
   * file's checksum, which covers it.
   */
  function check_header(head, size, shown, dtype = "F32") {
    const header_len = head.length - 8;
    let header;
    try {
      header = parse_json(head.subarray(8));
    } catch (e) {
      throw refuse(`${shown} is not a safetensors checkpoint`, `its header is not JSON (${e.message})`);
    }
    const config = config_from_header(header, shown);
    const offsets = tensor_offsets(header, config, shown, dtype);
    let expected = 8n + BigInt(header_len);
    for (const { len } of offsets.values()) expected += len;
    if (BigInt(size) !== expected) {
      throw refuse(`${shown} is ${size} bytes, but a checkpoint of its configuration ` +
        `(${M.shape_summary(config)}) is ${expected} bytes: the file is damaged or not one of ours`);
    }
    return { header, config, offsets, head };
  }

  /** FNV-1a's starting state (the FNV-1a 64 offset basis). */
  const FNV_OFFSET = 0xcbf29ce484222325n;

  /**
   * FNV-1a, 64 bits, continued from `state` over `bytes` (workbench/src/checkpoint.rs
   * `checksum`, and `checksum_more` when `state` is given), as a BigInt.
   */
  function fnv1a64(bytes, state = FNV_OFFSET) {
    const s = fnv_state(state);
    fnv_more(bytes, s);
    return fnv_value(s);
  }

  /** A running FNV-1a 64 state: its two 32-bit halves. */
  const fnv_state = (value = FNV_OFFSET) => ({ hi: Number(value >> 32n), lo: Number(value & 0xffffffffn) });
  const fnv_value = (s) => (BigInt(s.hi) << 32n) | BigInt(s.lo);

  /**
   * Continues the states `a` and, when given, `b` over `bytes`, in one pass:
   * the page checks a file's two checksums reading its weights once. The prime
   * is 2^40 + 0x1b3, so h * prime = (h << 40) + h * 0x1b3: the low half's
   * product (under 2^41) is exact in a double, and `>>> 0` takes it mod 2^32.
   */
  function fnv_more(bytes, a, b = null) {
    let [ahi, alo] = [a.hi, a.lo];
    if (b === null) {
      for (let i = 0; i < bytes.length; i++) {
        alo = (alo ^ bytes[i]) >>> 0;
        const p = alo * 0x1b3;
        const low = p >>> 0;
        ahi = (Math.imul(ahi, 0x1b3) + (p - low) / 0x100000000 + (alo << 8)) >>> 0;
        alo = low;
      }
    } else {
      let [bhi, blo] = [b.hi, b.lo];
      for (let i = 0; i < bytes.length; i++) {
        const x = bytes[i];
        alo = (alo ^ x) >>> 0;
        const p = alo * 0x1b3;
        const low = p >>> 0;
        ahi = (Math.imul(ahi, 0x1b3) + (p - low) / 0x100000000 + (alo << 8)) >>> 0;
        alo = low;
        blo = (blo ^ x) >>> 0;
        const q = blo * 0x1b3;
        const qlow = q >>> 0;
        bhi = (Math.imul(bhi, 0x1b3) + (q - qlow) / 0x100000000 + (blo << 8)) >>> 0;
        blo = qlow;
      }
      [b.hi, b.lo] = [bhi, blo];
    }
    [a.hi, a.lo] = [ahi, alo];
  }

  /**
   * file_checksum_digits: where the 16 hex digits of the file checksum start in
   * `bytes` (a whole file, or its length and header), after the one
   * `"file_checksum":"fnv1a64:` of the header; undefined if there is no such
   * text, or more than one. Bytes, not the parsed JSON: the digits are read as
   * zeros where they stand, so an escaped key or a second copy elsewhere in the
   * header cannot stand in for the one the checksum was written into.
   */
  function file_checksum_digits(bytes) {
    if (bytes.length < 8) return undefined;
    const claimed = new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true);
    const n = Number(8n + claimed < BigInt(bytes.length) ? 8n + claimed : BigInt(bytes.length));
    const key = Array.from(`"${FILE_CHECKSUM}":"${CHECKSUM}:`, (c) => c.charCodeAt(0));
    const found = [];
    for (let i = 0; i + key.length <= n && found.length < 2; i++) {
      if (key.every((b, k) => bytes[i + k] === b)) found.push(i + key.length);
    }
    return found.length === 1 && found[0] + 16 <= n ? found[0] : undefined;
  }

  /**
   * What verify_checksums will compare, read from the header before any weight:
   * the stored sums (undefined when absent; a malformed one is refused here, as
   * Rust refuses it before hashing) and `zeroed`, the length and header with the
   * file checksum's digits read as zeros (null when the file carries none or
   * they are misplaced: `misplaced` says which).
   */
  function checksum_plan(header, head, shown) {
    // A field that is not a string is no checksum, as Rust's as_str makes it.
    const stored = (key) => {
      const field = as_str(get(get(header, "__metadata__"), key));
      if (field === undefined) return undefined;
      // strip_prefix(CHECKSUM), strip_prefix(':'), then 16 hex digits in lower
      // case only: "A" for "a" would be a change unseen.
      const rest = field.startsWith(`${CHECKSUM}:`) ? field.slice(CHECKSUM.length + 1) : undefined;
      if (rest === undefined || !/^[0-9a-f]{16}$/.test(rest)) {
        throw refuse(`${shown}: its ${key} '${field}' is not one of ours`);
      }
      return BigInt(`0x${rest}`);
    };
    const data_sum = stored("checksum");
    const file_sum = stored(FILE_CHECKSUM);
    let zeroed = null;
    let misplaced = false;
    if (file_sum !== undefined) {
      const at = file_checksum_digits(head);
      if (at === undefined) {
        misplaced = true;
      } else {
        zeroed = Uint8Array.from(head);
        zeroed.fill(0x30, at, at + 16); // '0'
      }
    }
    return { data_sum, file_sum, zeroed, misplaced };
  }

  /**
   * verify_checksums' verdict, given what the weights hashed to (`data`: the
   * bytes after the header from the start; `file`: the zeroed head and then
   * those bytes, when the plan has a `zeroed`): the weights' checksum, then the
   * whole file's. Returns null (no note: a file carries both, or is refused);
   * throws what Rust refuses.
   */
  function checksum_verdict(plan, data, file, shown) {
    const { data_sum, file_sum } = plan;
    if (data_sum !== undefined && data !== data_sum) {
      throw refuse(`${shown} is damaged: its weights do not match the checksum written with them`);
    }
    if (file_sum !== undefined) {
      if (plan.misplaced) throw refuse(`${shown} is damaged: its file checksum is misplaced`);
      if (file !== file_sum) {
        throw refuse(`${shown} is damaged: its header (config, tensor names, dtypes, shapes or offsets) ` +
          "does not match the checksum written with it");
      }
      return null;
    }
    // As Rust: missing checksums are never read as "an older version", which
    // would switch the checks off for anyone who removed them.
    throw refuse(`${shown} is damaged, or older than the checks this version needs: it has no ` +
      `${FILE_CHECKSUM}${data_sum === undefined ? " and no checksum" : ""}, so a change to its config or ` +
      "its weights could not be found; train it again");
  }

  /**
   * verify_checksums: the weights' checksum, then the whole file's. What each
   * covers is what Rust's covers: `data`, the bytes after the header (the caller
   * passes exactly those), and `head` (length and header, the file checksum's
   * digits read as zeros) followed by `data`. Both are computed in one pass.
   */
  function verify_checksums(header, head, data, shown) {
    const plan = checksum_plan(header, head, shown);
    const a = fnv_state();
    const b = plan.zeroed ? fnv_state(fnv1a64(plan.zeroed)) : null;
    fnv_more(data, a, b);
    return checksum_verdict(plan, fnv_value(a), b && fnv_value(b), shown);
  }

  /**
   * The model from a checked header and the bytes after it (`data`): the
   * checksums, then the values, refused if any is NaN or infinite. Checksums on
   * fp32 checkpoints only: the shipped fp16 weights are another file than the
   * checkpoint they were exported from, and scripts/export_explorer.rs keeps
   * that checkpoint's weights checksum (of its fp32 bytes, which no fp16 file
   * matches) and drops its file checksum. Returns { model, config, metadata,
   * note, values }, `values` each tensor's by name (the page hands them to its
   * worker).
   */
  function build_model(checked, data, shown, dtype = "F32") {
    const { header, config, offsets, head } = checked;
    const note = dtype === "F32" ? verify_checksums(header, head, data, shown) : null;
    const values_of = new Map();
    for (const [name, { start, len }] of offsets) {
      const values = tensor_values(data, Number(start), Number(len), dtype);
      if (!all_finite(values, 0, values.length)) throw not_finite(name, shown);
      values_of.set(name, values);
    }
    return assemble(header, config, values_of, note);
  }

  const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

  /**
   * One tensor's values from the bytes after the header: fp32 on a
   * little-endian machine (every browser's) is read in place, as a view of
   * `data`, not copied value by value; fp16 is converted.
   */
  function tensor_values(data, start, len, dtype) {
    const count = len / DTYPES[dtype].width;
    if (dtype === "F32" && LITTLE_ENDIAN) {
      const at = data.byteOffset + start;
      if (at % 4 === 0) return new Float32Array(data.buffer, at, count);
      const copy = new Float32Array(count);
      new Uint8Array(copy.buffer).set(data.subarray(start, start + len));
      return copy;
    }
    const view = new DataView(data.buffer, data.byteOffset + start, len);
    const values = new Float32Array(count);
    for (let k = 0; k < count; k++) {
      values[k] = dtype === "F32" ? view.getFloat32(4 * k, true) : half_to_float(view.getUint16(2 * k, true));
    }
    return values;
  }

  /** Whether values[from..to] are all finite (x - x is 0 for a number, NaN for NaN and ±∞). */
  function all_finite(values, from, to) {
    for (let k = from; k < to; k++) if (values[k] - values[k] !== 0) return false;
    return true;
  }

  const not_finite = (name, shown) =>
    refuse(`${shown}: '${name}' holds NaN or infinite values; the run that wrote it diverged, so train again`);

  /** The model from checked values: { model, config, metadata, note, values }. */
  function assemble(header, config, values_of, note) {
    const model = new M.Transformer((name, shape) => {
      const v = values_of.get(name);
      // expected_tensors and model.js list the same tensors; this is their test.
      if (!v || v.length !== shape.reduce((a, b) => a * b, 1)) {
        throw new Error(`model.js asks for '${name}' [${shape}], which expected_tensors does not list`);
      }
      return v;
    }, config);
    const metadata = {};
    for (const [k, v] of get(header, "__metadata__")) metadata[k] = v;
    return { model, config, metadata, note, values: values_of };
  }

  /** The page reverses digits: the model must speak the task's vocabulary and length. */
  function ensure_reverse_task(config, shown) {
    if (config.src_vocab !== M.VOCAB || config.tgt_vocab !== M.VOCAB || config.max_len < M.SEQ_LEN) {
      throw refuse(`${shown} was trained for another task: ${M.shape_summary(config)} ` +
        `(this program needs vocab ${M.VOCAB}/${M.VOCAB} and max_len at least ${M.SEQ_LEN})`);
    }
  }

  /**
   * load_checkpoint and ensure_reverse_task on the whole file's bytes: every
   * tensor `dtype` ("F32" for a checkpoint of 09_train_reverse, "F16" for the
   * exported weights.js). Returns { model, config, metadata, note }; throws an
   * Error whose message is Rust's sentence for what is wrong with the file.
   */
  function load_checkpoint(bytes, shown, dtype = "F32") {
    const n = header_length(bytes.subarray(0, 8), bytes.length, shown);
    const checked = check_header(bytes.subarray(0, 8 + n), bytes.length, shown, dtype);
    const loaded = build_model(checked, bytes.subarray(8 + n), shown, dtype);
    ensure_reverse_task(loaded.config, shown);
    return loaded;
  }

  /**
   * The same for a File in the page, reading no more than the checks need: the
   * first 8 bytes, the header, and the weights only once the header and the
   * file's size agree (as CheckedFile::read does).
   */
  async function load_file(file, shown = file.name) {
    const bytes = async (from, to) => new Uint8Array(await file.slice(from, to).arrayBuffer());
    const n = header_length(await bytes(0, 8), file.size, shown);
    const checked = check_header(await bytes(0, 8 + n), file.size, shown, "F32");
    const loaded = build_model(checked, await bytes(8 + n, file.size), shown, "F32");
    ensure_reverse_task(loaded.config, shown);
    return loaded;
  }

  /**
   * load_file for a file of any size, a slice at a time: the same checks in
   * the same order, but the weights are read `slice` bytes at a time, both
   * checksums are taken in the same pass as the reading, and the values are
   * checked for NaN a slice at a time. Between slices it awaits `pause()`,
   * which may throw to cancel the load, and reports `progress(fraction, what)`.
   * The page runs it in its worker, or between keystrokes where it has none.
   */
  async function load_file_in_slices(file, { shown = file.name, progress = () => {}, pause = async () => {},
    slice = 1 << 22 } = {}) {
    const bytes = async (from, to) => new Uint8Array(await file.slice(from, to).arrayBuffer());
    const n = header_length(await bytes(0, 8), file.size, shown);
    const { header, config, offsets, head } = check_header(await bytes(0, 8 + n), file.size, shown, "F32");
    const plan = checksum_plan(header, head, shown);
    const a = fnv_state();
    const b = plan.zeroed ? fnv_state(fnv1a64(plan.zeroed)) : null;
    const size = file.size - 8 - n;
    const data = new Uint8Array(size);
    // Reading and hashing take about nine tenths of the time; the NaN check the rest.
    for (let at = 0; at < size; at += slice) {
      await pause();
      const part = await bytes(8 + n + at, 8 + n + Math.min(size, at + slice));
      data.set(part, at);
      fnv_more(part, a, b);
      progress(0.9 * ((at + part.length) / size), "reading it and checking its checksums");
    }
    const note = checksum_verdict(plan, fnv_value(a), b && fnv_value(b), shown);
    const values_of = new Map();
    let [done, since] = [0, 0];
    for (const [name, { start, len }] of offsets) {
      const values = tensor_values(data, Number(start), Number(len), "F32");
      for (let k = 0; k < values.length; k += slice / 4) {
        const to = Math.min(values.length, k + slice / 4);
        if (!all_finite(values, k, to)) throw not_finite(name, shown);
        done += 4 * (to - k);
        since += 4 * (to - k);
        if (since >= slice) {
          since = 0;
          progress(0.9 + 0.1 * (done / size), "checking its values");
          await pause();
        }
      }
      values_of.set(name, values);
    }
    const loaded = assemble(header, config, values_of, note);
    ensure_reverse_task(config, shown);
    return loaded;
  }

  /** base64 → bytes, in the page and under Node alike. */
  function from_base64(text) {
    const binary = atob(text);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  }

  /** The course's weights shipped with the book (weights.js sets EXPLORER_WEIGHTS). */
  function load_shipped(shipped) {
    const bytes = from_base64(shipped.safetensors_base64);
    return load_checkpoint(bytes, "the course's weights (explorer/weights.js)", "F16");
  }

  const api = {
    FORMAT, BOUNDS, METADATA_FIELDS, JsonNumber, parse_json, json_text, half_to_float, fnv1a64,
    file_checksum_digits, header_length, read_header, config_from_header, expected_tensors, tensor_offsets,
    check_header, verify_checksums, build_model, ensure_reverse_task,
    load_checkpoint, load_file, load_file_in_slices, load_shipped, from_base64,
  };
  // What the page's worker runs: a worker cannot load a script file from a book
  // opened as files, but it can run text it is given (model.js does the same).
  api.source = `"use strict";\n(${explorer_checkpoint})(self);`;
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.explorerCheckpoint = api;
})(typeof globalThis !== "undefined" ? globalThis : this);
