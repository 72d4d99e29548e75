// Wrong solutions of ex10_kv_cache.

// MUTANT: no_pad_mask — the cache attends to every key, PAD included
    let dec = &model.decoder;
    let t = cache.len();
    cache.tokens = Tensor::cat(&[&cache.tokens, newest], 1);
    let scale = (model.config.d_model as f64).sqrt();
    let pos = dec.embed.position_table().narrow(0, t, 1).to_device(newest.device());
    let mut x = newest.apply(&dec.embed.emb) * scale + pos;
    for (i, layer) in dec.layers.iter().enumerate() {
        let (m, h) = (&layer.self_mha, x.apply(&layer.ln1));
        let (past_k, past_v) = &cache.self_kv[i];
        let k = Tensor::cat(&[past_k, &m.project(&h, &m.W_k)], 2);
        let v = Tensor::cat(&[past_v, &m.project(&h, &m.W_v)], 2);
        x = &x + attend_projected(m, &h, &k, &v, None);
        cache.self_kv[i] = (k, v);
        let (ck, cv) = &cache.cross_kv[i];
        let h = x.apply(&layer.ln2);
        x = &x + attend_projected(&layer.cross_mha, &h, ck, cv, Some(&cache.src_mask));
        x = &x + layer.ffn.forward(&x.apply(&layer.ln3));
    }
    x.apply(&dec.ln_final).apply(&model.out_proj).select(1, 0)

// MUTANT: position_zero — every new token gets the position encoding of row 0
    let dec = &model.decoder;
    cache.tokens = Tensor::cat(&[&cache.tokens, newest], 1);
    let scale = (model.config.d_model as f64).sqrt();
    let pos = dec.embed.position_table().narrow(0, 0, 1).to_device(newest.device());
    let mut x = newest.apply(&dec.embed.emb) * scale + pos;
    let pad = make_padding_mask(&cache.tokens);
    for (i, layer) in dec.layers.iter().enumerate() {
        let (m, h) = (&layer.self_mha, x.apply(&layer.ln1));
        let (past_k, past_v) = &cache.self_kv[i];
        let k = Tensor::cat(&[past_k, &m.project(&h, &m.W_k)], 2);
        let v = Tensor::cat(&[past_v, &m.project(&h, &m.W_v)], 2);
        x = &x + attend_projected(m, &h, &k, &v, Some(&pad));
        cache.self_kv[i] = (k, v);
        let (ck, cv) = &cache.cross_kv[i];
        let h = x.apply(&layer.ln2);
        x = &x + attend_projected(&layer.cross_mha, &h, ck, cv, Some(&cache.src_mask));
        x = &x + layer.ffn.forward(&x.apply(&layer.ln3));
    }
    x.apply(&dec.ln_final).apply(&model.out_proj).select(1, 0)

// MUTANT: no_scale — forgets the × √d_model of the token embedding
    let dec = &model.decoder;
    let t = cache.len();
    cache.tokens = Tensor::cat(&[&cache.tokens, newest], 1);
    let pos = dec.embed.position_table().narrow(0, t, 1).to_device(newest.device());
    let mut x = newest.apply(&dec.embed.emb) + pos;
    let pad = make_padding_mask(&cache.tokens);
    for (i, layer) in dec.layers.iter().enumerate() {
        let (m, h) = (&layer.self_mha, x.apply(&layer.ln1));
        let (past_k, past_v) = &cache.self_kv[i];
        let k = Tensor::cat(&[past_k, &m.project(&h, &m.W_k)], 2);
        let v = Tensor::cat(&[past_v, &m.project(&h, &m.W_v)], 2);
        x = &x + attend_projected(m, &h, &k, &v, Some(&pad));
        cache.self_kv[i] = (k, v);
        let (ck, cv) = &cache.cross_kv[i];
        let h = x.apply(&layer.ln2);
        x = &x + attend_projected(&layer.cross_mha, &h, ck, cv, Some(&cache.src_mask));
        x = &x + layer.ffn.forward(&x.apply(&layer.ln3));
    }
    x.apply(&dec.ln_final).apply(&model.out_proj).select(1, 0)

