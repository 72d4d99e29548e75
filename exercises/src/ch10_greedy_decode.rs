//! Chapter 10 exercises — scoring, caching and searching.
//! Check with `cargo test --test exercises_ch10`.
use tch::{Kind, Tensor};

use transformer_course::attention::{self, MultiHeadAttention};
use transformer_course::train::teacher_forcing;
use transformer_course::transformer::{make_padding_mask, Transformer};
use transformer_course::vocab::{BOS_ID, EOS_ID, PAD_ID};

/// ★ ex10_sequence_log_prob — how likely does the model find a whole answer?
/// `tokens` = [BOS, t₁, …, tₙ]; return log p(t₁ … tₙ | src) =
/// Σᵢ log p(tᵢ | BOS t₁ … tᵢ₋₁, src), computed in one teacher-forced pass
/// (inference mode). src: [1, Ls] on the model's device.
pub fn sequence_log_prob(
    model: &Transformer,
    src: &Tensor,
    tokens: &[i64],
) -> f64 {
    // ANCHOR: ex10_sequence_log_prob
    // HINT: chapter 08's teacher_forcing splits [1, n+1] tokens into the
    // HINT: decoder input and the labels. Position i of the logits is the
    // HINT: distribution of label i: turn it into log-probabilities, pick the
    // HINT: label's entry at every position, and add them up.
    tch::no_grad(|| {
        let t = Tensor::from_slice(tokens)
            .unsqueeze(0)
            .to_device(src.device());
        let (tgt_in, labels) = teacher_forcing(&t);
        let logits = model.forward(src, &tgt_in, false); // [1, n, V]
        let logp = logits.log_softmax(-1, Kind::Double);
        let picked = logp.gather(2, &labels.unsqueeze(-1), false); // [1, n, 1]
        picked.sum(Kind::Double).double_value(&[])
    })
    // ANCHOR_END: ex10_sequence_log_prob
}

/// Given for ex10_kv_cache: attention of new queries over keys and values that
/// were already projected and split ([B, h, Lk, d_k] each). `x_q` ([B, Lq, d])
/// is projected with `mha.W_q` here; the result goes through `mha.W_o` ([B, Lq,
/// d]). `mask` as in `MultiHeadAttention::forward`.
pub fn attend_projected(
    mha: &MultiHeadAttention,
    x_q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
) -> Tensor {
    let q = mha.project(x_q, &mha.W_q); // [B, h, Lq, d_k]
    let (out, _) = attention::scaled_dot_product(&q, k, v, mask, 0.0, false);
    mha.merge(&out).apply(&mha.W_o)
}

/// Given for ex10_kv_cache: what cached decoding keeps between steps, for one
/// batch of sources.
pub struct KvCache {
    /// The tokens fed so far, [B, t]: the keys of PAD tokens stay hidden.
    pub tokens: Tensor,
    /// Per decoder layer, the self-attention keys and values of those t
    /// tokens, projected and split: [B, h, t, d_k] each. Empty at first.
    pub self_kv: Vec<(Tensor, Tensor)>,
    /// Per decoder layer, the cross-attention keys and values of the memory,
    /// [B, h, Ls, d_k] each: the memory never changes, so they are projected once.
    pub cross_kv: Vec<(Tensor, Tensor)>,
    /// The source's padding mask, [B, 1, 1, Ls].
    pub src_mask: Tensor,
}

impl KvCache {
    /// Encodes `src` ([B, Ls], inference mode) and projects the memory for every
    /// layer's cross-attention; no token fed yet.
    pub fn new(model: &Transformer, src: &Tensor) -> KvCache {
        let (memory, src_mask) = model.encode(src, false);
        let (b, device) = (src.size()[0], src.device());
        let layers = &model.decoder.layers;
        let cross_kv = layers
            .iter()
            .map(|l| {
                let m = &l.cross_mha;
                (m.project(&memory, &m.W_k), m.project(&memory, &m.W_v))
            })
            .collect();
        let self_kv = layers
            .iter()
            .map(|l| {
                let m = &l.self_mha;
                let empty = [b, m.h, 0, m.d_k];
                let opts = (memory.kind(), device);
                (Tensor::zeros(empty, opts), Tensor::zeros(empty, opts))
            })
            .collect();
        KvCache {
            tokens: Tensor::zeros([b, 0], (Kind::Int64, device)),
            self_kv,
            cross_kv,
            src_mask,
        }
    }

    /// t, the number of tokens fed so far.
    pub fn len(&self) -> i64 {
        self.tokens.size()[1]
    }

