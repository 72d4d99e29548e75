// Wrong solutions of ex10_beam_search: the reference solution with one change each.

// MUTANT: drops_finished — a finished beam is dropped instead of competing with the new candidates
    tch::no_grad(|| {
        let (memory, src_mask) = model.encode(src, false);
        let done =
            |t: &Vec<i64>| t.last() == Some(&EOS_ID) || t.len() >= max_len;
        let mut beams: Vec<(Vec<i64>, f64)> = vec![(vec![BOS_ID], 0.0)];
        while !beams.iter().all(|(t, _)| done(t)) {
            let mut candidates = Vec::new();
            for (tokens, score) in beams {
                if done(&tokens) {
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

// MUTANT: worst_first — sorts the candidates worst first
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
            candidates.sort_by(|a, b| a.1.total_cmp(&b.1)); // best first
            candidates.truncate(width);
            beams = candidates;
        }
        beams.swap_remove(0)
    })

// MUTANT: probabilities — adds probabilities instead of log-probabilities
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
                    candidates.push((extended, score + lp.exp()));
                }
            }
            candidates.sort_by(|a, b| b.1.total_cmp(&a.1)); // best first
            candidates.truncate(width);
            beams = candidates;
        }
        beams.swap_remove(0)
    })

// MUTANT: never_truncated — keeps every candidate: the search is exhaustive and the runs explode
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
            candidates.truncate(width * 13);
            beams = candidates;
        }
        beams.swap_remove(0)
    })

// MUTANT: per_token — ranks the beams by their log-probability per token (length-normalised)
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
            let per_token = |c: &(Vec<i64>, f64)| c.1 / (c.0.len() - 1) as f64;
            candidates.sort_by(|a, b| per_token(b).total_cmp(&per_token(a)));
            candidates.truncate(width);
            beams = candidates;
        }
        beams.swap_remove(0)
    })

// MUTANT: train_mode — decodes each beam with train = true (dropout on) in a search that runs in inference mode
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
                let logits = model.decode(&tgt_in, &memory, &src_mask, true);
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

// MUTANT: rescore_from_scratch — scores every candidate with a decoder pass of its own: right scores, a pass per candidate
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
                let vocab = model.config.tgt_vocab;
                for tok in 0..vocab {
                    let logits = model.decode(&tgt_in, &memory, &src_mask, false);
                    let last = logits.get(0).get(-1).log_softmax(-1, Kind::Double);
                    let mut extended = tokens.clone();
                    extended.push(tok);
                    candidates.push((extended, score + last.double_value(&[tok])));
                }
            }
            candidates.sort_by(|a, b| b.1.total_cmp(&a.1)); // best first
            candidates.truncate(width);
            beams = candidates;
        }
        beams.swap_remove(0)
    })