// MUTANT: cache_not_kept — never stores the new keys and values: each step sees only itself
    let dec = &model.decoder;
    let t = cache.len();
    cache.tokens = Tensor::cat(&[&cache.tokens, newest], 1);
    let scale = (model.config.d_model as f64).sqrt();
    let pos = dec.embed.position_table().narrow(0, t, 1).to_device(newest.device());
    let mut x = newest.apply(&dec.embed.emb) * scale + pos;
    let pad = make_padding_mask(&cache.tokens);
    for (i, layer) in dec.layers.iter().enumerate() {
        let (m, h) = (&layer.self_mha, x.apply(&layer.ln1));
        let (past_k, past_v) = &cache.self_kv[i];
        let k = m.project(&h, &m.W_k);
        let v = m.project(&h, &m.W_v);
        let _ = (past_k, past_v);
        x = &x + attend_projected(m, &h, &k, &v, Some(&pad.narrow(3, t, 1)));
        let (ck, cv) = &cache.cross_kv[i];
        let h = x.apply(&layer.ln2);
        x = &x + attend_projected(&layer.cross_mha, &h, ck, cv, Some(&cache.src_mask));
        x = &x + layer.ffn.forward(&x.apply(&layer.ln3));
    }
    x.apply(&dec.ln_final).apply(&model.out_proj).select(1, 0)

// MUTANT: dropout_on — runs the decoder's dropout as in training (train = true)
    let dec = &model.decoder;
    let t = cache.len();
    cache.tokens = Tensor::cat(&[&cache.tokens, newest], 1);
    let scale = (model.config.d_model as f64).sqrt();
    let pos = dec.embed.position_table().narrow(0, t, 1).to_device(newest.device());
    let mut x = newest.apply(&dec.embed.emb) * scale + pos;
    let pad = make_padding_mask(&cache.tokens);
    for (i, layer) in dec.layers.iter().enumerate() {
        let (m, h) = (&layer.self_mha, x.apply(&layer.ln1));
        let (past_k, past_v) = &cache.self_kv[i];
        let k = Tensor::cat(&[past_k, &m.project(&h, &m.W_k)], 2);
        let v = Tensor::cat(&[past_v, &m.project(&h, &m.W_v)], 2);
        x = &x + attend_projected(m, &h, &k, &v, Some(&pad));
        cache.self_kv[i] = (k, v);
        let (ck, cv) = &cache.cross_kv[i];
        let h = x.apply(&layer.ln2);
        x = &x + attend_projected(&layer.cross_mha, &h, ck, cv, Some(&cache.src_mask));
        x = &x + layer.ffn.forward(&x.apply(&layer.ln3)).dropout(model.config.dropout, true);
    }
    x.apply(&dec.ln_final).apply(&model.out_proj).select(1, 0)

// MUTANT: full_recompute — runs the decoder over the whole prefix each step, as greedy_decode does
    let src_mask = &cache.src_mask;
    cache.tokens = Tensor::cat(&[&cache.tokens, newest], 1);
    let dec = &model.decoder;
    let tokens = &cache.tokens;
    let tgt_mask = transformer_course::transformer::make_target_mask(tokens);
    let mut x = dec.embed.forward(tokens, false);
    for (i, layer) in dec.layers.iter().enumerate() {
        let (m, h) = (&layer.self_mha, x.apply(&layer.ln1));
        let (k, v) = (m.project(&h, &m.W_k), m.project(&h, &m.W_v));
        x = &x + attend_projected(m, &h, &k, &v, Some(&tgt_mask));
        cache.self_kv[i] = (k, v);
        let (ck, cv) = &cache.cross_kv[i];
        let h = x.apply(&layer.ln2);
        x = &x + attend_projected(&layer.cross_mha, &h, ck, cv, Some(src_mask));
        x = &x + layer.ffn.forward(&x.apply(&layer.ln3));
    }
    x.apply(&dec.ln_final).apply(&model.out_proj).select(1, -1)

