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
