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
