// The course's Transformer in plain JavaScript, for the attention explorer
// (explorer.md). It mirrors src/ name for name: vocab.rs, embedding.rs,
// attention.rs, feed_forward.rs, encoder.rs, decoder.rs, transformer.rs and
// generate.rs, at inference (dropout off). tests/explorer_parity.rs runs it under
// Node against the Rust model on the same weights.
//
// One sequence at a time: the batch dimension B of the Rust code is always 1
// here, so a tensor [B, L, d] is a matrix [L, d]. A matrix is
// { rows, cols, data } with data a Float32Array, row by row; every value is
// stored as fp32, like libtorch's, though the sums are formed in doubles.
//
// One thing the Rust model does not have: `off`, the heads switched off. A head
// that is off still computes its attention weights, but its output is zeroed
// before the heads are merged and projected by W_o: exercise ex02_head_ablation's
// definition (exercises/src/ch02_attention.rs). A whole sublayer off is all of its
// heads off, so it adds only W_o's bias to the residual stream.
//
// A classic script, not an ES module, so that the book works when its files are
// opened directly (file://); under Node it is a CommonJS module. Its own source
// (`source`) is what the page's worker runs: a worker cannot load a script file
// from a book opened as files, but it can run text it is given.
"use strict";

(function explorer_model(root) {
  // ---- vocab.rs ----------------------------------------------------------------
  const PAD_ID = 0;
  const BOS_ID = 1;
  const EOS_ID = 2;
  const NUM_OFFSET = 3; // digit d is token d + NUM_OFFSET
  const VOCAB = NUM_OFFSET + 10; // 13
  const MIN_LEN = 3;
  const MAX_LEN = 12;
  const SEQ_LEN = MAX_LEN + 2; // room for BOS and EOS: 14

  function digit_token(d) {
    return d + NUM_OFFSET;
  }

  /** One token as a word: <pad>, <bos>, <eos> or its digit. */
  function token_word(t) {
    if (t === PAD_ID) return "<pad>";
    if (t === BOS_ID) return "<bos>";
    if (t === EOS_ID) return "<eos>";
    return String(t - NUM_OFFSET);
  }

  /** The digits of a token sequence, up to the first EOS. */
  function digits_of(tokens) {
    const digits = [];
    for (const t of tokens) {
      if (t === EOS_ID) break;
      if (t >= NUM_OFFSET) digits.push(t - NUM_OFFSET);
    }
    return digits;
  }

  // ---- data.rs: the source row of encode_pair / source_tensor -----------------
  /** `d₁ … dₙ EOS PAD…`, SEQ_LEN long: what the Rust programs feed the encoder. */
  function source_tensor(digits) {
    const src = new Array(SEQ_LEN).fill(PAD_ID);
    digits.forEach((d, i) => (src[i] = digit_token(d)));
    src[digits.length] = EOS_ID;
    return src;
  }

  // ---- matrices ----------------------------------------------------------------
  function zeros(rows, cols) {
    return { rows, cols, data: new Float32Array(rows * cols) };
  }

  /** A Linear's parameters: weight [out, in] as PyTorch stores it, bias [out]. */
  function linear(w, name, fan_in, fan_out) {
    return {
      weight: w(name + ".weight", [fan_out, fan_in]),
      bias: w(name + ".bias", [fan_out]),
      fan_in,
      fan_out,
    };
  }

  /** x [L, in] → x Wᵀ + b [L, out]: `x.apply(&linear)`. */
  function apply_linear(x, lin) {
    const { weight, bias, fan_in, fan_out } = lin;
    const y = zeros(x.rows, fan_out);
    const xd = x.data, yd = y.data;
    for (let o = 0; o < fan_out; o++) {
      const wo = o * fan_in;
      let i = 0;
      // Four rows at a time share each load of a weight: the page's decode
      // runs 1.7 times as fast as with one row at a time.
      for (; i + 3 < x.rows; i += 4) {
        const x0 = i * fan_in, x1 = x0 + fan_in, x2 = x1 + fan_in, x3 = x2 + fan_in;
        let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (let k = 0; k < fan_in; k++) {
          const w = weight[wo + k];
          s0 += xd[x0 + k] * w;
          s1 += xd[x1 + k] * w;
          s2 += xd[x2 + k] * w;
          s3 += xd[x3 + k] * w;
        }
        yd[i * fan_out + o] = s0 + bias[o];
        yd[(i + 1) * fan_out + o] = s1 + bias[o];
        yd[(i + 2) * fan_out + o] = s2 + bias[o];
        yd[(i + 3) * fan_out + o] = s3 + bias[o];
      }
      for (; i < x.rows; i++) {
        let s = 0;
        for (let k = 0; k < fan_in; k++) s += xd[i * fan_in + k] * weight[wo + k];
        yd[i * fan_out + o] = s + bias[o];
      }
    }
    return y;
  }

  // ---- layers.rs: layer_norm ---------------------------------------------------
  function layer_norm(w, name, d_model) {
    return {
      weight: w(name + ".weight", [d_model]),
      bias: w(name + ".bias", [d_model]),
    };
  }

  /** LayerNorm over the last dimension, eps 1e-5, biased variance. */
  function apply_layer_norm(x, ln) {
    const d = x.cols;
    const y = zeros(x.rows, d);
    for (let i = 0; i < x.rows; i++) {
      const row = x.data.subarray(i * d, (i + 1) * d);
      let mean = 0;
      for (let k = 0; k < d; k++) mean += row[k];
      mean /= d;
      let variance = 0;
      for (let k = 0; k < d; k++) variance += (row[k] - mean) ** 2;
      variance /= d;
      const inv = 1 / Math.sqrt(variance + 1e-5);
      for (let k = 0; k < d; k++) {
        y.data[i * d + k] = (row[k] - mean) * inv * ln.weight[k] + ln.bias[k];
      }
    }
    return y;
  }

  function add(a, b) {
    const y = zeros(a.rows, a.cols);
    for (let i = 0; i < y.data.length; i++) y.data[i] = a.data[i] + b.data[i];
    return y;
  }

  // ---- config.rs -----------------------------------------------------------------
  /**
   * TransformerConfig::validate, check for check and sentence for sentence (the
   * page's loader shows them). Whole numbers or BigInts: the loader checks a
   * file's config as Rust's i64 before anything is built.
   */
  function validate(c) {
    const v = {};
    for (const k of ["src_vocab", "tgt_vocab", "d_model", "num_heads", "d_ff", "num_layers", "max_len"]) {
      if (typeof c[k] !== "bigint" && !Number.isInteger(c[k])) throw new Error(`${k} must be a whole number, got ${c[k]}`);
      v[k] = BigInt(c[k]);
    }
    const [d, h] = [v.d_model, v.num_heads];
    if (!(v.src_vocab > BigInt(PAD_ID + 1) && v.tgt_vocab > BigInt(PAD_ID + 1))) {
      throw new Error("vocabularies need at least PAD and one more token");
    }
    if (!(d > 0n && d % 2n === 0n)) throw new Error(`d_model must be positive and even (sin/cos pairs), got ${d}`);
    if (!(h > 0n)) throw new Error(`num_heads must be positive, got ${h}`);
    if (d % h !== 0n) throw new Error(`d_model (${d}) must be divisible by num_heads (${h})`);
    if (!(v.d_ff > 0n)) throw new Error(`d_ff must be positive, got ${v.d_ff}`);
    if (!(v.num_layers > 0n)) throw new Error(`num_layers must be at least 1, got ${v.num_layers}`);
    if (!(v.max_len > 0n)) throw new Error(`max_len must be positive, got ${v.max_len}`);
  }

  /** "vocab 13/13, d_model 128, …": TransformerConfig::shape_summary. */
  function shape_summary(c) {
    return `vocab ${c.src_vocab}/${c.tgt_vocab}, d_model ${c.d_model}, heads ${c.num_heads}, ` +
      `d_ff ${c.d_ff}, layers ${c.num_layers}, max_len ${c.max_len}`;
  }

  // ---- embedding.rs ----------------------------------------------------------------
  /** The paper's table: even columns sin, odd columns cos. → [max_len, d_model] */
  function sinusoidal_position_encoding(max_len, d_model) {
    const pe = zeros(max_len, d_model);
    for (let pos = 0; pos < max_len; pos++) {
      for (let i = 0; i < d_model; i += 2) {
        const div = Math.fround(Math.exp(i * (-Math.log(10000) / d_model)));
        const angle = Math.fround(pos * div);
        pe.data[pos * d_model + i] = Math.sin(angle);
        pe.data[pos * d_model + i + 1] = Math.cos(angle);
      }
    }
    return pe;
  }

  /** Token embedding × √d_model + position encoding (no dropout at inference). */
  class TokenAndPosition {
    constructor(w, name, vocab_size, cfg) {
      this.emb = w(name + ".emb.weight", [vocab_size, cfg.d_model]);
      this.pe = sinusoidal_position_encoding(cfg.max_len, cfg.d_model);
      this.d_model = cfg.d_model;
    }

    /** ids: [L] → [L, d_model] */
    forward(ids) {
      const d = this.d_model;
      const scale = Math.fround(Math.sqrt(d));
      const x = zeros(ids.length, d);
      ids.forEach((id, pos) => {
        for (let k = 0; k < d; k++) {
          const token = Math.fround(this.emb[id * d + k] * scale);
          x.data[pos * d + k] = token + this.pe.data[pos * d + k];
        }
      });
      return x;
    }
  }

  // ---- attention.rs ----------------------------------------------------------------
  /** What masked scores are filled with: the most negative float32 (dtype_min). */
  const DTYPE_MIN = -3.4028234663852886e38;

  /**
   * softmax(Q Kᵀ / √d_k) V for one head. q: [Lq, d], k and v: [Lk, d], of which
   * head `head` owns columns head·d_k … head·d_k + d_k − 1 (what split's
   * view + transpose selects). `mask(i, j)` is true when query i may not look at
   * key j. Writes the head's output into the same columns of `out` [Lq, d] and
   * returns its weights [Lq, Lk].
   */
  function scaled_dot_product(q, k, v, mask, head, d_k, out) {
    const lq = q.rows, lk = k.rows, d = q.cols;
    const c0 = head * d_k;
    const scale = Math.sqrt(d_k);
    const weights = new Float32Array(lq * lk);
    const scores = new Float64Array(lk);
    for (let i = 0; i < lq; i++) {
      let max = -Infinity;
      for (let j = 0; j < lk; j++) {
        let s = 0;
        for (let c = 0; c < d_k; c++) s += q.data[i * d + c0 + c] * k.data[j * d + c0 + c];
        s = Math.fround(Math.fround(s) / scale);
        if (mask && mask(i, j)) s = DTYPE_MIN;
        scores[j] = s;
        if (s > max) max = s;
      }
      let sum = 0;
      for (let j = 0; j < lk; j++) {
        scores[j] = Math.exp(scores[j] - max);
        sum += scores[j];
      }
      for (let j = 0; j < lk; j++) weights[i * lk + j] = scores[j] / sum; // rows sum to 1
      for (let c = 0; c < d_k; c++) {
        let s = 0;
        for (let j = 0; j < lk; j++) s += weights[i * lk + j] * v.data[j * d + c0 + c];
        out.data[i * d + c0 + c] = s;
      }
    }
    return weights;
  }

  class MultiHeadAttention {
    constructor(w, name, cfg) {
      const d = cfg.d_model;
      this.W_q = linear(w, name + ".W_q", d, d);
      this.W_k = linear(w, name + ".W_k", d, d);
      this.W_v = linear(w, name + ".W_v", d, d);
      this.W_o = linear(w, name + ".W_o", d, d);
      this.h = cfg.num_heads;
      this.d_k = d / cfg.num_heads;
    }

    /**
     * q: [Lq, d], k and v: [Lk, d]; `attn_mask(i, j)` true = masked; `off[i]`
     * true = head i switched off. Returns { out [Lq, d], weights [h, Lq, Lk] }.
     */
    forward(q, k, v, attn_mask, off) {
      const qp = apply_linear(q, this.W_q); // [Lq, d]: head i in its d_k columns
      const kp = apply_linear(k, this.W_k); // [Lk, d]
      const vp = apply_linear(v, this.W_v); // [Lk, d]
      const heads = zeros(q.rows, q.cols); // the merged heads, [Lq, d]
      const weights = new Float32Array(this.h * q.rows * k.rows);
      for (let i = 0; i < this.h; i++) {
        const w = scaled_dot_product(qp, kp, vp, attn_mask, i, this.d_k, heads);
        weights.set(w, i * w.length);
        if (off && off[i]) {
          // ex02_head_ablation: silence the head before the merge and W_o.
          for (let r = 0; r < q.rows; r++) {
            heads.data.fill(0, r * q.cols + i * this.d_k, r * q.cols + (i + 1) * this.d_k);
          }
        }
      }
      return { out: apply_linear(heads, this.W_o), weights };
    }
  }

  // ---- feed_forward.rs -------------------------------------------------------------
  /**
   * erf, which JavaScript's Math lacks: Numerical Recipes' Chebyshev fit of erfc,
   * whose relative error is under 1.2e-7, float32's own precision. (A series
   * exact to 1e-15 made the page's decode ten times slower.)
   */
  function erf(x) {
    const z = Math.abs(x);
    const t = 1 / (1 + 0.5 * z);
    const erfc = t * Math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 +
      t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 +
      t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
    return x >= 0 ? 1 - erfc : erfc - 1;
  }

  /** The exact erf form of GELU, PyTorch's nn.GELU() default ("none"). */
  function gelu(x) {
    return 0.5 * x * (1 + erf(x / Math.SQRT2));
  }

  class FeedForward {
    constructor(w, name, cfg) {
      this.lin1 = linear(w, name + ".lin1", cfg.d_model, cfg.d_ff);
      this.lin2 = linear(w, name + ".lin2", cfg.d_ff, cfg.d_model);
    }

    /** x: [L, d] → [L, d] */
    forward(x) {
      const h = apply_linear(x, this.lin1); // [L, d_ff]
      for (let i = 0; i < h.data.length; i++) h.data[i] = gelu(h.data[i]);
      return apply_linear(h, this.lin2); // [L, d]
    }
  }

  // ---- encoder.rs ----------------------------------------------------------------
  class EncoderLayer {
    constructor(w, name, cfg) {
      this.ln1 = layer_norm(w, name + ".ln1", cfg.d_model);
      this.ln2 = layer_norm(w, name + ".ln2", cfg.d_model);
      this.mha = new MultiHeadAttention(w, name + ".mha", cfg);
      this.ffn = new FeedForward(w, name + ".ffn", cfg);
    }

    /** Pre-Norm: x + Sublayer(LayerNorm(x)). → { x, weights [h, Ls, Ls] } */
    forward(x, pad_mask, off) {
      // 1. self-attention: every position may read every real position
      const h = apply_layer_norm(x, this.ln1);
      const { out: a, weights } = this.mha.forward(h, h, h, pad_mask, off);
      x = add(x, a);
      // 2. feed-forward, position by position
      const f = this.ffn.forward(apply_layer_norm(x, this.ln2));
      return { x: add(x, f), weights };
    }
  }

  class Encoder {
    constructor(w, name, cfg) {
      this.embed = new TokenAndPosition(w, name + ".embed", cfg.src_vocab, cfg);
      this.layers = [];
      for (let i = 0; i < cfg.num_layers; i++) {
        this.layers.push(new EncoderLayer(w, `${name}.layers.${i}`, cfg));
      }
      this.ln_final = layer_norm(w, name + ".ln_final", cfg.d_model);
    }

    /** src: [Ls] → { memory [Ls, d], weights: one [h, Ls, Ls] per layer } */
    forward_with_weights(src, pad_mask, off) {
      let x = this.embed.forward(src);
      const weights = [];
      this.layers.forEach((layer, i) => {
        const y = layer.forward(x, pad_mask, off && off.encoder[i]);
        x = y.x;
        weights.push(y.weights);
      });
      return { memory: apply_layer_norm(x, this.ln_final), weights };
    }
  }

  // ---- decoder.rs ----------------------------------------------------------------
  class DecoderLayer {
    constructor(w, name, cfg) {
      this.ln1 = layer_norm(w, name + ".ln1", cfg.d_model);
      this.ln2 = layer_norm(w, name + ".ln2", cfg.d_model);
      this.ln3 = layer_norm(w, name + ".ln3", cfg.d_model);
      this.self_mha = new MultiHeadAttention(w, name + ".self_mha", cfg);
      this.cross_mha = new MultiHeadAttention(w, name + ".cross_mha", cfg);
      this.ffn = new FeedForward(w, name + ".ffn", cfg);
    }

    /** → { x [Lt, d], self_attn [h, Lt, Lt], cross_attn [h, Lt, Ls] } */
    forward(x, memory, self_mask, cross_mask, off_self, off_cross) {
      // 1. masked self-attention: each position sees itself and what came before
      let h = apply_layer_norm(x, this.ln1);
      const s = this.self_mha.forward(h, h, h, self_mask, off_self);
      x = add(x, s.out);
      // 2. cross-attention: Q from the decoder, K and V from the encoder's memory
      h = apply_layer_norm(x, this.ln2);
      const c = this.cross_mha.forward(h, memory, memory, cross_mask, off_cross);
      x = add(x, c.out);
      // 3. feed-forward
      const f = this.ffn.forward(apply_layer_norm(x, this.ln3));
      return { x: add(x, f), self_attn: s.weights, cross_attn: c.weights };
    }
  }

  class Decoder {
    constructor(w, name, cfg) {
      this.embed = new TokenAndPosition(w, name + ".embed", cfg.tgt_vocab, cfg);
      this.layers = [];
      for (let i = 0; i < cfg.num_layers; i++) {
        this.layers.push(new DecoderLayer(w, `${name}.layers.${i}`, cfg));
      }
      this.ln_final = layer_norm(w, name + ".ln_final", cfg.d_model);
    }

    /** tgt: [Lt] → { x [Lt, d], weights: one { self_attn, cross_attn } per layer } */
    forward_with_weights(tgt, memory, self_mask, cross_mask, off) {
      let x = this.embed.forward(tgt);
      const weights = [];
      this.layers.forEach((layer, i) => {
        const y = layer.forward(x, memory, self_mask, cross_mask,
          off && off.decoder_self[i], off && off.cross[i]);
        x = y.x;
        weights.push({ self_attn: y.self_attn, cross_attn: y.cross_attn });
      });
      return { x: apply_layer_norm(x, this.ln_final), weights };
    }
  }

  // ---- transformer.rs ------------------------------------------------------------
  // A mask is a function (query i, key j) → true when masked.

  /** True where the key is PAD, for every query (the Rust [B, 1, 1, L]). */
  function make_padding_mask(ids) {
    return (i, j) => ids[j] === PAD_ID;
  }

  /** True above the diagonal: query i may not see keys j > i. */
  function make_causal_mask() {
    return (i, j) => j > i;
  }

  /** The decoder's self-attention mask: future *or* PAD. */
  function make_target_mask(tgt_in) {
    const causal = make_causal_mask(tgt_in.length);
    const pad = make_padding_mask(tgt_in);
    return (i, j) => causal(i, j) || pad(i, j);
  }

  class Transformer {
    /**
     * `w(name, shape)` hands over the Float32Array of one parameter, by the name
     * it has in the Rust VarStore ("encoder.layers.0.mha.W_q.weight"); it throws
     * when the weights have no such tensor or another shape.
     */
    constructor(w, config) {
      validate(config);
      this.config = config;
      this.encoder = new Encoder(w, "encoder", config);
      this.decoder = new Decoder(w, "decoder", config);
      this.out_proj = linear(w, "out_proj", config.d_model, config.tgt_vocab);
    }

    /** src: [Ls] → { memory [Ls, d], src_mask, weights } */
    encode(src, off) {
      const src_mask = make_padding_mask(src);
      const { memory, weights } = this.encoder.forward_with_weights(src, src_mask, off);
      return { memory, src_mask, weights };
    }

    /** tgt_in: [Lt] → { logits [Lt, tgt_vocab], weights } */
    decode(tgt_in, memory, src_mask, off) {
      const tgt_mask = make_target_mask(tgt_in);
      const { x, weights } = this.decoder.forward_with_weights(tgt_in, memory, tgt_mask, src_mask, off);
      return { logits: apply_linear(x, this.out_proj), weights };
    }
  }

  /** Every parameter's name and shape for `config`, in the order the model asks for them. */
  function parameter_shapes(config) {
    const shapes = [];
    new Transformer((name, shape) => {
      shapes.push({ name, shape });
      return new Float32Array(shape.reduce((a, b) => a * b, 1));
    }, config);
    return shapes;
  }

  /** No head switched off, for a model of `config`. */
  function all_on(config) {
    const layers = () => Array.from({ length: config.num_layers }, () => new Array(config.num_heads).fill(false));
    return { encoder: layers(), decoder_self: layers(), cross: layers() };
  }

  // ---- generate.rs ---------------------------------------------------------------
  /** Probabilities of one row of logits, in doubles. */
  function softmax(logits) {
    const max = Math.max(...logits);
    const e = Array.from(logits, (v) => Math.exp(v - max));
    const sum = e.reduce((a, b) => a + b, 0);
    return e.map((v) => v / sum);
  }

  /** The first index of the largest value, as torch's argmax. */
  function argmax(values) {
    let best = 0;
    for (let i = 1; i < values.length; i++) if (values[i] > values[best]) best = i;
    return best;
  }

  /**
   * greedy_decode for one source row: the encoder runs once, the decoder once per
   * new token on everything produced so far, until EOS or `max_len` tokens.
   * Returns { tokens: BOS t₁ … EOS, encoder_weights, steps }, one step per decoder
   * call: the decoder input, the last position's logits, the token chosen, and
   * the step's attention weights.
   */
  function greedy_decode(model, src, max_len = SEQ_LEN, off = null) {
    const steps = greedy_steps(model, src, max_len, off);
    for (;;) {
      const { done, value } = steps.next();
      if (done) return value;
    }
  }

  /**
   * greedy_decode one decoder step at a time: yields after the encoder and after
   * each step, and returns what greedy_decode returns. The page runs it between
   * the reader's keystrokes, so that a decode never holds up typing for longer
   * than one step.
   */
  function* greedy_steps(model, src, max_len = SEQ_LEN, off = null) {
    const { memory, src_mask, weights: encoder_weights } = model.encode(src, off);
    const out = [BOS_ID];
    const steps = [];
    yield steps.length;
    for (let s = 0; s < max_len - 1; s++) {
      const { logits, weights } = model.decode(out, memory, src_mask, off); // [t, V]
      const t = out.length;
      const last = logits.data.slice((t - 1) * logits.cols, t * logits.cols);
      const next = argmax(last);
      steps.push({ input: out.slice(), logits: last, next, weights });
      out.push(next);
      if (next === EOS_ID) break;
      yield steps.length;
    }
    return { tokens: out, encoder_weights, steps };
  }

  const api = {
    PAD_ID, BOS_ID, EOS_ID, NUM_OFFSET, VOCAB, MIN_LEN, MAX_LEN, SEQ_LEN,
    digit_token, token_word, digits_of, source_tensor,
    validate, shape_summary, sinusoidal_position_encoding, erf, gelu,
    make_padding_mask, make_causal_mask, make_target_mask,
    Transformer, parameter_shapes, all_on, softmax, argmax, greedy_decode, greedy_steps,
  };
  api.source = `"use strict";\n(${explorer_model})(self);`;
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.explorerModel = api;
})(typeof globalThis !== "undefined" ? globalThis : this);
