//! Chapter 10 exercises — scoring, caching and searching. Check with
//! `cargo test --test exercises_ch10`.
use tch::{Kind, Tensor};

use crate::attention::{dtype_min, MultiHeadAttention};
use crate::data::{BOS_ID, EOS_ID, PAD_ID};
use crate::train::teacher_forcing;
use crate::transformer::{make_padding_mask, Transformer};

/// ★ ex10_sequence_log_prob — how likely does the model find a whole answer?
/// `tokens` = [BOS, t₁, …, tₙ]; return log p(t₁ … tₙ | src) = Σᵢ log p(tᵢ | BOS t₁ … tᵢ₋₁, src),
/// computed in one teacher-forced pass (inference mode). src: [1, Ls] on the model's device.
pub fn sequence_log_prob(model: &Transformer, src: &Tensor, tokens: &[i64]) -> f64 {
    // ANCHOR: ex10_sequence_log_prob
    // HINT: chapter 09's teacher_forcing splits [1, n+1] tokens into the decoder input and the labels;
    // HINT: log_softmax the logits, gather each label's entry (gather(2, &labels.unsqueeze(-1), false)) and sum.
    tch::no_grad(|| {
        let t = Tensor::from_slice(tokens).unsqueeze(0).to_device(src.device());
        let (tgt_in, labels) = teacher_forcing(&t);
        let logits = model.forward(src, &tgt_in, false); // [1, n, V]
        logits.log_softmax(-1, Kind::Double).gather(2, &labels.unsqueeze(-1), false).sum(Kind::Double).double_value(&[])
    })
    // ANCHOR_END: ex10_sequence_log_prob
}

/// Given for ex10_kv_cache: attention of new queries over keys and values that were
/// already projected and split ([B, h, Lk, d_k] each). `x_q` ([B, Lq, d]) is projected
/// with `mha.W_q` here; the result goes through `mha.W_o` ([B, Lq, d]). `mask` as in
/// `MultiHeadAttention::forward`.
pub fn attend_projected(mha: &MultiHeadAttention, x_q: &Tensor, k: &Tensor, v: &Tensor, mask: Option<&Tensor>) -> Tensor {
    let q = mha.split(&x_q.apply(&mha.W_q));
    let mut scores = q.matmul(&k.transpose(-2, -1)) / (mha.d_k as f64).sqrt();
    if let Some(m) = mask {
        scores = scores.masked_fill(m, dtype_min(scores.kind()));
    }
    mha.merge(&scores.softmax(-1, scores.kind()).matmul(v)).apply(&mha.W_o)
}

