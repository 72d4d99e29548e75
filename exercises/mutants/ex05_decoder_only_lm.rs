// Wrong solutions of ex05_decoder_only_lm.

// MUTANT: causal_only — hides the future but not PAD
        let l = ids.size()[1];
        let mask = transformer_course::transformer::make_causal_mask(l, ids.device());
        let mut x = self.embed.forward(ids, train);
        for block in &self.blocks {
            x = block.forward(&x, &mask, train).0;
        }
        x.apply(&self.ln_final).apply(&self.out_proj)

// MUTANT: padding_only — hides PAD but not the future
        let mask = transformer_course::transformer::make_padding_mask(ids);
        let mut x = self.embed.forward(ids, train);
        for block in &self.blocks {
            x = block.forward(&x, &mask, train).0;
        }
        x.apply(&self.ln_final).apply(&self.out_proj)

// MUTANT: no_ln_final — forgets the final LayerNorm
        let mask = make_target_mask(ids);
        let mut x = self.embed.forward(ids, train);
        for block in &self.blocks {
            x = block.forward(&x, &mask, train).0;
        }
        x.apply(&self.out_proj)

// MUTANT: positions_shuffled_in_training — trains on the position table in a random order, so the model learns which digits the prompt holds but cannot rely on where they stand: it answers with the right digits in the wrong order, while its loss falls
        let mask = make_target_mask(ids);
        let mut x = self.embed.forward(ids, train);
        if train {
            let d = self.embed.emb.ws.size()[1] as f64;
            let tokens = ids.apply(&self.embed.emb) * d.sqrt();
            let positions = &x - &tokens;
            let order = Tensor::randperm(ids.size()[1], (tch::Kind::Int64, ids.device()));
            x = tokens + positions.index_select(1, &order);
        }
        for block in &self.blocks {
            x = block.forward(&x, &mask, train).0;
        }
        x.apply(&self.ln_final).apply(&self.out_proj)

// MUTANT: future_visible_in_training — hides only PAD when training (the full mask at inference): each position can read the token it must predict, so the loss falls fast, yet the model never learns to reverse
        let mask = if train {
            transformer_course::transformer::make_padding_mask(ids)
        } else {
            make_target_mask(ids)
        };
        let mut x = self.embed.forward(ids, train);
        for block in &self.blocks {
            x = block.forward(&x, &mask, train).0;
        }
        x.apply(&self.ln_final).apply(&self.out_proj)

// MUTANT: train_never — passes train = false to the embedding and the blocks: no dropout in training
        let mask = make_target_mask(ids);
        let _ = train;
        let mut x = self.embed.forward(ids, false);
        for block in &self.blocks {
            x = block.forward(&x, &mask, false).0;
        }
        x.apply(&self.ln_final).apply(&self.out_proj)

// MUTANT: train_always — passes train = true whatever it is given: dropout at inference too
        let mask = make_target_mask(ids);
        let _ = train;
        let mut x = self.embed.forward(ids, true);
        for block in &self.blocks {
            x = block.forward(&x, &mask, true).0;
        }
        x.apply(&self.ln_final).apply(&self.out_proj)
