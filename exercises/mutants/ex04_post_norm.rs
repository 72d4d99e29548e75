// Wrong solutions of ex04_post_norm.

// MUTANT: pre_norm — normalises before each sublayer, as the course's layer does
        let p = self.dropout;
        let h = x.apply(&self.ln1);
        let (a, _) = self.mha.forward(&h, &h, &h, Some(pad_mask), train);
        let x = x + a.dropout(p, train);
        let f = self.ffn.forward(&x.apply(&self.ln2));
        &x + f.dropout(p, train)

// MUTANT: ffn_reads_input — the FFN reads the layer's input x instead of LN₁(x + a)
        let p = self.dropout;
        let (a, _) = self.mha.forward(x, x, x, Some(pad_mask), train);
        let y = (x + a.dropout(p, train)).apply(&self.ln1);
        let f = self.ffn.forward(x);
        (&y + f.dropout(p, train)).apply(&self.ln2)

// MUTANT: no_ffn_dropout — drops out the attention branch only
        let p = self.dropout;
        let (a, _) = self.mha.forward(x, x, x, Some(pad_mask), train);
        let x = (x + a.dropout(p, train)).apply(&self.ln1);
        let f = self.ffn.forward(&x);
        (&x + f).apply(&self.ln2)

// MUTANT: no_mask — attends to PAD positions too
        let p = self.dropout;
        let (a, _) = self.mha.forward(x, x, x, None, train);
        let x = (x + a.dropout(p, train)).apply(&self.ln1);
        let f = self.ffn.forward(&x);
        (&x + f.dropout(p, train)).apply(&self.ln2)

// MUTANT: ln_swapped — ln2 after the attention, ln1 after the FFN: equal only while both are fresh
        let p = self.dropout;
        let (a, _) = self.mha.forward(x, x, x, Some(pad_mask), train);
        let x = (x + a.dropout(p, train)).apply(&self.ln2);
        let f = self.ffn.forward(&x);
        (&x + f.dropout(p, train)).apply(&self.ln1)

// MUTANT: attention_inference_always — the attention runs with train = false whatever `train` says: its own dropout on the weights never happens
        let p = self.dropout;
        let (a, _) = self.mha.forward(x, x, x, Some(pad_mask), false);
        let x = (x + a.dropout(p, train)).apply(&self.ln1);
        let f = self.ffn.forward(&x);
        (&x + f.dropout(p, train)).apply(&self.ln2)
