// Wrong solutions of ex07_encoder_lookahead.

// MUTANT: shallow_clone — alters a shallow_clone of src: the caller's tensor changes
    tch::no_grad(|| {
        let ls = src.size()[1];
        let changed = src.shallow_clone();
        let _ = changed.narrow(1, k, ls - k).fill_(altered);
        let (a, _) = model.encode(src, false);
        let (b, _) = model.encode(&changed, false);
        let per_position = (a - b).abs().amax([0i64, 2].as_slice(), false);
        Vec::<f64>::try_from(&per_position.to_kind(Kind::Double)).expect("a 1-D tensor")
    })

// MUTANT: encode_before_copy_in_place — encodes src first, then alters src itself
    tch::no_grad(|| {
        let ls = src.size()[1];
        let (a, _) = model.encode(src, false);
        let _ = src.narrow(1, k, ls - k).fill_(altered);
        let (b, _) = model.encode(src, false);
        let per_position = (a - b).abs().amax([0i64, 2].as_slice(), false);
        Vec::<f64>::try_from(&per_position.to_kind(Kind::Double)).expect("a 1-D tensor")
    })

// MUTANT: off_by_one — alters the tokens from k + 1 on
    tch::no_grad(|| {
        let ls = src.size()[1];
        let changed = src.copy();
        let _ = changed.narrow(1, k + 1, ls - k - 1).fill_(altered);
        let (a, _) = model.encode(src, false);
        let (b, _) = model.encode(&changed, false);
        let per_position = (a - b).abs().amax([0i64, 2].as_slice(), false);
        Vec::<f64>::try_from(&per_position.to_kind(Kind::Double)).expect("a 1-D tensor")
    })

// MUTANT: mean_not_max — the mean |Δ| of each row instead of the largest
    tch::no_grad(|| {
        let ls = src.size()[1];
        let changed = src.copy();
        let _ = changed.narrow(1, k, ls - k).fill_(altered);
        let (a, _) = model.encode(src, false);
        let (b, _) = model.encode(&changed, false);
        let per_position = (a - b).abs().mean_dim([0i64, 2].as_slice(), false, Kind::Float);
        Vec::<f64>::try_from(&per_position.to_kind(Kind::Double)).expect("a 1-D tensor")
    })

// MUTANT: train_mode — encodes with train = true: dropout makes every number random
    tch::no_grad(|| {
        let ls = src.size()[1];
        let changed = src.copy();
        let _ = changed.narrow(1, k, ls - k).fill_(altered);
        let (a, _) = model.encode(src, true);
        let (b, _) = model.encode(&changed, true);
        let per_position = (a - b).abs().amax([0i64, 2].as_slice(), false);
        Vec::<f64>::try_from(&per_position.to_kind(Kind::Double)).expect("a 1-D tensor")
    })

// MUTANT: src_mask_reused — one padding mask, the source's, for both encodings: the altered copy's PAD is not its own
    tch::no_grad(|| {
        let ls = src.size()[1];
        let changed = src.copy();
        let _ = changed.narrow(1, k, ls - k).fill_(altered);
        let (a, mask) = model.encode(src, false);
        let b = model.encoder.forward(&changed, &mask, false);
        let per_position = (a - b).abs().amax([0i64, 2].as_slice(), false);
        Vec::<f64>::try_from(&per_position.to_kind(Kind::Double)).expect("a 1-D tensor")
    })