/// ★★★ ex10_kv_cache — greedy decoding that feeds the decoder only the newest token at
/// each step. Each decoder layer keeps the self-attention keys and values of the tokens
/// seen so far and appends one per step; the cross-attention keys and values come from the
/// memory, which never changes, so they are projected once. Same contract as
/// `decode::greedy_decode` — and it must return exactly its tokens.
pub fn greedy_decode_cached(model: &Transformer, src: &Tensor, max_len: usize) -> Tensor {
    // ANCHOR: ex10_kv_cache
    // HINT: step t embeds only token t: dec.embed.emb on out.narrow(1, t, 1), × √d_model, + position_table() row t.
    // HINT: per layer: h = ln1(x); append split(W_k h), split(W_v h) to that layer's cache along dimension 2;
    // HINT: x += attend_projected(self_mha, h, cache_k, cache_v, Some(&make_padding_mask(&out))) — no causal mask, the
    // HINT: cache holds only the past; but greedy_decode hides PAD tokens in its own output, and an untrained model emits some.
    // HINT: then x += attend_projected(cross_mha, ln2(x), K_mem, V_mem, Some(&src_mask)); x += ffn(ln3(x)).
    // HINT: finished rows, EOS and PAD as in greedy_decode.
    tch::no_grad(|| {
        let (memory, src_mask) = model.encode(src, false);
        let dec = &model.decoder;
        let (b, device) = (src.size()[0], src.device());
        let cross: Vec<(Tensor, Tensor)> = dec
            .layers
            .iter()
            .map(|l| (l.cross_mha.split(&memory.apply(&l.cross_mha.W_k)), l.cross_mha.split(&memory.apply(&l.cross_mha.W_v))))
            .collect();
        let mut cache: Vec<Option<(Tensor, Tensor)>> = dec.layers.iter().map(|_| None).collect();
        let mut out = Tensor::full([b, 1], BOS_ID, (Kind::Int64, device));
        let mut finished = Tensor::zeros([b], (Kind::Bool, device));
        for t in 0..max_len as i64 - 1 {
            let pos = dec.embed.position_table().narrow(0, t, 1).to_device(device);
            let mut x = out.narrow(1, t, 1).apply(&dec.embed.emb) * (model.config.d_model as f64).sqrt() + pos; // [B, 1, d]
            let pad = make_padding_mask(&out); // [B, 1, 1, t+1]: the keys in the caches after this step
            for (i, layer) in dec.layers.iter().enumerate() {
                let (m, h) = (&layer.self_mha, x.apply(&layer.ln1));
                let (k, v) = (m.split(&h.apply(&m.W_k)), m.split(&h.apply(&m.W_v)));
                let (k, v) = match cache[i].take() {
                    Some((pk, pv)) => (Tensor::cat(&[pk, k], 2), Tensor::cat(&[pv, v], 2)),
                    None => (k, v),
                };
                x = &x + attend_projected(m, &h, &k, &v, Some(&pad));
                cache[i] = Some((k, v));
                x = &x + attend_projected(&layer.cross_mha, &x.apply(&layer.ln2), &cross[i].0, &cross[i].1, Some(&src_mask));
                x = &x + layer.ffn.forward(&x.apply(&layer.ln3), false);
            }
            let next = x.apply(&dec.ln_final).apply(&model.out_proj).select(1, 0).argmax(-1, false); // [B]
            let next = next.masked_fill(&finished, PAD_ID);
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

/// ★★★ ex10_beam_search — keep the `width` most likely prefixes instead of one. For one
/// source row (src: [1, Ls]): start from [BOS] with log-probability 0; at each step
/// extend every unfinished beam by every token, add the token's log-probability, and
/// keep the `width` best of all candidates and finished beams together. A beam is
/// finished when it ends in EOS or holds `max_len` tokens. Stop when every kept beam is
/// finished; return the best one (tokens from BOS on) and its total log-probability.
/// With width 1 this is exactly greedy decoding.
pub fn beam_search(model: &Transformer, src: &Tensor, width: usize, max_len: usize) -> (Vec<i64>, f64) {
    // ANCHOR: ex10_beam_search
    // HINT: a Vec<(Vec<i64>, f64)> of beams is enough at this size; run model.decode on one beam at a time
    // HINT: and log_softmax (in Kind::Double) the last position's logits.
    // HINT: sort candidates with b.1.total_cmp(&a.1) (best first) and truncate to width.
    tch::no_grad(|| {
        let (memory, src_mask) = model.encode(src, false);
        let done = |t: &Vec<i64>| t.last() == Some(&EOS_ID) || t.len() >= max_len;
        let mut beams: Vec<(Vec<i64>, f64)> = vec![(vec![BOS_ID], 0.0)];
        while !beams.iter().all(|(t, _)| done(t)) {
            let mut candidates = Vec::new();
            for (tokens, score) in beams {
                if done(&tokens) {
                    candidates.push((tokens, score));
                    continue;
                }
                let tgt_in = Tensor::from_slice(&tokens).unsqueeze(0).to_device(src.device());
                let (logits, _) = model.decode(&tgt_in, &memory, &src_mask, false);
                let logp = Vec::<f64>::try_from(&logits.get(0).get(-1).log_softmax(-1, Kind::Double)).expect("a 1-D tensor");
                for (tok, lp) in logp.into_iter().enumerate() {
                    let mut extended = tokens.clone();
                    extended.push(tok as i64);
                    candidates.push((extended, score + lp));
                }
            }
            candidates.sort_by(|a, b| b.1.total_cmp(&a.1));
            candidates.truncate(width);
            beams = candidates;
        }
        beams.swap_remove(0)
    })
    // ANCHOR_END: ex10_beam_search
}
