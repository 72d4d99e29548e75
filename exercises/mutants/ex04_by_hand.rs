// Wrong solutions of ex04_by_hand.

// MUTANT: no_ln_final — forgets the final LayerNorm
    let mask = make_padding_mask(src);
    let mut x = enc.embed.forward(src, false);
    for layer in &enc.layers {
        x = layer.forward(&x, &mask, false).0;
    }
    x

// MUTANT: train_mode — runs the layers with train = true: dropout is on
    let mask = make_padding_mask(src);
    let mut x = enc.embed.forward(src, true);
    for layer in &enc.layers {
        x = layer.forward(&x, &mask, true).0;
    }
    x.apply(&enc.ln_final)

// MUTANT: first_layer_only — returns after the first layer
    let mask = make_padding_mask(src);
    let x = enc.embed.forward(src, false);
    enc.layers[0].forward(&x, &mask, false).0.apply(&enc.ln_final)

// MUTANT: library_forward — calls Encoder::forward: right numbers, exercise not done
    enc.forward(src, &make_padding_mask(src), false)

// MUTANT: type_alias — Encoder::forward through a type alias declared outside the region
    Enc::forward(enc, src, &make_padding_mask(src), false)
// APPEND:
type Enc = Encoder;
