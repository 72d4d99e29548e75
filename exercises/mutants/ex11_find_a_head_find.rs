// Wrong solutions of ex11_find_a_head_find.

// MUTANT: encoder_only — scores the encoder's layers and never the decoder's
    let (enc_w, _dec_w) = every_weight(model, src, tgt_in);
    let _ = tgt_in;
    let mut best: Option<FoundHead> = None;
    for (layer, w) in enc_w.iter().enumerate() {
        for (head, score) in previous_token_score(w, src).into_iter().enumerate() {
            if best.is_none_or(|b| score > b.score) {
                best = Some(FoundHead { kind: AttentionKind::EncoderSelf, layer, head: head as i64, score });
            }
        }
    }
    best.unwrap()

// MUTANT: last_layer — scores only the last layer of each stack
    let (enc_w, dec_w) = every_weight(model, src, tgt_in);
    let (le, ld) = (enc_w.len() - 1, dec_w.len() - 1);
    let layers = [
        (AttentionKind::EncoderSelf, le, &enc_w[le], src),
        (AttentionKind::DecoderSelf, ld, &dec_w[ld].self_attn, tgt_in),
    ];
    let mut best: Option<FoundHead> = None;
    for (kind, layer, w, tokens) in layers {
        for (head, score) in previous_token_score(w, tokens).into_iter().enumerate() {
            if best.is_none_or(|b| score > b.score) {
                best = Some(FoundHead { kind, layer, head: head as i64, score });
            }
        }
    }
    best.unwrap()

// MUTANT: lowest — keeps the head with the lowest score
    let (enc_w, dec_w) = every_weight(model, src, tgt_in);
    let layers = enc_w
        .iter()
        .enumerate()
        .map(|(l, w)| (AttentionKind::EncoderSelf, l, w, src))
        .chain(dec_w.iter().enumerate().map(|(l, w)| (AttentionKind::DecoderSelf, l, &w.self_attn, tgt_in)));
    let mut best: Option<FoundHead> = None;
    for (kind, layer, w, tokens) in layers {
        for (head, score) in previous_token_score(w, tokens).into_iter().enumerate() {
            if best.is_none_or(|b| score < b.score) {
                best = Some(FoundHead { kind, layer, head: head as i64, score });
            }
        }
    }
    best.unwrap()

// MUTANT: source_tokens — scores the decoder's layers with the source's tokens
    let (enc_w, dec_w) = every_weight(model, src, tgt_in);
    let layers = enc_w
        .iter()
        .enumerate()
        .map(|(l, w)| (AttentionKind::EncoderSelf, l, w))
        .chain(dec_w.iter().enumerate().map(|(l, w)| (AttentionKind::DecoderSelf, l, &w.self_attn)));
    let mut best: Option<FoundHead> = None;
    for (kind, layer, w) in layers {
        for (head, score) in previous_token_score(w, src).into_iter().enumerate() {
            if best.is_none_or(|b| score > b.score) {
                best = Some(FoundHead { kind, layer, head: head as i64, score });
            }
        }
    }
    best.unwrap()

// MUTANT: ties_keep_last — Iterator::max_by, which returns the last of equal scores, not the first met
    let (enc_w, dec_w) = every_weight(model, src, tgt_in);
    let layers = enc_w
        .iter()
        .enumerate()
        .map(|(l, w)| (AttentionKind::EncoderSelf, l, w, src))
        .chain(dec_w.iter().enumerate().map(|(l, w)| (AttentionKind::DecoderSelf, l, &w.self_attn, tgt_in)));
    layers
        .flat_map(|(kind, layer, w, tokens)| {
            previous_token_score(w, tokens)
                .into_iter()
                .enumerate()
                .map(move |(head, score)| FoundHead { kind, layer, head: head as i64, score })
        })
        .max_by(|a, b| a.score.total_cmp(&b.score))
        .expect("a model with at least one self-attention layer")

// MUTANT: cross_too — scores the decoder's cross-attention heads as well as the self-attention ones
    let (enc_w, dec_w) = every_weight(model, src, tgt_in);
    let layers = enc_w
        .iter()
        .enumerate()
        .map(|(l, w)| (AttentionKind::EncoderSelf, l, w, src))
        .chain(dec_w.iter().enumerate().map(|(l, w)| (AttentionKind::DecoderSelf, l, &w.self_attn, tgt_in)))
        .chain(dec_w.iter().enumerate().map(|(l, w)| (AttentionKind::Cross, l, &w.cross_attn, tgt_in)));
    let mut best: Option<FoundHead> = None;
    for (kind, layer, w, tokens) in layers {
        for (head, score) in previous_token_score(w, tokens).into_iter().enumerate() {
            if best.is_none_or(|b| score > b.score) {
                best = Some(FoundHead { kind, layer, head: head as i64, score });
            }
        }
    }
    best.expect("a model with at least one self-attention layer")

// MUTANT: pass_per_side — a helper that runs every_weight once for the encoder's heads and once more for the decoder's: the right head, in two inference passes instead of one
    let mut best: Option<FoundHead> = None;
    for kind in [AttentionKind::EncoderSelf, AttentionKind::DecoderSelf] {
        for (layer, w, tokens) in weights_of(model, src, tgt_in, kind) {
            for (head, score) in previous_token_score(&w, tokens).into_iter().enumerate() {
                if best.is_none_or(|b| score > b.score) {
                    best = Some(FoundHead { kind, layer, head: head as i64, score });
                }
            }
        }
    }
    best.expect("a model with at least one self-attention layer")
// APPEND:
fn weights_of<'a>(
    model: &Transformer,
    src: &'a Tensor,
    tgt_in: &'a Tensor,
    kind: AttentionKind,
) -> Vec<(usize, Tensor, &'a Tensor)> {
    let (enc_w, dec_w) = every_weight(model, src, tgt_in);
    match kind {
        AttentionKind::EncoderSelf => {
            enc_w.into_iter().enumerate().map(|(l, w)| (l, w, src)).collect()
        }
        _ => dec_w
            .into_iter()
            .enumerate()
            .map(|(l, w)| (l, w.self_attn, tgt_in))
            .collect(),
    }
}