// MUTANT: recompute_then_attend_cache — recomputes every position's keys and values, overwriting the cache
    let t = cache.len();
    cache.tokens = Tensor::cat(&[&cache.tokens, newest], 1);
    let dec = &model.decoder;
    let tokens = &cache.tokens;
    let tgt_mask = transformer_course::transformer::make_target_mask(tokens);
    let mut all = dec.embed.forward(tokens, false); // every position, every step
    for (i, layer) in dec.layers.iter().enumerate() {
        let (m, h) = (&layer.self_mha, all.apply(&layer.ln1));
        let (k, v) = (m.project(&h, &m.W_k), m.project(&h, &m.W_v));
        all = &all + attend_projected(m, &h, &k, &v, Some(&tgt_mask));
        cache.self_kv[i] = (k, v);
        let (ck, cv) = &cache.cross_kv[i];
        let h = all.apply(&layer.ln2);
        all = &all + attend_projected(&layer.cross_mha, &h, ck, cv, Some(&cache.src_mask));
        all = &all + layer.ffn.forward(&all.apply(&layer.ln3));
    }
    all.narrow(1, t, 1).apply(&dec.ln_final).apply(&model.out_proj).select(1, 0)

// MUTANT: reembeds_prefix — embeds all t + 1 tokens again every step and keeps the last row
    let dec = &model.decoder;
    let t = cache.len();
    cache.tokens = Tensor::cat(&[&cache.tokens, newest], 1);
    let scale = (model.config.d_model as f64).sqrt();
    let table = dec
        .embed
        .position_table()
        .narrow(0, 0, t + 1)
        .to_device(newest.device());
    let every = cache.tokens.apply(&dec.embed.emb) * scale + table; // [B, t+1, d]
    let mut x = every.narrow(1, t, 1);
    let pad = make_padding_mask(&cache.tokens);
    for (i, layer) in dec.layers.iter().enumerate() {
        let (m, h) = (&layer.self_mha, x.apply(&layer.ln1));
        let (past_k, past_v) = &cache.self_kv[i];
        let k = Tensor::cat(&[past_k, &m.project(&h, &m.W_k)], 2);
        let v = Tensor::cat(&[past_v, &m.project(&h, &m.W_v)], 2);
        x = &x + attend_projected(m, &h, &k, &v, Some(&pad));
        cache.self_kv[i] = (k, v);
        let (ck, cv) = &cache.cross_kv[i];
        let h = x.apply(&layer.ln2);
        x = &x + attend_projected(&layer.cross_mha, &h, ck, cv, Some(&cache.src_mask));
        x = &x + layer.ffn.forward(&x.apply(&layer.ln3));
    }
    x.apply(&dec.ln_final).apply(&model.out_proj).select(1, 0)

// MUTANT: ln2_for_ffn — normalises the FFN's input with ln2 (the cross-attention's LayerNorm) instead of ln3
    let dec = &model.decoder;
    let t = cache.len();
    cache.tokens = Tensor::cat(&[&cache.tokens, newest], 1);
    let scale = (model.config.d_model as f64).sqrt();
    let pos = dec.embed.position_table().narrow(0, t, 1).to_device(newest.device());
    let mut x = newest.apply(&dec.embed.emb) * scale + pos;
    let pad = make_padding_mask(&cache.tokens);
    for (i, layer) in dec.layers.iter().enumerate() {
        let (m, h) = (&layer.self_mha, x.apply(&layer.ln1));
        let (past_k, past_v) = &cache.self_kv[i];
        let k = Tensor::cat(&[past_k, &m.project(&h, &m.W_k)], 2);
        let v = Tensor::cat(&[past_v, &m.project(&h, &m.W_v)], 2);
        x = &x + attend_projected(m, &h, &k, &v, Some(&pad));
        cache.self_kv[i] = (k, v);
        let (ck, cv) = &cache.cross_kv[i];
        let h = x.apply(&layer.ln2);
        x = &x + attend_projected(&layer.cross_mha, &h, ck, cv, Some(&cache.src_mask));
        x = &x + layer.ffn.forward(&x.apply(&layer.ln2));
    }
    x.apply(&dec.ln_final).apply(&model.out_proj).select(1, 0)