    /// Whether no token has been fed yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// ★★★ ex10_kv_cache — one step of cached decoding. Feed the decoder only the
/// newest token (`newest`: [B, 1]), at position t = `cache.len()`: every
/// decoder layer appends that token's self-attention key and value to its
/// cache and attends over the cache; nothing about the t earlier tokens is
/// computed again. Returns the logits of the next token, [B, V], in inference
/// mode: the last position of `model.decode` over all t + 1 tokens.
/// `greedy_decode_cached` (below) decodes with it.
pub fn decode_step(
    model: &Transformer,
    cache: &mut KvCache,
    newest: &Tensor,
) -> Tensor {
    // ANCHOR: ex10_kv_cache
    // HINT: DecoderLayer::forward written out for one position. The new
    // HINT: token's embedding is scaled as in TokenAndPosition and gets the
    // HINT: position t. In each layer, its key and value join the cached ones
    // HINT: before it attends (attend_projected helps); the cache holds only
    // HINT: the past, so no causal mask — but greedy_decode's mask also hides
    // HINT: the PAD tokens it emitted itself (an untrained model does), and so
    // HINT: must this. Then the layer's other two steps, and the decoder's end.
    // ANCHOR: kv_step_embed
    let dec = &model.decoder;
    let t = cache.len();
    cache.tokens = Tensor::cat(&[&cache.tokens, newest], 1); // [B, t+1]
    let scale = (model.config.d_model as f64).sqrt();
    let pos = dec
        .embed
        .position_table()
        .narrow(0, t, 1)
        .to_device(newest.device());
    // The new token alone, embedded at position t: [B, 1, d]
    let mut x = newest.apply(&dec.embed.emb) * scale + pos;
    // Hides the PAD among all t + 1 tokens: [B, 1, 1, t+1]
    let pad = make_padding_mask(&cache.tokens);
    // ANCHOR_END: kv_step_embed
    // ANCHOR: kv_step_layers
    for (i, layer) in dec.layers.iter().enumerate() {
        let (m, h) = (&layer.self_mha, x.apply(&layer.ln1));
        let (past_k, past_v) = &cache.self_kv[i];
        // [B, h, t+1, d_k] each
        let k = Tensor::cat(&[past_k, &m.project(&h, &m.W_k)], 2);
        let v = Tensor::cat(&[past_v, &m.project(&h, &m.W_v)], 2);
        x = &x + attend_projected(m, &h, &k, &v, Some(&pad));
        cache.self_kv[i] = (k, v);
        let (ck, cv) = &cache.cross_kv[i];
        let h = x.apply(&layer.ln2);
        x = &x
            + attend_projected(
                &layer.cross_mha,
                &h,
                ck,
                cv,
                Some(&cache.src_mask),
            );
        x = &x + layer.ffn.forward(&x.apply(&layer.ln3));
    }
    // The last (only) position: [B, 1, V] -> [B, V]
    x.apply(&dec.ln_final).apply(&model.out_proj).select(1, 0)
    // ANCHOR_END: kv_step_layers
    // ANCHOR_END: ex10_kv_cache
}

/// Greedy decoding on `decode_step`: the contract of `generate::greedy_decode`,
/// and — when the step is right — exactly its tokens, with one decoder position
/// per step instead of all of them.
pub fn greedy_decode_cached(
    model: &Transformer,
    src: &Tensor,
    max_len: usize,
) -> Tensor {
    tch::no_grad(|| {
        let mut cache = KvCache::new(model, src);
        let (b, device) = (src.size()[0], src.device());
        let mut out = Tensor::full([b, 1], BOS_ID, (Kind::Int64, device));
        let mut finished = Tensor::zeros([b], (Kind::Bool, device));
        for t in 0..max_len as i64 - 1 {
            let logits = decode_step(model, &mut cache, &out.narrow(1, t, 1));
            let next = logits.argmax(-1, false).masked_fill(&finished, PAD_ID);
            out = Tensor::cat(&[out, next.unsqueeze(1)], 1);
            finished = finished.logical_or(&next.eq(EOS_ID));
            if finished.all().int64_value(&[]) != 0 {
                break;
            }
        }
        out
    })
}

/// ★★★ ex10_beam_search — keep the `width` most likely prefixes instead of one.
/// For one source row (src: [1, Ls]): start from [BOS] with log-probability 0;
/// at each step extend every unfinished beam by every token, add the token's
/// log-probability, and keep the `width` best of all candidates and finished
/// beams together. A beam is finished when it ends in EOS or holds `max_len`
/// tokens. Stop when every kept beam is finished; return the best one (tokens
/// from BOS on) and its total log-probability. With width 1 this is exactly
/// greedy decoding.
pub fn beam_search(
    model: &Transformer,
    src: &Tensor,
    width: usize,
    max_len: usize,
) -> (Vec<i64>, f64) {
    // ANCHOR: ex10_beam_search
    // HINT: at this size a Vec of (tokens, log-probability) beams is enough,
    // HINT: with one decoder pass per unfinished beam for the distribution of
    // HINT: its next token (log-probabilities in f64). A finished beam competes
    // HINT: unchanged with the new candidates. f64::total_cmp sorts scores.
    tch::no_grad(|| {
        let (memory, src_mask) = model.encode(src, false);
        let done =
            |t: &Vec<i64>| t.last() == Some(&EOS_ID) || t.len() >= max_len;
        let mut beams: Vec<(Vec<i64>, f64)> = vec![(vec![BOS_ID], 0.0)];
        while !beams.iter().all(|(t, _)| done(t)) {
            let mut candidates = Vec::new();
            for (tokens, score) in beams {
                if done(&tokens) {
                    candidates.push((tokens, score));
                    continue;
                }
                let tgt_in = Tensor::from_slice(&tokens)
                    .unsqueeze(0)
                    .to_device(src.device());
                let logits = model.decode(&tgt_in, &memory, &src_mask, false);
                let last = logits.get(0).get(-1).log_softmax(-1, Kind::Double);
                let logp = Vec::<f64>::try_from(&last).expect("a 1-D tensor");
                for (tok, lp) in logp.into_iter().enumerate() {
                    let mut extended = tokens.clone();
                    extended.push(tok as i64);
                    candidates.push((extended, score + lp));
                }
            }
            candidates.sort_by(|a, b| b.1.total_cmp(&a.1)); // best first
            candidates.truncate(width);
            beams = candidates;
        }
        beams.swap_remove(0)
    })
    // ANCHOR_END: ex10_beam_search
}
