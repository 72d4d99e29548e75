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
    // HINT: chapter 09's teacher_forcing splits [1, n+1] tokens into the
    // HINT: decoder input and the labels; log_softmax the logits, gather each
    // HINT: label's entry (gather(2, &labels.unsqueeze(-1), false)) and sum.
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

/// ★★★ ex10_kv_cache — greedy decoding that feeds the decoder only the newest
/// token at each step. Each decoder layer keeps the self-attention keys and
/// values of the tokens seen so far and appends one per step; the
/// cross-attention keys and values come from the memory, which never changes,
/// so they are projected once. Same contract as `generate::greedy_decode` — and
/// it must return exactly its tokens.
pub fn greedy_decode_cached(
    model: &Transformer,
    src: &Tensor,
    max_len: usize,
) -> Tensor {
    // ANCHOR: ex10_kv_cache
    // HINT: the loop of greedy_decode, with the decoder written out as in
    // HINT: DecoderLayer::forward. What never changes (the memory and its
    // HINT: projections) is computed once; each step embeds only the newest
    // HINT: token, at its own position, and each layer's self-attention appends
    // HINT: that token's key and value to the layer's cache before attending
    // HINT: (attend_projected helps). The cache holds only the past, so no
    // HINT: causal mask — but greedy_decode's mask also hides the PAD it emits
    // HINT: itself (an untrained model does).
    tch::no_grad(|| {
        let (memory, src_mask) = model.encode(src, false);
        let dec = &model.decoder;
        let (b, device) = (src.size()[0], src.device());
        let scale = (model.config.d_model as f64).sqrt();
        let cross: Vec<(Tensor, Tensor)> = dec
            .layers
            .iter()
            .map(|l| {
                let m = &l.cross_mha;
                (m.project(&memory, &m.W_k), m.project(&memory, &m.W_v))
            })
            .collect();
        let mut cache: Vec<Option<(Tensor, Tensor)>> =
            dec.layers.iter().map(|_| None).collect();
        let mut out = Tensor::full([b, 1], BOS_ID, (Kind::Int64, device));
        let mut finished = Tensor::zeros([b], (Kind::Bool, device));
        for t in 0..max_len as i64 - 1 {
            let pos =
                dec.embed.position_table().narrow(0, t, 1).to_device(device);
            let newest = out.narrow(1, t, 1); // [B, 1]
            let mut x = newest.apply(&dec.embed.emb) * scale + pos; // [B, 1, d]
            let pad = make_padding_mask(&out); // one entry per cached key
            for (i, layer) in dec.layers.iter().enumerate() {
                let (m, h) = (&layer.self_mha, x.apply(&layer.ln1));
                let (k, v) = (m.project(&h, &m.W_k), m.project(&h, &m.W_v));
                let (k, v) = match cache[i].take() {
                    Some((pk, pv)) => {
                        (Tensor::cat(&[pk, k], 2), Tensor::cat(&[pv, v], 2))
                    }
                    None => (k, v),
                };
                x = &x + attend_projected(m, &h, &k, &v, Some(&pad));
                cache[i] = Some((k, v));
                let (ck, cv) = &cross[i];
                let h = x.apply(&layer.ln2);
                x = &x
                    + attend_projected(
                        &layer.cross_mha,
                        &h,
                        ck,
                        cv,
                        Some(&src_mask),
                    );
                x = &x + layer.ffn.forward(&x.apply(&layer.ln3));
            }
            let x = x.apply(&dec.ln_final);
            let logits = x.apply(&model.out_proj); // [B, 1, V]
            let next = logits
                .select(1, 0)
                .argmax(-1, false)
                .masked_fill(&finished, PAD_ID);
            out = Tensor::cat(&[out, next.unsqueeze(1)], 1);
            finished = finished.logical_or(&next.eq(EOS_ID));
            if finished.all().int64_value(&[]) != 0 {
                break;
            }
        }
        out
    })
    // ANCHOR_END: ex10_kv_cache
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
