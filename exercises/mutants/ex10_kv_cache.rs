// Wrong solutions of ex10_kv_cache: the reference solution with one change each.

// MUTANT: no_pad_mask — the cache attends to every key, PAD included
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
            let pad = make_padding_mask(&out); // [B, 1, 1, t+1]: the cached keys
            for (i, layer) in dec.layers.iter().enumerate() {
                let (m, h) = (&layer.self_mha, x.apply(&layer.ln1));
                let (k, v) = (m.project(&h, &m.W_k), m.project(&h, &m.W_v));
                let (k, v) = match cache[i].take() {
                    Some((pk, pv)) => {
                        (Tensor::cat(&[pk, k], 2), Tensor::cat(&[pv, v], 2))
                    }
                    None => (k, v),
                };
                x = &x + attend_projected(m, &h, &k, &v, None);
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
            let logits = x.apply(&dec.ln_final).apply(&model.out_proj); // [B, 1, V]
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

// MUTANT: position_zero — every new token gets the position encoding of row 0
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
                dec.embed.position_table().narrow(0, 0, 1).to_device(device);
            let newest = out.narrow(1, t, 1); // [B, 1]
            let mut x = newest.apply(&dec.embed.emb) * scale + pos; // [B, 1, d]
            let pad = make_padding_mask(&out); // [B, 1, 1, t+1]: the cached keys
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
            let logits = x.apply(&dec.ln_final).apply(&model.out_proj); // [B, 1, V]
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

// MUTANT: no_scale — forgets the × √d_model of the token embedding
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
            let mut x = newest.apply(&dec.embed.emb) + pos; // [B, 1, d]
            let pad = make_padding_mask(&out); // [B, 1, 1, t+1]: the cached keys
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
            let logits = x.apply(&dec.ln_final).apply(&model.out_proj); // [B, 1, V]
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

// MUTANT: no_pad_after_eos — finished rows keep emitting tokens instead of PAD
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
            let pad = make_padding_mask(&out); // [B, 1, 1, t+1]: the cached keys
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
            let logits = x.apply(&dec.ln_final).apply(&model.out_proj); // [B, 1, V]
            let next = logits
                .select(1, 0)
                .argmax(-1, false)
                ;
            out = Tensor::cat(&[out, next.unsqueeze(1)], 1);
            finished = finished.logical_or(&next.eq(EOS_ID));
            if finished.all().int64_value(&[]) != 0 {
                break;
            }
        }
        out
    })

// MUTANT: cache_not_kept — never stores the new keys and values: each step sees only itself
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
            let pad = make_padding_mask(&out); // [B, 1, 1, t+1]: the cached keys
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
                let _ = (&k, &v);
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
            let logits = x.apply(&dec.ln_final).apply(&model.out_proj); // [B, 1, V]
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
