// Reading weights in the page: a checkpoint written by `09_train_reverse` (every
// tensor fp32, the config in the safetensors metadata; workbench/src/checkpoint.rs) and the
// course's exported weights (weights.js: the same layout in fp16, as base64). It
// mirrors load_checkpoint, config_from_header and ensure_reverse_task, and refuses
// what they refuse with the same sentences, so that a file of another shape or a
// damaged one gives a message instead of a silently wrong answer.
"use strict";

(function (root) {
  const M = typeof module === "object" && module.exports ? require("./model.js") : root.explorerModel;

  /** What the metadata's "format" field says (workbench/src/checkpoint.rs FORMAT). */
  const FORMAT = "transformer-course/1";
  /** A header longer than this is not one of ours (ours is about 6 KiB). */
  const MAX_HEADER = 1 << 20;
  /** Bytes per value of the dtypes we read. */
  const DTYPE_BYTES = { F32: 4, F16: 2 };

  /** The value of an IEEE half-precision number given as its 16 bits. */
  function half_to_float(h) {
    const sign = h & 0x8000 ? -1 : 1;
    const exponent = (h >> 10) & 0x1f;
    const mantissa = h & 0x3ff;
    if (exponent === 0) return sign * mantissa * 2 ** -24; // subnormal
    if (exponent === 31) return mantissa ? NaN : sign * Infinity;
    return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
  }

  /** The 8-byte length and the JSON header that follows it. */
  function read_header(bytes, shown) {
    const not_ours = `${shown} is not a safetensors checkpoint`;
    if (bytes.length < 8) throw new Error(`${not_ours} (it is only ${bytes.length} bytes long)`);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const n = view.getUint32(0, true) + view.getUint32(4, true) * 2 ** 32;
    if (!(n > 1 && n <= MAX_HEADER)) throw new Error(`${not_ours} (its header length is ${n})`);
    if (8 + n > bytes.length) throw new Error(`${not_ours} (it ends inside its header)`);
    let header;
    try {
      header = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(8, 8 + n)));
    } catch (e) {
      throw new Error(`${not_ours} (its header is not JSON)`);
    }
    if (header === null || typeof header !== "object") throw new Error(`${not_ours} (its header is not a JSON object)`);
    return { header_len: n, header };
  }

  function config_from_header(header, shown) {
    const m = header.__metadata__;
    const field = (k) => (m && typeof m[k] === "string" ? m[k] : undefined);
    if (field("format") !== FORMAT) {
      throw new Error(`${shown} is not a checkpoint of this course (its metadata has no transformer-course config)`);
    }
    const number = (k) => {
      const v = field(k);
      if (v === undefined || !/^-?[0-9]+$/.test(v)) {
        throw new Error(`${shown}: metadata field '${k}' is missing or not a number`);
      }
      return Number(v);
    };
    // Checkpoints from before the rename call d_ff "dff".
    const d_ff = field("d_ff") !== undefined ? number("d_ff") : number("dff");
    const init = field("init") ?? "paper";
    if (!["paper", "framework-default", "tch-default"].includes(init)) {
      throw new Error(`${shown}: unknown init '${init}'`);
    }
    const config = {
      src_vocab: number("src_vocab"),
      tgt_vocab: number("tgt_vocab"),
      d_model: number("d_model"),
      num_heads: number("num_heads"),
      d_ff,
      num_layers: number("num_layers"),
      max_len: number("max_len"),
      init,
    };
    try {
      M.validate(config);
    } catch (e) {
      throw new Error(`${shown}: its configuration is not a valid model (${e.message})`);
    }
    return config;
  }

  /** The page reverses digits: the model must speak the task's vocabulary and length. */
  function ensure_reverse_task(config, shown) {
    if (config.src_vocab !== M.VOCAB || config.tgt_vocab !== M.VOCAB || config.max_len < M.SEQ_LEN) {
      throw new Error(`${shown} was trained for another task: ${M.shape_summary(config)} ` +
        `(this page needs vocab ${M.VOCAB}/${M.VOCAB} and max_len at least ${M.SEQ_LEN})`);
    }
  }

  /**
   * Builds the model from the bytes of a safetensors file of this course: every
   * tensor `dtype` ("F32" for a checkpoint of 09_train_reverse, "F16" for the
   * exported weights.js). Returns { model, config, metadata }; throws an Error
   * whose message names the file and what is wrong with it.
   */
  /**
   * FNV-1a, 64 bits, over the tensor bytes (workbench/src/checkpoint.rs `checksum`), as 16
   * hex digits. The 64-bit state is kept as two 32-bit halves: the prime is
   * 2^40 + 0x1b3, so h * prime = (h << 40) + h * 0x1b3, all exact in doubles.
   */
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

  /** The checksum in the metadata against the bytes, as `verify_checksum` does. */
  function verify_checksum(header, data, shown) {
    const field = header.__metadata__ && header.__metadata__.checksum;
    if (typeof field !== "string") return; // saved before checksums: nothing to check
    const m = /^fnv1a64:([0-9a-f]{16})$/.exec(field);
    if (!m) throw new Error(`${shown}: its checksum '${field}' is not one of ours`);
    if (fnv1a64(data) !== m[1]) {
      throw new Error(`${shown} is damaged: its weights do not match the checksum written with them`);
    }
  }

  function load_checkpoint(bytes, shown, dtype = "F32") {
    const { header_len, header } = read_header(bytes, shown);
    const config = config_from_header(header, shown);
    ensure_reverse_task(config, shown);
    // Refuse a file of the wrong size before reading it all.
    const params = M.parameter_shapes(config).reduce((n, p) => n + p.shape.reduce((a, b) => a * b, 1), 0);
    const width = DTYPE_BYTES[dtype];
    const expected = 8 + header_len + width * params;
    if (bytes.length !== expected) {
      throw new Error(`${shown} is ${bytes.length} bytes, but a checkpoint of its configuration ` +
        `(${M.shape_summary(config)}) is ${expected} bytes: the file is damaged or not one of ours`);
    }
    if (dtype === "F32") verify_checksum(header, bytes.subarray(8 + header_len), shown);
    const data = new DataView(bytes.buffer, bytes.byteOffset + 8 + header_len);
    const tensor = (name, want) => {
      const info = header[name];
      if (!info || !Array.isArray(info.shape) || !Array.isArray(info.data_offsets)) {
        throw new Error(`${shown} has no tensor '${name}'`);
      }
      if (info.shape.length !== want.length || info.shape.some((d, i) => d !== want[i])) {
        throw new Error(`${shown}: '${name}' has shape [${info.shape}], the model needs [${want}]`);
      }
      if (info.dtype !== dtype) throw new Error(`${shown}: '${name}' is ${info.dtype}, not ${dtype}`);
      const count = want.reduce((a, b) => a * b, 1);
      const [start, end] = info.data_offsets;
      if (!(Number.isInteger(start) && end - start === count * width && start >= 0 &&
        8 + header_len + end <= bytes.length)) {
        throw new Error(`${shown}: the data of '${name}' lies outside the file: the file is damaged`);
      }
      const values = new Float32Array(count);
      for (let i = 0; i < count; i++) {
        values[i] = dtype === "F32"
          ? data.getFloat32(start + 4 * i, true)
          : half_to_float(data.getUint16(start + 2 * i, true));
      }
      if (!values.every(Number.isFinite)) {
        throw new Error(`${shown}: '${name}' holds NaN or infinite values; the run that wrote it diverged, so train again`);
      }
      return values;
    };
    const model = new M.Transformer(tensor, config);
    return { model, config, metadata: header.__metadata__ };
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

  const api = { FORMAT, half_to_float, fnv1a64, read_header, config_from_header, ensure_reverse_task, load_checkpoint, load_shipped, from_base64 };
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.explorerCheckpoint = api;
})(typeof globalThis !== "undefined" ? globalThis : this);
