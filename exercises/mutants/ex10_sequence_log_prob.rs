// Wrong solutions of ex10_sequence_log_prob.

// MUTANT: labels_not_shifted — scores the decoder input (BOS t₁ …) instead of the labels
    tch::no_grad(|| {
        let t = Tensor::from_slice(tokens).unsqueeze(0).to_device(src.device());
        let (tgt_in, _) = teacher_forcing(&t);
        let logits = model.forward(src, &tgt_in, false);
        let logp = logits.log_softmax(-1, Kind::Double);
        logp.gather(2, &tgt_in.unsqueeze(-1), false).sum(Kind::Double).double_value(&[])
    })

// MUTANT: softmax_over_positions — log_softmax over the positions (dimension 1)
    tch::no_grad(|| {
        let t = Tensor::from_slice(tokens).unsqueeze(0).to_device(src.device());
        let (tgt_in, labels) = teacher_forcing(&t);
        let logits = model.forward(src, &tgt_in, false);
        let logp = logits.log_softmax(1, Kind::Double);
        logp.gather(2, &labels.unsqueeze(-1), false).sum(Kind::Double).double_value(&[])
    })

// MUTANT: last_token_only — only log p(tₙ | t<ₙ), not the whole sum
    tch::no_grad(|| {
        let t = Tensor::from_slice(tokens).unsqueeze(0).to_device(src.device());
        let (tgt_in, labels) = teacher_forcing(&t);
        let logits = model.forward(src, &tgt_in, false);
        let logp = logits.log_softmax(-1, Kind::Double);
        let picked = logp.gather(2, &labels.unsqueeze(-1), false);
        picked.view([-1]).get(-1).double_value(&[])
    })

// MUTANT: train_mode — the teacher-forced pass with train = true (dropout on)
    tch::no_grad(|| {
        let t = Tensor::from_slice(tokens).unsqueeze(0).to_device(src.device());
        let (tgt_in, labels) = teacher_forcing(&t);
        let logits = model.forward(src, &tgt_in, true);
        let logp = logits.log_softmax(-1, Kind::Double);
        logp.gather(2, &labels.unsqueeze(-1), false).sum(Kind::Double).double_value(&[])
    })

// MUTANT: pass_per_prefix — one decoder pass per prefix: the right sum for n times the work
    tch::no_grad(|| {
        let (memory, src_mask) = model.encode(src, false);
        let mut total = 0.0;
        for i in 1..tokens.len() {
            let prefix = Tensor::from_slice(&tokens[..i])
                .unsqueeze(0)
                .to_device(src.device());
            let logits = model.decode(&prefix, &memory, &src_mask, false);
            let logp = logits.get(0).get(-1).log_softmax(-1, Kind::Double);
            total += logp.double_value(&[tokens[i]]);
        }
        total
    })

// MUTANT: prefix_helper_outside — a pass per prefix, its loop in a helper outside the region (which no source reader of the region saw)
    tch::no_grad(|| (1..tokens.len()).map(|i| next_of(model, src, tokens, i)).sum())
// APPEND:
fn next_of(model: &Transformer, src: &Tensor, tokens: &[i64], i: usize) -> f64 {
    let prefix = Tensor::from_slice(&tokens[..i]).unsqueeze(0).to_device(src.device());
    let logits = model.forward(src, &prefix, false);
    let logp = logits.get(0).get(-1).log_softmax(-1, Kind::Double);
    logp.double_value(&[tokens[i]])
}
