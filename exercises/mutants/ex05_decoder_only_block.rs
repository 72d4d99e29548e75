// Wrong solutions of ex05_decoder_only_block.

// MUTANT: ln1_twice — the FFN reads LN₁ instead of LN₂
        let p = self.dropout;
        let h = x.apply(&self.ln1);
        let (a, w) = self.self_mha.forward(&h, &h, &h, Some(self_mask), train);
        let x = x + a.dropout(p, train);
        let f = self.ffn.forward(&x.apply(&self.ln1));
        (&x + f.dropout(p, train), w)

// MUTANT: no_mask — self-attention without the mask: sees the future
        let p = self.dropout;
        let h = x.apply(&self.ln1);
        let (a, w) = self.self_mha.forward(&h, &h, &h, None, train);
        let x = x + a.dropout(p, train);
        let f = self.ffn.forward(&x.apply(&self.ln2));
        (&x + f.dropout(p, train), w)

// MUTANT: no_dropout — never drops out
        let h = x.apply(&self.ln1);
        let (a, w) = self.self_mha.forward(&h, &h, &h, Some(self_mask), train);
        let x = x + a;
        let f = self.ffn.forward(&x.apply(&self.ln2));
        (&x + f, w)

// MUTANT: own_causal_mask — builds its own causal mask and ignores the one it is given
        let p = self.dropout;
        let l = x.size()[1];
        let causal = transformer_course::transformer::make_causal_mask(l, x.device());
        let h = x.apply(&self.ln1);
        let (a, w) = self.self_mha.forward(&h, &h, &h, Some(&causal), train);
        let x = x + a.dropout(p, train);
        let f = self.ffn.forward(&x.apply(&self.ln2));
        (&x + f.dropout(p, train), w)

// MUTANT: first_row_mask — uses the mask of the batch's first row for every row
        let p = self.dropout;
        let m = self_mask.narrow(0, 0, 1);
        let h = x.apply(&self.ln1);
        let (a, w) = self.self_mha.forward(&h, &h, &h, Some(&m), train);
        let x = x + a.dropout(p, train);
        let f = self.ffn.forward(&x.apply(&self.ln2));
        (&x + f.dropout(p, train), w)

// MUTANT: always_dropout — drops out the sublayer outputs whatever `train` says
        let p = self.dropout;
        let h = x.apply(&self.ln1);
        let (a, w) = self.self_mha.forward(&h, &h, &h, Some(self_mask), train);
        let x = x + a.dropout(p, true);
        let f = self.ffn.forward(&x.apply(&self.ln2));
        (&x + f.dropout(p, true), w)

// MUTANT: attention_always_training — self_mha runs in training mode whatever `train` says
        let p = self.dropout;
        let h = x.apply(&self.ln1);
        let (a, w) = self.self_mha.forward(&h, &h, &h, Some(self_mask), true);
        let x = x + a.dropout(p, train);
        let f = self.ffn.forward(&x.apply(&self.ln2));
        (&x + f.dropout(p, train), w)

// MUTANT: post_norm — normalises after each residual addition (Post-Norm)
        let p = self.dropout;
        let (a, w) = self.self_mha.forward(x, x, x, Some(self_mask), train);
        let x = (x + a.dropout(p, train)).apply(&self.ln1);
        let f = self.ffn.forward(&x);
        ((&x + f.dropout(p, train)).apply(&self.ln2), w)
